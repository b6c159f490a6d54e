// The primary of WEB_CONCURRENCY=N worker processes, as Apache's prefork parent: it prepares the
// database once, owns the port (opened once a worker serves) and hands each connection it accepts
// to one worker in turn; it replaces a worker that dies, replaces them all one after another on
// SIGUSR2 (a rolling reload), stops gracefully on SIGTERM and passes SIGHUP on. It also answers
// what a worker asks (every worker's metrics, gathered from all of them). Beside the workers it
// keeps the search process, which holds the server's one search index (lib/search/service.ts):
// started first, started again when it dies, replaced after the workers by a reload, stopped
// after them. docs/operations.md, Processes and signals.
import cluster, { type Worker } from 'node:cluster';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { Config } from '../config.ts';
import { Logs } from '../log/index.ts';
import type { Answer, Message } from './process-model.ts';
import { addressOf, collectTimeoutMs, drainMs, graceMs, writePidFile } from './process-model.ts';

// Connections held while no worker serves (all died at once).
const maxWaiting = 1000;
// A worker of a reload that has not said it is complete in this time has failed to start.
const startTimeoutMs = 60_000;
/** A search process of a reload that has not read its index in this time has failed to start. */
const searchStartTimeoutMs = 30 * 60_000;
/** How long the primary waits before it starts a search process again that died, at first and at most. */
const searchRestartMs = [1000, 30_000] as const;

export interface PrimaryOptions {
  /** What a worker may ask the primary, by question. */
  answers?: Record<string, Answer>;
  /**
   * Folds what workers that are gone gave last (their metrics) into one value, which gather()
   * keeps returning beside the live workers' values: their counts do not vanish from the sums.
   */
  fold?: (values: unknown[]) => Promise<unknown>;
}

/**
 * Prepares (migrations) once, forks the workers, listens once the first serves, and keeps them
 * running until SIGTERM. The port opens only when a worker can answer: a connection made earlier
 * would wait for one, the health checks too.
 */
export async function runPrimary(
  config: Config,
  prepare: () => Promise<void>,
  options: PrimaryOptions = {},
): Promise<void> {
  await prepare();
  // Paused: the bytes a client sends are read by the worker that gets the connection.
  const listener = net.createServer({ pauseOnConnect: true });
  new Primary(config, listener, prepare, options).start();
}

interface Collect {
  values: unknown[];
  missing: Set<Worker>;
  done: () => void;
}

class Primary {
  private readonly logs: Logs;
  /** The port's address, once it is open (the first worker serves). */
  private address: string | null = null;
  private opening = false;
  private stopping = false;
  private reloading = false;
  /** Workers that serve, in turn. */
  private readonly ready: Worker[] = [];
  private readonly waiting: net.Socket[] = [];
  private turn = 0;
  /** Connections handed to each worker and not yet taken, oldest first. */
  private readonly handing = new Map<Worker, net.Socket[]>();
  /** Workers told to finish by a reload: not replaced when they exit. */
  private readonly retiring = new Set<Worker>();
  /** Old workers of the reload under way, not yet retired: one that dies is replaced by the reload. */
  private readonly replacing = new Set<Worker>();
  /** New workers of a reload that have not said they are ready. */
  private readonly arriving = new Map<Worker, (isReady: boolean) => void>();
  private readonly collects = new Map<number, Collect>();
  private nextCollect = 0;
  /** Each worker's last collected value, and its final one when it stops. */
  private readonly lastSeen = new Map<Worker, unknown>();
  /** What the workers that are gone gave last, folded into one; undefined before any left. */
  private departed: unknown = undefined;
  private folding: Promise<void> = Promise.resolve();
  /** Where the search process listens: in a folder of the primary's own (0700), removed at exit. */
  private readonly searchSocket: string;
  /** Every search process alive; the one that serves, and the one a reload starts to take its place. */
  private readonly searches = new Set<Worker>();
  private search: Worker | null = null;
  private nextSearch: { worker: Worker; arrived: (isReady: boolean) => void } | null = null;
  private searchRestart: number = searchRestartMs[0];

  constructor(
    private readonly config: Config,
    private readonly listener: net.Server,
    private readonly prepare: () => Promise<void>,
    private readonly options: PrimaryOptions,
  ) {
    this.logs = new Logs({ error: config.errorLog });
    const dir = mkdtempSync(path.join(os.tmpdir(), 'portfolio-'));
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
    this.searchSocket = path.join(dir, 'search.sock');
  }

  start(): void {
    this.listener.on('connection', (socket: net.Socket) => this.handOff(socket));
    cluster.on('message', (worker, message: Message) => this.onMessage(worker, message));
    cluster.on('exit', (worker, code, signal) => this.onExit(worker, code, signal));
    process.on('SIGTERM', () => this.stop());
    process.on('SIGINT', () => this.stop());
    process.on('SIGUSR2', () => void this.reload());
    process.on('SIGHUP', () => {
      this.logs.reopen();
      for (const worker of this.processes()) worker.process.kill('SIGHUP');
    });
    this.search = this.forkSearch();
    for (let i = 0; i < this.config.webConcurrency; i++) this.fork();
  }

  /** Opens the port, when the first worker serves; one that cannot be opened stops the server. */
  private open(): void {
    this.opening = true;
    const cannotOpen = (err: Error) => {
      this.log(
        `the port ${this.config.host}:${this.config.port} cannot be opened: ${err.message}; stopping the server`,
      );
      process.exitCode = 1;
      this.stop();
    };
    this.listener.once('error', cannotOpen);
    this.listener.listen(this.config.port, this.config.host, () => {
      // From now on an error is one connection's that could not be accepted (EMFILE): said, not fatal.
      this.listener.off('error', cannotOpen);
      this.listener.on('error', (err) => this.log(`accepting a connection failed: ${err.message}`, 'warn'));
      const address = addressOf(this.listener);
      this.address = address;
      try {
        writePidFile(this.config);
      } catch (err) {
        this.log((err as Error).message);
        process.exitCode = 1;
        return this.stop();
      }
      for (const worker of this.ready) this.tell(worker);
      console.log(`portfolio: primary ${process.pid} runs ${this.config.webConcurrency} workers on ${address}/`);
    });
  }

  /** Tells a serving worker the port's address, for its log line. */
  private tell(worker: Worker): void {
    if (this.address !== null && worker.isConnected())
      worker.send({ portfolio: 'address', address: this.address } satisfies Message);
  }

  private log(message: string, level: 'error' | 'warn' | 'notice' = 'error'): void {
    this.logs.error(message, { level });
  }

  private fork(): Worker {
    return cluster.fork({ PORTFOLIO_SEARCH_SOCKET: this.searchSocket });
  }

  private forkSearch(): Worker {
    const worker = cluster.fork({ PORTFOLIO_SEARCH_SOCKET: this.searchSocket, PORTFOLIO_ROLE: 'search' });
    this.searches.add(worker);
    return worker;
  }

  private isSearch(worker: Worker): boolean {
    return this.searches.has(worker);
  }

  /** The serving workers, the search processes left out. */
  private workers(): Worker[] {
    return this.processes().filter((w) => !this.isSearch(w));
  }

  /** Every process alive: one that has exited may still be listed during its own 'exit'. */
  private processes(): Worker[] {
    return Object.values(cluster.workers ?? {}).filter((w): w is Worker => w !== undefined && !w.isDead());
  }

  private handOff(socket: net.Socket): void {
    const worker = this.ready[this.turn++ % Math.max(1, this.ready.length)];
    if (!worker) {
      if (this.waiting.length < maxWaiting) this.waiting.push(socket);
      else socket.destroy();
      return;
    }
    // The primary keeps its copy until the worker says it took the connection (in order, as
    // they were sent), and closes the copies a worker that died did not take: the client gets a
    // reset instead of a connection left hanging in CLOSE-WAIT.
    const queue = this.handing.get(worker) ?? [];
    this.handing.set(worker, queue);
    queue.push(socket);
    worker.send({ portfolio: 'connection' } satisfies Message, socket, { keepOpen: true }, (err) => {
      if (!err) return;
      // Never sent, so never taken: out of the queue, or the next 'took' would close another.
      const at = queue.indexOf(socket);
      if (at !== -1) queue.splice(at, 1);
      socket.destroy();
    });
  }

  /** Puts a worker in the turn of those that get connections, and hands it what waited for one. */
  private serve(worker: Worker): void {
    if (this.stopping || this.ready.includes(worker) || this.retiring.has(worker) || worker.isDead()) return;
    this.ready.push(worker);
    if (!this.opening) this.open();
    else this.tell(worker);
    for (const socket of this.waiting.splice(0)) this.handOff(socket);
  }

  private onMessage(worker: Worker, message: Message): void {
    if (this.isSearch(worker)) {
      if (message?.portfolio === 'complete') this.searchComplete(worker);
      return;
    }
    switch (message?.portfolio) {
      case 'took':
        this.handing.get(worker)?.shift()?.destroy();
        return;
      case 'ready':
        // A worker serves once it is ready when none other does (the start, or all died); beside
        // workers that serve, once it is complete (it keeps no index: just after).
        if (this.ready.length === 0) this.serve(worker);
        return;
      case 'complete':
        this.arriving.get(worker)?.(true);
        this.serve(worker);
        return;
      case 'collected': {
        this.lastSeen.set(worker, message.value);
        const collect = this.collects.get(message.id);
        if (!collect?.missing.delete(worker)) return;
        collect.values.push(message.value);
        if (collect.missing.size === 0) collect.done();
        return;
      }
      case 'final':
        this.lastSeen.set(worker, message.value);
        return;
      case 'ask': {
        const { id, question } = message;
        const reply = (result: { value?: unknown; error?: string }) => {
          if (worker.isConnected()) worker.send({ portfolio: 'answer', id, ...result } satisfies Message);
        };
        const answer = this.options.answers?.[question];
        if (!answer) reply({ error: `no answer to "${question}"` });
        else
          answer(() => this.gather()).then(
            (value) => reply({ value }),
            (err: Error) => reply({ error: err.message }),
          );
        return;
      }
      default:
    }
  }

  /**
   * What every worker that serves or finishes its requests gives now (those that do not answer
   * within collectTimeoutMs are left out), and what the workers that are gone left.
   */
  private gather(): Promise<unknown[]> {
    return new Promise<unknown[]>((resolve) => {
      const id = this.nextCollect++;
      const missing = new Set([...this.ready, ...this.retiring].filter((worker) => worker.isConnected()));
      const values: unknown[] = [];
      const done = () => {
        clearTimeout(timer);
        this.collects.delete(id);
        void this.folding.then(() => resolve(this.departed === undefined ? values : [...values, this.departed]));
      };
      const timer = setTimeout(done, collectTimeoutMs);
      this.collects.set(id, { values, missing, done });
      for (const worker of missing) worker.send({ portfolio: 'collect', id } satisfies Message);
      if (missing.size === 0) done();
    });
  }

  private onExit(worker: Worker, code: number, signal: string): void {
    if (this.isSearch(worker)) return this.searchExited(worker, code, signal);
    for (const socket of this.handing.get(worker) ?? []) socket.destroy();
    this.handing.delete(worker);
    const at = this.ready.indexOf(worker);
    const wasServing = at !== -1;
    if (wasServing) this.ready.splice(at, 1);
    for (const collect of this.collects.values())
      if (collect.missing.delete(worker) && collect.missing.size === 0) collect.done();
    this.leave(worker);
    if (this.stopping) {
      if (this.workers().length === 0) this.finish();
      return;
    }
    if (this.retiring.delete(worker)) return;
    const how = signal ? `signal ${signal}` : `exit code ${code}`;
    const arrival = this.arriving.get(worker);
    if (arrival) return arrival(false);
    if (this.replacing.has(worker)) {
      this.log(`worker ${worker.process.pid} died (${how}) during the reload; a new worker takes its place`);
      return;
    }
    if (!wasServing) {
      // A worker that cannot even start (bad rules file, database gone) would fail again at once.
      this.log(`worker ${worker.process.pid} failed to start (${how}); stopping the server, see the message above`);
      this.stop();
      process.exitCode = 1;
      return;
    }
    const next = this.fork();
    this.log(`worker ${worker.process.pid} died (${how}); started worker ${next.process.pid} in its place`);
  }

  /** A worker's last value joins what the departed left (a worker killed gives the one of its last collect). */
  private leave(worker: Worker): void {
    const value = this.lastSeen.get(worker);
    this.lastSeen.delete(worker);
    const fold = this.options.fold;
    if (value === undefined || !fold) return;
    this.folding = this.folding
      .then(async () => {
        this.departed = await fold(this.departed === undefined ? [value] : [this.departed, value]);
      })
      .catch((err: unknown) =>
        this.log(`could not keep the counts of worker ${worker.process.pid}: ${(err as Error).message}`, 'warn'),
      );
  }

  /** Tells a worker to finish its requests and exit; it gets no new connections from now on. */
  private retire(worker: Worker): void {
    const at = this.ready.indexOf(worker);
    if (at !== -1) this.ready.splice(at, 1);
    this.retiring.add(worker);
    if (worker.isConnected()) worker.send({ portfolio: 'stop' } satisfies Message);
    else worker.process.kill('SIGTERM');
    setTimeout(() => {
      if (this.retiring.has(worker)) worker.process.kill('SIGKILL');
    }, graceMs + 5000).unref();
  }

  /** Whether a new worker says it is complete within startTimeoutMs; one that does not is killed. */
  private arrival(worker: Worker): Promise<boolean> {
    return new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => {
        this.log(
          `worker ${worker.process.pid} had not said it is complete ${startTimeoutMs / 1000} s after it started; killed`,
        );
        worker.process.kill('SIGKILL');
      }, startTimeoutMs);
      this.arriving.set(worker, (isReady) => {
        clearTimeout(timer);
        this.arriving.delete(worker);
        resolve(isReady);
      });
    });
  }

  /**
   * SIGUSR2: each worker in turn is replaced by a new one, which serves before the old one stops
   * taking connections; the old one finishes its requests meanwhile. A new worker that cannot
   * start ends the reload and the running ones keep serving.
   */
  private async reload(): Promise<void> {
    if (this.stopping) return;
    if (this.reloading) return this.log('SIGUSR2 ignored: a reload is under way', 'warn');
    this.reloading = true;
    const old = [...this.ready];
    for (const worker of old) this.replacing.add(worker);
    this.log(`reloading: replacing ${old.length} workers one after another`, 'notice');
    let failed = false;
    // New migrations are applied here first, under MIGRATION_TIMEOUT_MS: a new worker has
    // startTimeoutMs to be ready, and one that writes every row of a large table takes longer.
    // The old workers serve meanwhile.
    try {
      await this.prepare();
    } catch (err) {
      this.log(
        `reload stopped: the database could not be prepared (${err instanceof Error ? err.message : String(err)}); the running workers go on serving`,
      );
      failed = true;
    }
    for (const worker of old) {
      if (this.stopping || failed) break;
      const next = this.fork();
      if (!(await this.arrival(next))) {
        if (!this.stopping)
          this.log(`reload stopped: worker ${next.process.pid} failed to start; the running workers go on serving`);
        failed = true;
        break;
      }
      this.replacing.delete(worker);
      // One that died meanwhile has been replaced by the new one already.
      if (!worker.isDead()) this.retire(worker);
    }
    // Old workers that died while a reload that stopped early waited for them.
    for (const worker of this.replacing) if (worker.isDead() && !this.stopping) this.fork();
    this.replacing.clear();
    if (!this.stopping && !failed) {
      const replaced = await this.replaceSearch();
      const search = !this.search
        ? ''
        : replaced
          ? `, search process ${this.search.process.pid}`
          : `; the search process before, ${this.search.process.pid}, goes on`;
      if (!this.stopping)
        this.log(`reloaded: workers ${this.ready.map((w) => w.process.pid).join(', ')} serve${search}`, 'notice');
    }
    this.reloading = false;
  }

  private stop(): void {
    if (this.stopping) return;
    this.stopping = true;
    for (const resolve of this.arriving.values()) resolve(false);
    this.nextSearch?.arrived(false);
    setTimeout(() => this.closeDown(), drainMs);
    setTimeout(() => {
      for (const worker of this.processes()) worker.process.kill('SIGKILL');
      this.log(`workers still running ${graceMs + 5000} ms after SIGTERM were killed`);
    }, graceMs + 5000).unref();
  }

  /** The port closes first: what comes later is refused, what came is handed on and answered. */
  private closeDown(): void {
    if (this.listener.listening) this.listener.close();
    for (const socket of this.waiting.splice(0)) this.handOff(socket);
    const workers = this.workers();
    if (workers.length === 0) this.finish();
    // After the connections handed on (the channel keeps its order), each worker finishes its
    // requests and closes its pool. One still starting has none and is not listening yet.
    for (const worker of workers) {
      const serving = this.ready.includes(worker) || this.retiring.has(worker);
      if (serving && worker.isConnected()) worker.send({ portfolio: 'stop' } satisfies Message);
      else worker.process.kill('SIGTERM');
    }
  }

  /** The last worker is gone: the search processes stop, then the primary. */
  private finish(): void {
    const searches = this.processes();
    if (searches.length === 0) return void this.logs.close().finally(() => process.exit());
    for (const search of searches) this.stopSearch(search);
  }

  /** The search process stops when the primary tells it, not on a signal sent to the whole group. */
  private stopSearch(search: Worker): void {
    if (search.isConnected()) search.send({ portfolio: 'stop' } satisfies Message);
    else search.process.kill('SIGTERM');
  }

  /** A search process has read the index: the next that dies is started again after the shortest wait. */
  private searchComplete(worker: Worker): void {
    if (worker === this.search || worker === this.nextSearch?.worker) this.searchRestart = searchRestartMs[0];
    if (worker === this.nextSearch?.worker) this.nextSearch.arrived(true);
    // One nobody waits for any more (a stop came while it read): it goes.
    else if (worker !== this.search) this.stopSearch(worker);
  }

  private searchExited(worker: Worker, code: number, signal: string): void {
    const how = signal ? `signal ${signal}` : `exit code ${code}`;
    this.searches.delete(worker);
    if (worker === this.nextSearch?.worker) {
      this.nextSearch.arrived(false);
      if (!this.stopping)
        this.log(`the reload's search process ${worker.process.pid} died (${how}); the one before goes on serving`);
    }
    if (this.stopping) {
      if (worker === this.search) this.search = null;
      if (this.processes().length === 0) void this.logs.close().finally(() => process.exit());
      return;
    }
    if (worker !== this.search) return;
    // Searches are 503 until a new one has read the index; a search process that dies again at
    // once is started again later and later, up to every 30 s.
    const wait = this.searchRestart;
    this.searchRestart = Math.min(searchRestartMs[1], wait * 2);
    this.log(
      `the search process ${worker.process.pid} died (${how}); a new one starts in ${wait / 1000} s, and searches are 503 until it has read the index`,
    );
    this.search = null;
    setTimeout(() => this.restartSearch(), wait).unref();
  }

  /** A search process in place of one that died, unless a reload's is on its way to take the place. */
  private restartSearch(): void {
    if (!this.stopping && !this.search && !this.nextSearch) this.search = this.forkSearch();
  }

  /**
   * A reload's last step: a new search process reads the index while the one before serves, and
   * takes the socket's name once it has (service.ts); then the one before stops.
   */
  private async replaceSearch(): Promise<boolean> {
    const worker = this.forkSearch();
    const complete = await new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => {
        this.log(
          `the reload's search process ${worker.process.pid} had not read the index ${searchStartTimeoutMs / 60_000} min after it started; killed`,
        );
        worker.process.kill('SIGKILL');
      }, searchStartTimeoutMs);
      this.nextSearch = {
        worker,
        arrived: (isReady) => {
          clearTimeout(timer);
          resolve(isReady);
        },
      };
    });
    this.nextSearch = null;
    if (!complete) {
      if (!worker.isDead()) this.stopSearch(worker);
      // The one before died meanwhile: one in its place.
      this.restartSearch();
      return false;
    }
    const old = this.search;
    this.search = worker;
    if (old && !old.isDead()) this.stopSearch(old);
    return true;
  }
}
