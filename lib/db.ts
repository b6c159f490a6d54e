// One small database interface over node-postgres (pg.Pool) and the embedded PGlite,
// so scripts and tests run the same SQL against either backend.
import pg from 'pg';
import type { CommitMark, OutcomeOptions } from './commit-outcome.ts';
import { beginWithMark, findCommitOutcome } from './commit-outcome.ts';
import { HttpError } from './http-error.ts';

export type Row = Record<string, unknown>;

export interface QueryOptions {
  /**
   * Prepares the statement under this name once per connection, sparing PostgreSQL the
   * parsing and planning of every later run (node-postgres named statements). For hot
   * queries whose plan does not depend on the values, e.g. a lookup by key; not for
   * searches, whose best plan depends on the term.
   */
  name?: string;
  /**
   * A short statement, such as a lookup by key: sent on one of a few connections kept in
   * pipeline mode, which take statements from any number of requests without waiting for the
   * answers before; the statements of one turn of the event loop go out in one write and the
   * server answers them one after the other without sleeping in between. Not for a statement
   * that may take long: the ones behind it on its connection wait for it. Outside transactions
   * on PostgreSQL; elsewhere it changes nothing.
   */
  pipeline?: boolean;
}

export interface Queryable {
  /** Runs one statement with $1… placeholders and returns its rows. */
  query<R = Row>(sql: string, params?: readonly unknown[], options?: QueryOptions): Promise<R[]>;
  /** Runs a script of several statements without parameters (migrations). */
  exec(sql: string): Promise<void>;
}

export interface Db extends Queryable {
  readonly kind: 'postgres' | 'pglite';
  /**
   * Runs fn in one transaction: committed when fn resolves, rolled back when it throws. On
   * PostgreSQL a COMMIT that gets no answer is looked up before the caller hears of it: the
   * result if it committed, DbUnavailableError if it did not or if nobody can tell in time.
   */
  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

/** The database could not be reached or gave up: the request may succeed later (503). */
export class DbUnavailableError extends Error {
  override name = 'DbUnavailableError';
}

export interface PostgresOptions {
  connectionString: string;
  statementTimeoutMs: number;
  /** How long a query waits for a connection (a new one, or a free one of the pool) before 503. */
  connectTimeoutMs?: number;
  maxConnections?: number;
  /**
   * How long a transaction whose COMMIT got no answer asks a fresh connection whether it
   * committed, before it is answered 503 with its outcome unknown (default 10 s).
   */
  outcomeTimeoutMs?: number;
  onError?: (err: Error) => void;
  /** A COMMIT that got no answer but committed, found out afterwards. */
  onWarning?: (message: string) => void;
}

export function openPostgres(options: PostgresOptions): Db {
  const pool = new pg.Pool({
    connectionString: options.connectionString,
    max: options.maxConnections ?? 10,
    connectionTimeoutMillis: options.connectTimeoutMs ?? 3000,
    idleTimeoutMillis: 30_000,
    statement_timeout: options.statementTimeoutMs,
    idle_in_transaction_session_timeout: options.statementTimeoutMs * 2,
    application_name: 'portfolio',
  });
  // An idle client that loses its server emits here; without a listener the process dies.
  pool.on('error', (err) => options.onError?.(err));
  // The server enforces statement_timeout only while it runs; a server that hangs (stopped,
  // unreachable) is given up on here, so no request waits much longer than the statement would.
  const watchdog = new ReadWatchdog(pool, options.statementTimeoutMs + 1000, options.onError);
  const pipelines = new Pipelines(options, watchdog);

  /**
   * One statement on a connection of the pool, watched (pool.query would set a timer per
   * statement), with its rows; failures come out classified. One async layer: each more costs
   * every statement a promise and a turn of the microtask queue.
   */
  const runOnPool = async <R>(config: pg.QueryConfig | string): Promise<R[]> => {
    let client: pg.PoolClient | undefined;
    let broken = false;
    try {
      client = await pool.connect();
      return (await watchdog.query(client, config)).rows as R[];
    } catch (err) {
      const failure = classifyError(err);
      // A statement the server refused leaves the connection ready for the next one.
      broken = failure instanceof DbUnavailableError;
      throw failure;
    } finally {
      client?.release(broken);
    }
  };

  return {
    kind: 'postgres',
    query: <R>(sql: string, params?: readonly unknown[], queryOptions?: QueryOptions) => (queryOptions?.pipeline
      ? pipelines.query<R>(toConfig(sql, params, queryOptions))
      : runOnPool<R>(toConfig(sql, params, queryOptions))),
    exec: async (sql) => { await runOnPool(sql); },
    transaction: async (fn) => {
      const attempt = await attemptTransaction(pool, watchdog, fn).catch((err: unknown) => {
        throw classifyError(err);
      });
      if (attempt.committed) return attempt.result;
      return settleCommit(attempt, {
        connectionString: options.connectionString,
        connectTimeoutMs: options.connectTimeoutMs ?? 3000,
        timeoutMs: options.outcomeTimeoutMs ?? 10_000,
        onWarning: options.onWarning,
      });
    },
    close: async () => {
      watchdog.stop();
      await Promise.all([pool.end(), pipelines.close()]);
    },
  };
}

const started = Symbol('read watchdog: tick the running statement started at, 0 when idle');
const timedOut = Symbol('read watchdog: the connection was cut for want of an answer');
type WatchedClient = pg.PoolClient & { [started]?: number; [timedOut]?: boolean };

/**
 * Gives up on statements that get no answer within timeoutMs, as node-postgres's query_timeout
 * does, but with one timer for the whole pool instead of one per statement: a clock that ticks
 * four times a second, and each connection stamped with the tick its statement started at.
 * Under load, per-statement timers made statement objects outlive the young generation: a
 * hand-written server with this pool had 7 full collections in 35,000 requests instead of 1
 * (README, Benchmark).
 * A connection past its time is cut: its statement fails as unavailable (503) and the pool
 * drops it. The answer comes between timeoutMs and timeoutMs + 250 ms.
 */
class ReadWatchdog {
  static readonly tickMs = 250;
  private tick = 1;
  /** Ticks a statement may run. */
  private readonly limit: number;
  private readonly clients = new Set<WatchedClient>();
  private readonly timer: NodeJS.Timeout;

  constructor(pool: pg.Pool, timeoutMs: number, onError?: (err: Error) => void) {
    this.limit = Math.ceil(timeoutMs / ReadWatchdog.tickMs);
    pool.on('connect', (client) => {
      this.clients.add(client as WatchedClient);
      // A checked-out connection that fails between statements emits here; without a listener
      // the process dies. Its next statement then fails as unavailable. An idle connection's
      // error is the pool's to report (its own listener, pool.on('error') above).
      client.on('error', (err) => {
        if (client.listenerCount('error') === 1) onError?.(err);
      });
    });
    pool.on('remove', (client) => this.clients.delete(client as WatchedClient));
    this.timer = setInterval(() => this.check(), ReadWatchdog.tickMs).unref();
  }

  /** The current tick, for connections that stamp themselves (Pipelines). */
  get now(): number {
    return this.tick;
  }

  /** Watches a connection from outside the pool: its stamp is its oldest unanswered statement's tick. */
  watch(client: WatchedClient): void {
    this.clients.add(client);
  }

  forget(client: WatchedClient): void {
    this.clients.delete(client);
  }

  async query(client: pg.PoolClient, config: pg.QueryConfig | string): Promise<pg.QueryResult> {
    const watched = client as WatchedClient;
    watched[started] = this.tick;
    try {
      // The callback form: with pg's promise form, every statement's objects outlived the young
      // generation under load (6 full collections in 35,000 person pages instead of 1).
      return await new Promise<pg.QueryResult>((resolve, reject) => {
        // { text } without values runs as a simple query, as the string does: several statements may go in one.
        client.query(typeof config === 'string' ? { text: config } : config, (err: Error | null, result: pg.QueryResult) =>
          (err ? reject(err) : resolve(result)));
      });
    } catch (err) {
      throw readFailure(watched, err);
    } finally {
      watched[started] = 0;
    }
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private check(): void {
    this.tick++;
    for (const client of this.clients) {
      const since = client[started] ?? 0;
      // Cut after more than limit ticks: a stamp may fall just before a tick, so it takes limit + 1
      // ticks to be sure of timeoutMs.
      if (since === 0 || this.tick - since <= this.limit) continue;
      client[timedOut] = true;
      client[started] = 0;
      (client as unknown as { connection: { stream: { destroy(): void } } }).connection.stream.destroy();
    }
  }
}

/**
 * What a failed statement is thrown as. Called in the async function that awaited it, as pg's
 * promise form does: the stack leads back to the code that sent the statement (async frames),
 * not to the socket that brought the error. On a connection the watchdog cut, the message
 * node-postgres's query_timeout gives, so logs read the same.
 */
function readFailure(client: WatchedClient, err: unknown): unknown {
  if (!(err instanceof Error)) return err;
  Error.captureStackTrace(err, readFailure);
  return client[timedOut] ? new Error('Query read timeout', { cause: err }) : err;
}

/** How many connections of a Db carry pipelined statements: a slow statement holds up only its own. */
const pipelineConnections = 2;

interface Pipe {
  client: WatchedClient;
  /** Settles once connected; statements wait for it here, not in pg's queue. */
  ready: Promise<void>;
  connected: boolean;
  /** Lost, cut or closed: the next statement opens a new connection in its place. */
  broken: boolean;
  /** Statements waiting for the connection to open. */
  waiting: number;
  /** The watchdog's ticks at which the statements now on the wire were sent, oldest first. */
  sent: number[];
  /** Writes wait until the end of this turn of the event loop (setImmediate). */
  corked: boolean;
}

/**
 * The connections that carry statements marked `pipeline` (QueryOptions), in node-postgres's
 * pipeline mode. Each statement goes to the connection with the fewest waiting or unanswered. The
 * socket is corked from the first statement of a turn of the event loop to its end, so the
 * statements of all requests that arrived in that turn leave in one write, where a pool writes
 * once per statement and wakes a server process each time: under 64 connections of person
 * pages, that one system call per statement was a fifth of the server's time (README, Benchmark).
 * Failures are classified as the pool's are; a connection that fails, or whose oldest statement
 * gets no answer in time (the watchdog), fails all of its statements and is replaced.
 */
class Pipelines {
  private readonly pipes: (Pipe | null)[] = Array.from({ length: pipelineConnections }, () => null);

  constructor(private readonly options: PostgresOptions, private readonly watchdog: ReadWatchdog) {}

  async query<R>(config: pg.QueryConfig): Promise<R[]> {
    const pipe = this.pick();
    if (!pipe.connected) {
      pipe.waiting++;
      try {
        await pipe.ready;
      } finally {
        pipe.waiting--;
      }
    }
    try {
      return (await this.send(pipe, config)).rows as R[];
    } catch (err) {
      const failure = classifyError(readFailure(pipe.client, err));
      if (failure instanceof DbUnavailableError) this.discard(pipe, 'destroy');
      throw failure;
    }
  }

  /** Says goodbye on idle connections; one with a statement still unanswered is cut, as end() would wait for it. */
  async close(): Promise<void> {
    await Promise.all(this.pipes.map((pipe) => {
      if (!pipe) return undefined;
      const idle = pipe.connected && !pipe.broken && pipe.sent.length === 0;
      this.discard(pipe, idle ? 'end' : 'destroy');
      return idle ? pipe.client.end().catch(() => undefined) : undefined;
    }));
  }

  /** The connection with the fewest statements waiting or unanswered; a missing or broken one is opened. */
  private pick(): Pipe {
    let best: Pipe | null = null;
    for (const [i, slot] of this.pipes.entries()) {
      const pipe = slot && !slot.broken ? slot : (this.pipes[i] = this.open());
      if (!best || pipe.waiting + pipe.sent.length < best.waiting + best.sent.length) best = pipe;
    }
    return best as Pipe;
  }

  private open(): Pipe {
    const { connectionString, statementTimeoutMs, connectTimeoutMs = 3000, onError } = this.options;
    const client = new pg.Client({
      connectionString, statement_timeout: statementTimeoutMs, connectionTimeoutMillis: connectTimeoutMs,
      application_name: 'portfolio', pipeline: true,
    } as pg.ClientConfig) as WatchedClient;
    const pipe: Pipe = { client, ready: Promise.resolve(), connected: false, broken: false, waiting: 0, sent: [], corked: false };
    // Without a listener the process dies. Statements on the wire fail with it (pg fails them
    // all), and their requests log it; a loss between statements is logged here, as the pool's are.
    client.on('error', (err) => {
      if (!pipe.broken && pipe.sent.length === 0) onError?.(err);
      this.discard(pipe, 'destroy');
    });
    pipe.ready = client.connect().then(
      () => {
        pipe.connected = true;
        this.watchdog.watch(client);
      },
      (err: Error) => {
        this.discard(pipe, 'destroy');
        // The pool's words for the same failure, so logs read the same.
        const message = err.message === 'timeout expired' ? 'timeout exceeded when trying to connect' : err.message;
        throw new DbUnavailableError(`database unavailable: ${message}`, { cause: err });
      },
    );
    // Opened beside the one a statement waits for, it may fail with nobody waiting.
    pipe.ready.catch(() => undefined);
    return pipe;
  }

  private send(pipe: Pipe, config: pg.QueryConfig): Promise<pg.QueryResult> {
    const { client } = pipe;
    pipe.sent.push(this.watchdog.now);
    client[started] = pipe.sent[0] as number;
    this.cork(pipe);
    return new Promise((resolve, reject) => {
      client.query(config, (err: Error | null, result: pg.QueryResult) => {
        // Answers come in the order the statements were sent; a failed connection fails them all.
        pipe.sent.shift();
        client[started] = pipe.sent[0] ?? 0;
        if (err) reject(err);
        else resolve(result);
      });
    });
  }

  private cork(pipe: Pipe): void {
    if (pipe.corked) return;
    pipe.corked = true;
    const { stream } = (pipe.client as unknown as { connection: { stream: { cork(): void; uncork(): void } } }).connection;
    stream.cork();
    setImmediate(() => {
      pipe.corked = false;
      stream.uncork();
    });
  }

  private discard(pipe: Pipe, how: 'end' | 'destroy'): void {
    if (pipe.broken) return;
    pipe.broken = true;
    this.watchdog.forget(pipe.client);
    if (how === 'destroy') (pipe.client as unknown as { connection: { stream: { destroy(): void } } }).connection.stream.destroy();
  }
}

type Attempt<T> = { committed: true; result: T } | { committed: false; result: T; mark: CommitMark; failure: Error };

/**
 * BEGIN, fn, COMMIT on one connection. A failure before the COMMIT rolls back; a COMMIT the
 * server refused did not commit; a COMMIT that got no answer, or whose connection broke, may
 * have committed or not (the server may read it after the client gave up): the attempt says so.
 */
async function attemptTransaction<T>(pool: pg.Pool, watchdog: ReadWatchdog, fn: (tx: Queryable) => Promise<T>): Promise<Attempt<T>> {
  const client = await pool.connect();
  const run = (config: pg.QueryConfig | string) => watchdog.query(client, config);
  // A connection whose server went away or stopped answering is not used again; when it ends,
  // the server rolls back whatever it had not committed.
  let broken = false;
  try {
    const [, marked] = (await run(beginWithMark)) as unknown as [pg.QueryResult, pg.QueryResult<CommitMark>];
    const mark = marked.rows[0] as CommitMark;
    let result: T;
    try {
      result = await fn({
        query: async <R>(sql: string, params?: readonly unknown[], queryOptions?: QueryOptions) =>
          (await run(toConfig(sql, params, queryOptions))).rows as R[],
        exec: async (sql) => { await run(sql); },
      });
    } catch (err) {
      broken = isUnavailable(err) || !(await rollBack(run));
      throw err;
    }
    try {
      await run('COMMIT');
      return { committed: true, result };
    } catch (err) {
      if (!isUnavailable(err)) throw err; // the server answered: it did not commit
      broken = true;
      return { committed: false, result, mark, failure: err as Error };
    }
  } catch (err) {
    if (isUnavailable(err)) broken = true;
    throw err;
  } finally {
    client.release(broken);
  }
}

async function rollBack(run: (sql: string) => Promise<unknown>): Promise<boolean> {
  try {
    await run('ROLLBACK');
    return true;
  } catch {
    return false;
  }
}

/**
 * The outcome of a COMMIT that got no answer, asked from a fresh connection (lib/commit-outcome.ts):
 * committed, the change stands and the request succeeds; aborted, 503 as for any outage; still
 * unknown after timeoutMs, 503 with an error-log line that says so and names the transaction.
 */
async function settleCommit<T>(
  attempt: Extract<Attempt<T>, { committed: false }>,
  options: OutcomeOptions & { onWarning?: (message: string) => void },
): Promise<T> {
  const { mark, failure } = attempt;
  const started = performance.now();
  const outcome = await findCommitOutcome(mark, options);
  const after = `${Math.round(performance.now() - started)} ms`;
  const what = `COMMIT of transaction ${mark.xid} got no answer (${failure.message})`;
  if (outcome === 'committed') {
    options.onWarning?.(`${what}; it committed, as pg_xact_status showed after ${after}`);
    return attempt.result;
  }
  if (outcome === 'aborted') throw new DbUnavailableError(`database unavailable: ${what}; it did not commit, as pg_xact_status showed after ${after}`, { cause: failure });
  throw new DbUnavailableError(
    `database unavailable: ${what}; its outcome is unknown: nothing settled it within ${after}. ` +
      `SELECT pg_xact_status('${mark.xid}') on the server tells whether the change was saved`,
    { cause: failure },
  );
}

export interface PgliteOptions {
  /** Directory for the data files; null keeps everything in memory (tests). */
  dataDir: string | null;
}

export async function openPglite(options: PgliteOptions): Promise<Db> {
  // Imported here, not at the top: PGlite's module alone holds about 44 MB, which a server
  // on PostgreSQL should not carry in every worker.
  const [{ PGlite }, { pg_trgm }] = await Promise.all([
    import('@electric-sql/pglite'),
    import('@electric-sql/pglite/contrib/pg_trgm'),
  ]);
  const lite = new PGlite(options.dataDir ?? 'memory://', { extensions: { pg_trgm } });
  await lite.waitReady;
  // PGlite runs one connection; its own transaction() queues other queries until it ends.
  return {
    kind: 'pglite',
    query: async <R>(sql: string, params?: readonly unknown[]) => {
      try {
        return (await lite.query<R>(sql, params as unknown[] | undefined)).rows;
      } catch (err) {
        throw classifyError(err);
      }
    },
    exec: async (sql) => { await lite.exec(sql); },
    transaction: (fn) => lite.transaction((tx) => fn({
      query: async <R>(sql: string, params?: readonly unknown[]) =>
        (await tx.query<R>(sql, params as unknown[] | undefined)).rows,
      exec: async (sql) => { await tx.exec(sql); },
    })).catch((err: unknown) => { throw classifyError(err); }),
    close: () => lite.close(),
  };
}

function toConfig(text: string, params: readonly unknown[] | undefined, options: QueryOptions | undefined): pg.QueryConfig {
  const values = params as unknown[] | undefined;
  return options?.name ? { name: options.name, text, values } : { text, values };
}

// Connection failures become DbUnavailableError so the front can answer 503, not 500.
const unavailableCodes = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EHOSTUNREACH']);
const unavailableSqlStates = new Set(['57P01', '57P02', '57P03', '53300', '08000', '08003', '08006', '08001', '08004']);

// Text PostgreSQL cannot hold, such as a NUL byte in a search term or a user name: only a
// request can bring it (SQLSTATE 22021, 22P05), so it is the request's fault, not a 500.
const badTextSqlStates = new Set(['22021', '22P05']);

function isUnavailable(err: unknown): boolean {
  return classifyError(err) instanceof DbUnavailableError;
}

function classifyError(err: unknown): unknown {
  if (!(err instanceof Error)) return err;
  const code = (err as { code?: string }).code;
  if (code && badTextSqlStates.has(code)) {
    return new HttpError(400, 'The request contains a character that cannot be stored or searched, such as a NUL byte; remove it and try again.', { cause: err });
  }
  if (code && (unavailableCodes.has(code) || unavailableSqlStates.has(code))) {
    return new DbUnavailableError(`database unavailable: ${err.message}`, { cause: err });
  }
  if (/timeout exceeded when trying to connect|Connection terminated|Query read timeout|not queryable|Client was closed/i.test(err.message)) {
    return new DbUnavailableError(`database unavailable: ${err.message}`, { cause: err });
  }
  return err;
}
