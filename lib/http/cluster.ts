// The process model operators know from Apache's prefork MPM and PHP-FPM: with WEB_CONCURRENCY=N
// a primary prepares the database once, forks N workers sharing the port (node:cluster), replaces
// a worker that dies, stops gracefully on SIGTERM and has every worker reopen its logs on SIGHUP.
import cluster, { type Worker } from 'node:cluster';
import type http from 'node:http';
import type { Config } from '../config.ts';
import { Logs } from '../log/index.ts';
import type { Served } from './server.ts';
import { createHttpServer, stopAccepting } from './server.ts';

/** How long requests in flight may take to finish after SIGTERM before their connections are cut. */
const graceMs = 10_000;

interface Stoppable {
  reopenLogs: () => void;
  /** Closes the database pool and the logs. */
  close: () => Promise<void>;
}

/**
 * One serving process: the hardened server on PORT and HOST, wired to the signals, and the line
 * that says where it listens (what the tests and operators wait for).
 */
export async function listen(app: Served & Stoppable, config: Config, database: string): Promise<http.Server> {
  const server = createHttpServer(app);
  handleSignals(server, app);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.host, resolve);
  });
  const address = server.address();
  const where = typeof address === 'object' && address ? `http://${address.address.includes(':') ? `[${address.address}]` : address.address}:${address.port}` : String(address);
  const who = cluster.isWorker ? `worker ${process.pid} ` : '';
  console.log(`portfolio: ${who}listening on ${where}/ (${database}, display_errors ${config.displayErrors ? 'on' : 'off'})`);
  return server;
}

/**
 * Wires a listening server to the signals: SIGTERM and SIGINT stop accepting, let requests in
 * flight finish (at most graceMs), close the app and exit 0; SIGHUP reopens the logs.
 */
function handleSignals(server: http.Server, app: Stoppable): void {
  process.on('SIGHUP', () => app.reopenLogs());
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    // Every connection ends after its next answer (Connection: close) or its keep-alive time-out.
    stopAccepting(server, () => void app.close().finally(() => process.exit(0)));
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

/** The primary: prepare (migrations) once, fork the workers, keep them running until SIGTERM. */
export async function runPrimary(config: Config, prepare: () => Promise<void>): Promise<void> {
  const logs = new Logs({ error: config.errorLog });
  const logError = (message: string) => logs.error(message);
  await prepare();

  let stopping = false;
  const listening = new Set<Worker>();
  const fork = () => cluster.fork();
  cluster.on('listening', (worker) => listening.add(worker));
  cluster.on('exit', (worker, code, signal) => {
    const wasServing = listening.delete(worker);
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
    const workers = Object.values(cluster.workers ?? {}).filter((w): w is Worker => w !== undefined);
    if (workers.length === 0) void logs.close().finally(() => process.exit());
    // Each worker stops accepting, finishes its requests and closes its pool (handleSignals).
    for (const worker of workers) worker.process.kill('SIGTERM');
    setTimeout(() => {
      for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill('SIGKILL');
      logError(`workers still running ${graceMs + 5000} ms after SIGTERM were killed`);
    }, graceMs + 5000).unref();
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  process.on('SIGHUP', () => {
    logs.reopen();
    for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill('SIGHUP');
  });

  for (let i = 0; i < config.webConcurrency; i++) fork();
  console.log(`portfolio: primary ${process.pid} runs ${config.webConcurrency} workers`);
}
