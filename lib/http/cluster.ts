// The process model operators know from Apache's prefork MPM and PHP-FPM: with WEB_CONCURRENCY=N
// a primary prepares the database once, listens on the port and hands each connection it accepts
// to one of N workers in turn; it replaces a worker that dies, stops gracefully on SIGTERM and
// has every worker reopen its logs on SIGHUP. The primary owns the port, so a connection it took
// is always handed to a worker that answers it (docs/operations.md, Processes and signals).
import cluster, { type Worker } from 'node:cluster';
import type http from 'node:http';
import net from 'node:net';
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
  /** Closes the database pool and the logs. */
  close: () => Promise<void>;
}

/** The messages between the primary and a worker. */
type Message = { portfolio: 'ready' } | { portfolio: 'connection' } | { portfolio: 'stop' };

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
    handleSignals(app, (onClosed) => stopAccepting(server, onClosed), server, drainMs);
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
    if (message?.portfolio !== 'connection' || !socket) return;
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

/**
 * SIGTERM and SIGINT stop taking connections, let requests in flight finish (at most graceMs),
 * close the app and exit 0; SIGHUP reopens the logs.
 */
function handleSignals(app: Stoppable, stopTaking: (onClosed: () => void) => void, server: http.Server, delay: number): void {
  process.on('SIGHUP', () => app.reopenLogs());
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
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
 * connections in turn, keep them running until SIGTERM.
 */
export async function runPrimary(config: Config, prepare: () => Promise<void>): Promise<void> {
  const logs = new Logs({ error: config.errorLog });
  const logError = (message: string) => logs.error(message);
  await prepare();
  // Paused: the bytes a client sends are read by the worker that gets the connection.
  const listener = net.createServer({ pauseOnConnect: true });
  await new Promise<void>((resolve, reject) => {
    listener.once('error', reject);
    listener.listen(config.port, config.host, resolve);
  });
  const address = addressOf(listener);

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
    // The primary's copy is closed once sent; a worker that died meanwhile leaves the client a reset, not a hang.
    worker.send({ portfolio: 'connection' } satisfies Message, socket, { keepOpen: false }, (err) => {
      if (err) socket.destroy();
    });
  };
  listener.on('connection', handOff);

  const fork = () => cluster.fork({ PORTFOLIO_ADDRESS: address });
  cluster.on('message', (worker, message: Message) => {
    if (message?.portfolio !== 'ready' || stopping) return;
    ready.push(worker);
    for (const socket of waiting.splice(0)) handOff(socket);
  });
  cluster.on('exit', (worker, code, signal) => {
    const at = ready.indexOf(worker);
    const wasServing = at !== -1;
    if (wasServing) ready.splice(at, 1);
    if (stopping) {
      if (Object.keys(cluster.workers ?? {}).length === 0) void logs.close().finally(() => process.exit());
      return;
    }
    const how = signal ? `signal ${signal}` : `exit code ${code}`;
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

  const stop = () => {
    if (stopping) return;
    stopping = true;
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
  process.on('SIGHUP', () => {
    logs.reopen();
    for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill('SIGHUP');
  });

  for (let i = 0; i < config.webConcurrency; i++) fork();
  console.log(`portfolio: primary ${process.pid} runs ${config.webConcurrency} workers on ${address}/`);
}

function addressOf(server: net.Server): string {
  const address = server.address();
  if (typeof address !== 'object' || !address) return String(address);
  return `http://${address.address.includes(':') ? `[${address.address}]` : address.address}:${address.port}`;
}
