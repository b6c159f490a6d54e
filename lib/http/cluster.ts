// The process model operators know from Apache's prefork MPM and PHP-FPM: with WEB_CONCURRENCY=N
// a primary prepares the database once, listens on the port and hands each connection it accepts
// to one of N workers in turn; it replaces a worker that dies, stops gracefully on SIGTERM,
// replaces the workers one after another on SIGUSR2 (a rolling reload) and has every worker
// reopen its logs on SIGHUP. The primary owns the port, so a connection it took is always handed
// to a worker that answers it (docs/operations.md, Processes and signals).
import cluster, { type Worker } from 'node:cluster';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import type { Config } from '../config.ts';
import { Logs } from '../log/index.ts';
import type { Served } from './server.ts';
import { createHttpServer, drain, stopAccepting } from './server.ts';

/** How long requests in flight may take to finish after SIGTERM before their connections are cut. */
const graceMs = 10_000;
/**
 * How long the port stays open after SIGTERM: connections that were on their way when the signal
 * came (in the kernel's queue, which closing the port resets) are taken and answered.
 */
const drainMs = 100;
// Connections held by the primary while no worker is ready (all starting or replaced at once).
const maxWaiting = 1000;

interface Stoppable {
  reopenLogs: () => void;
  logError: (message: string, level?: 'error' | 'warn') => void;
  /** Closes the database pool and the logs. */
  close: () => Promise<void>;
}

/** The messages between the primary and a worker. */
type Message =
  | { portfolio: 'ready' } | { portfolio: 'connection' } | { portfolio: 'took' } | { portfolio: 'stop' }
  // A worker asks the primary a question (the metrics of all workers); the primary answers.
  | { portfolio: 'ask'; id: number; question: string }
  | { portfolio: 'answer'; id: number; value?: unknown; error?: string }
  // The primary collects something from each ready worker (its metrics) to answer a question.
  | { portfolio: 'collect'; id: number }
  | { portfolio: 'collected'; id: number; value?: unknown };

/** The primary's answer to a question; gather() brings what each ready worker's collector returns. */
export type Answer = (gather: () => Promise<unknown[]>) => Promise<unknown>;

const askTimeoutMs = 5000;
// A worker that does not answer a collect in this time is left out (busy, or stopping).
const collectTimeoutMs = 2000;

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
      resolve: (value) => { clearTimeout(timer); resolve(value); },
      reject: (err) => { clearTimeout(timer); reject(err); },
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
    where = process.env.PORTFOLIO_ADDRESS ?? '';
    takeConnections(server, app);
  } else {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(config.port, config.host, resolve);
    });
    where = addressOf(server);
    writePidFile(config.pidFile);
    handleSignals(app, (onClosed) => stopAccepting(server, onClosed), server, drainMs);
    // One process has no workers to replace: a reload is a restart (docs/operations.md).
    process.on('SIGUSR2', () => app.logError('SIGUSR2 ignored: a rolling reload needs WEB_CONCURRENCY of 2 or more; restart instead', 'warn'));
  }
  const who = cluster.isWorker ? `worker ${process.pid} ` : '';
  console.log(`portfolio: ${who}listening on ${where}/ (${database}, display_errors ${config.displayErrors ? 'on' : 'off'})`);
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
    server.emit('connection', socket);
    socket.resume();
  });
  handleSignals(app, (done) => {
    stopping = true;
    onClosed = done;
    drain(server);
    closedAll();
  }, server, 0);
  process.send?.({ portfolio: 'ready' } satisfies Message);
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
function handleSignals(app: Stoppable, stopTaking: (onClosed: () => void) => void, server: http.Server, delay: number): void {
  process.on('SIGHUP', () => app.reopenLogs());
  const stop = () => {
    if (stopSignalled) return;
    stopSignalled = true;
    // Every connection ends after its next answer (Connection: close) or its keep-alive time-out.
    setTimeout(() => stopTaking(() => void app.close().finally(() => process.exit(0))), delay);
    setTimeout(() => server.closeAllConnections(), graceMs).unref();
    setTimeout(() => process.exit(0), graceMs + 5000).unref();
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

/** Whether this process is the primary that forks workers instead of serving itself. */
export function runsWorkers(config: Config): boolean {
  return config.webConcurrency > 1 && cluster.isPrimary;
}

/**
 * The primary: prepare (migrations) once, listen, fork the workers and hand them the
 * connections in turn, keep them running until SIGTERM. answers are what a worker may ask.
 */
export async function runPrimary(config: Config, prepare: () => Promise<void>, answers: Record<string, Answer> = {}): Promise<void> {
  const logs = new Logs({ error: config.errorLog });
  const logError = (message: string, level: 'error' | 'notice' = 'error') => logs.error(message, { level });
  await prepare();
  // Paused: the bytes a client sends are read by the worker that gets the connection.
  const listener = net.createServer({ pauseOnConnect: true });
  await new Promise<void>((resolve, reject) => {
    listener.once('error', reject);
    listener.listen(config.port, config.host, resolve);
  });
  const address = addressOf(listener);
  writePidFile(config.pidFile);

  let stopping = false;
  const ready: Worker[] = [];
  const waiting: net.Socket[] = [];
  let turn = 0;
  const handOff = (socket: net.Socket) => {
    const worker = ready[turn++ % Math.max(1, ready.length)];
    if (!worker) {
      if (waiting.length < maxWaiting) waiting.push(socket);
      else socket.destroy();
      return;
    }
    // The primary keeps its copy until the worker says it took the connection (in order, as
    // they were sent), and closes the copies a worker that died did not take: the client gets a
    // reset instead of a connection left hanging in CLOSE-WAIT.
    const queue = handing.get(worker) ?? [];
    handing.set(worker, queue);
    queue.push(socket);
    worker.send({ portfolio: 'connection' } satisfies Message, socket, { keepOpen: true }, (err) => {
      if (err) socket.destroy();
    });
  };
  // Connections handed to each worker and not yet taken, oldest first.
  const handing = new Map<Worker, net.Socket[]>();
  listener.on('connection', handOff);

  // Workers told to stop by a reload: they finish their requests and are not replaced.
  const retiring = new Set<Worker>();
  // Workers a reload started that have not said they are ready.
  const arriving = new Map<Worker, (isReady: boolean) => void>();
  const fork = () => cluster.fork({ PORTFOLIO_ADDRESS: address });
  const collects = new Map<number, { values: unknown[]; missing: Set<Worker>; done: () => void }>();
  let nextCollect = 0;
  const gather = () => new Promise<unknown[]>((resolve) => {
    const id = nextCollect++;
    const missing = new Set(ready.filter((worker) => worker.isConnected()));
    const values: unknown[] = [];
    const done = () => {
      clearTimeout(timer);
      collects.delete(id);
      resolve(values);
    };
    const timer = setTimeout(done, collectTimeoutMs);
    collects.set(id, { values, missing, done });
    for (const worker of missing) worker.send({ portfolio: 'collect', id } satisfies Message);
    if (missing.size === 0) done();
  });

  cluster.on('message', (worker, message: Message) => {
    if (message?.portfolio === 'took') {
      handing.get(worker)?.shift()?.destroy();
    } else if (message?.portfolio === 'ready') {
      arriving.get(worker)?.(true);
      if (stopping) return;
      ready.push(worker);
      for (const socket of waiting.splice(0)) handOff(socket);
    } else if (message?.portfolio === 'collected') {
      const collect = collects.get(message.id);
      if (!collect?.missing.delete(worker)) return;
      collect.values.push(message.value);
      if (collect.missing.size === 0) collect.done();
    } else if (message?.portfolio === 'ask') {
      const { id, question } = message;
      const answer = answers[question];
      const reply = (result: { value?: unknown; error?: string }) => {
        if (worker.isConnected()) worker.send({ portfolio: 'answer', id, ...result } satisfies Message);
      };
      if (!answer) reply({ error: `no answer to "${question}"` });
      else answer(gather).then((value) => reply({ value }), (err: Error) => reply({ error: err.message }));
    }
  });
  cluster.on('exit', (worker, code, signal) => {
    for (const socket of handing.get(worker) ?? []) socket.destroy();
    handing.delete(worker);
    const at = ready.indexOf(worker);
    const wasServing = at !== -1;
    if (wasServing) ready.splice(at, 1);
    for (const collect of collects.values()) if (collect.missing.delete(worker) && collect.missing.size === 0) collect.done();
    if (stopping) {
      if (Object.keys(cluster.workers ?? {}).length === 0) void logs.close().finally(() => process.exit());
      return;
    }
    if (retiring.delete(worker)) return;
    const how = signal ? `signal ${signal}` : `exit code ${code}`;
    const arrival = arriving.get(worker);
    if (arrival) return arrival(false);
    if (!wasServing) {
      // A worker that cannot even start (bad rules file, database gone) would fail again at once.
      logError(`worker ${worker.process.pid} failed to start (${how}); stopping the server, see the message above`);
      stop();
      process.exitCode = 1;
      return;
    }
    const next = fork();
    logError(`worker ${worker.process.pid} died (${how}); started worker ${next.process.pid} in its place`);
  });

  /** Tells a worker to finish its requests and exit; it gets no new connections from now on. */
  const retire = (worker: Worker) => {
    const at = ready.indexOf(worker);
    if (at !== -1) ready.splice(at, 1);
    retiring.add(worker);
    if (worker.isConnected()) worker.send({ portfolio: 'stop' } satisfies Message);
    else worker.process.kill('SIGTERM');
    setTimeout(() => {
      if (retiring.has(worker)) worker.process.kill('SIGKILL');
    }, graceMs + 5000).unref();
  };

  let reloading = false;
  /**
   * SIGUSR2: each worker in turn is replaced by a new one, which serves before the old one stops
   * taking connections; the old one finishes its requests meanwhile. A new worker that cannot
   * start ends the reload and the running ones keep serving.
   */
  const reload = async () => {
    if (reloading || stopping) return;
    reloading = true;
    const old = [...ready];
    logError(`reloading: replacing ${old.length} workers one after another`, 'notice');
    for (const worker of old) {
      if (stopping) break;
      const next = fork();
      const isReady = await new Promise<boolean>((resolve) => arriving.set(next, resolve));
      arriving.delete(next);
      if (!isReady) {
        logError(`reload stopped: worker ${next.process.pid} failed to start; the running workers go on serving`);
        break;
      }
      if (stopping) break;
      retire(worker);
    }
    if (!stopping) logError(`reloaded: workers ${ready.map((w) => w.process.pid).join(', ')} serve`, 'notice');
    reloading = false;
  };

  const stop = () => {
    if (stopping) return;
    stopping = true;
    for (const resolve of arriving.values()) resolve(false);
    setTimeout(closeDown, drainMs);
    setTimeout(() => {
      for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill('SIGKILL');
      logError(`workers still running ${graceMs + 5000} ms after SIGTERM were killed`);
    }, graceMs + 5000).unref();
  };
  // The port closes first: what comes later is refused, what came is handed on and answered.
  const closeDown = () => {
    listener.close();
    for (const socket of waiting.splice(0)) handOff(socket);
    const workers = Object.values(cluster.workers ?? {}).filter((w): w is Worker => w !== undefined);
    if (workers.length === 0) void logs.close().finally(() => process.exit());
    // After the connections handed on (the channel keeps its order), each worker finishes its
    // requests and closes its pool.
    for (const worker of workers) {
      if (worker.isConnected()) worker.send({ portfolio: 'stop' } satisfies Message);
      else worker.process.kill('SIGTERM');
    }
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  process.on('SIGUSR2', () => void reload());
  process.on('SIGHUP', () => {
    logs.reopen();
    for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill('SIGHUP');
  });

  for (let i = 0; i < config.webConcurrency; i++) fork();
  console.log(`portfolio: primary ${process.pid} runs ${config.webConcurrency} workers on ${address}/`);
}

/** Writes this process's pid to file, removed again at exit if it still names this process. */
function writePidFile(file: string | null): void {
  if (!file) return;
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o750 });
  writeFileSync(file, `${process.pid}\n`, { mode: 0o644 });
  process.once('exit', () => {
    try {
      if (readFileSync(file, 'utf8').trim() === String(process.pid)) rmSync(file);
    } catch {
      // gone already
    }
  });
}

function addressOf(server: net.Server): string {
  const address = server.address();
  if (typeof address !== 'object' || !address) return String(address);
  return `http://${address.address.includes(':') ? `[${address.address}]` : address.address}:${address.port}`;
}
