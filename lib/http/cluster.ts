// A serving process, the one of WEB_CONCURRENCY=1 or a worker of the primary (primary.ts): the
// process model operators know from Apache's prefork MPM and PHP-FPM. It serves until SIGTERM,
// then finishes its requests; SIGHUP reopens its logs. A worker takes its connections from the
// primary, answers the primary's collects (its metrics) and may ask it a question (every
// worker's metrics). docs/operations.md, Processes and signals.
import cluster from 'node:cluster';
import type http from 'node:http';
import type net from 'node:net';
import type { Config } from '../config.ts';
import type { Message } from './process-model.ts';
import { addressOf, drainMs, graceMs, writePidFile } from './process-model.ts';
import type { Served } from './server.ts';
import { createHttpServer, drain, stopAccepting } from './server.ts';

interface Stoppable {
  /** Resolves once the process has read what it keeps in memory (the search index); it serves before. */
  complete: Promise<void>;
  reopenLogs: () => void;
  logError: (message: string, level?: 'error' | 'warn') => void;
  /** Closes the database pool and the logs. */
  close: () => Promise<void>;
}

const askTimeoutMs = 5000;

// A worker's side of questions and collects.
let collector: (() => Promise<unknown>) | null = null;
const questions = new Map<number, { resolve: (value: unknown) => void; reject: (err: Error) => void }>();
let nextQuestion = 0;
let hearing = false;

function hearPrimary(): void {
  if (hearing) return;
  hearing = true;
  process.on('message', (message: Message) => {
    if (message?.portfolio === 'answer') {
      const question = questions.get(message.id);
      questions.delete(message.id);
      if (message.error !== undefined) question?.reject(new Error(message.error));
      else question?.resolve(message.value);
    } else if (message?.portfolio === 'collect') {
      const id = message.id;
      const reply = (value: unknown) => process.send?.({ portfolio: 'collected', id, value } satisfies Message);
      (collector ? collector() : Promise.resolve(undefined)).then(reply, () => reply(undefined));
    }
  });
}

/** In a worker: what this process gives when the primary collects (its metrics). */
export function onCollect(collect: () => Promise<unknown>): void {
  collector = collect;
  hearPrimary();
}

/** In a worker: the primary's answer to question (the runPrimary answers), or an error after 5 s. */
export function askPrimary(question: string): Promise<unknown> {
  hearPrimary();
  const id = nextQuestion++;
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      questions.delete(id);
      reject(new Error(`the primary did not answer "${question}" within ${askTimeoutMs} ms`));
    }, askTimeoutMs);
    questions.set(id, {
      resolve: (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      reject: (err) => {
        clearTimeout(timer);
        reject(err);
      },
    });
    process.send?.({ portfolio: 'ask', id, question } satisfies Message);
  });
}

/**
 * One serving process: the hardened server, wired to the signals, and the line that says where
 * it listens (what the tests and operators wait for). A worker takes its connections from the
 * primary instead of listening itself.
 */
export async function listen(app: Served & Stoppable, config: Config, database: string): Promise<http.Server> {
  const server = createHttpServer(app);
  let where: string;
  if (cluster.isWorker) {
    // The primary opens the port once a worker serves, and then says where.
    const told = new Promise<string>((resolve) => {
      const onMessage = (message: Message) => {
        if (message?.portfolio !== 'address') return;
        process.off('message', onMessage);
        resolve(message.address);
      };
      process.on('message', onMessage);
    });
    takeConnections(server, app);
    where = await told;
  } else {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(config.port, config.host, resolve);
    });
    where = addressOf(server);
    writePidFile(config);
    handleSignals(app, (onClosed) => stopAccepting(server, onClosed), server, drainMs);
    // One process has no workers to replace: a reload is a restart (docs/operations.md).
    process.on('SIGUSR2', () =>
      app.logError('SIGUSR2 ignored: a rolling reload needs WEB_CONCURRENCY of 2 or more; restart instead', 'warn'),
    );
    // It keeps the search index itself: searches are 503 until it says this.
    void app.complete.then(() => console.log('portfolio: the search index is read; searches are answered'));
  }
  const who = cluster.isWorker ? `worker ${process.pid} ` : '';
  console.log(
    `portfolio: ${who}listening on ${where}/ (${database}, display_errors ${config.displayErrors ? 'on' : 'off'})`,
  );
  return server;
}

/** A worker: serves the connections the primary hands over, and stops when it is told to. */
function takeConnections(server: http.Server, app: Stoppable): void {
  const open = new Set<net.Socket>();
  let stopping = false;
  let onClosed: (() => void) | null = null;
  const closedAll = () => {
    if (stopping && open.size === 0) onClosed?.();
  };
  // Node starts checking the time-outs of a server's connections when it starts listening.
  server.emit('listening');
  process.on('message', (message: Message, socket?: net.Socket) => {
    if (message?.portfolio === 'stop') process.emit('SIGTERM');
    if (message?.portfolio !== 'connection') return;
    // The primary closes its copy now (and every copy not taken if this process dies).
    process.send?.({ portfolio: 'took' } satisfies Message);
    if (!socket) return;
    open.add(socket);
    socket.once('close', () => {
      open.delete(socket);
      closedAll();
    });
    // As http.Server does for a connection it accepts itself (its noDelay, on by default): without
    // it Nagle's algorithm may hold an answer back until the client acknowledges what came before,
    // the tail of cluster mode (docs/performance.md, Tail latency).
    socket.setNoDelay(true);
    server.emit('connection', socket);
    socket.resume();
  });
  handleSignals(
    app,
    (done) => {
      stopping = true;
      onClosed = done;
      drain(server);
      closedAll();
    },
    server,
    0,
  );
  // The primary's signal: sent to the whole group (systemctl kill, pkill), it must not end a worker.
  process.on('SIGUSR2', () => undefined);
  process.send?.({ portfolio: 'ready' } satisfies Message);
  void app.complete.then(() => process.send?.({ portfolio: 'complete' } satisfies Message));
}

// Set once this serving process has been told to stop (SIGTERM, or the primary's stop).
let stopSignalled = false;

/** Whether this serving process is stopping: /readyz says so, so that load balancers move on. */
export function isStopping(): boolean {
  return stopSignalled;
}

/**
 * SIGTERM and SIGINT stop taking connections, let requests in flight finish (at most graceMs),
 * close the app and exit 0; SIGHUP reopens the logs.
 */
function handleSignals(
  app: Stoppable,
  stopTaking: (onClosed: () => void) => void,
  server: http.Server,
  delay: number,
): void {
  process.on('SIGHUP', () => app.reopenLogs());
  const stop = () => {
    if (stopSignalled) return;
    stopSignalled = true;
    // Every connection ends after its next answer (Connection: close) or its keep-alive time-out.
    setTimeout(
      () =>
        stopTaking(
          () =>
            void farewell()
              .then(() => app.close())
              .finally(() => process.exit(0)),
        ),
      delay,
    );
    setTimeout(() => server.closeAllConnections(), graceMs).unref();
    setTimeout(() => process.exit(0), graceMs + 5000).unref();
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

/** A worker's last collect, once its requests are done, so that the primary keeps its counts. */
async function farewell(): Promise<void> {
  if (!cluster.isWorker || !collector || !process.connected) return;
  const collect = collector;
  try {
    const value = await Promise.race([collect(), new Promise((resolve) => setTimeout(resolve, 1000))]);
    await new Promise<void>((resolve) =>
      process.send?.({ portfolio: 'final', value } satisfies Message, () => resolve()),
    );
  } catch {
    // The primary is gone: nobody to keep the counts.
  }
}

/** Whether this process is the primary that forks workers instead of serving itself. */
export function runsWorkers(config: Config): boolean {
  return config.webConcurrency > 1 && cluster.isPrimary;
}
