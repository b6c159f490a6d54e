// PostgreSQL through node-postgres: a pool for statements and transactions, the pipelined
// connections for short statements, connections of their own for statements with a time-out of
// their own (searches), and transactions whose COMMIT got no answer looked up before the caller
// hears of it (commit-outcome.ts).
import pg from 'pg';
import type { CommitMark, OutcomeOptions } from './commit-outcome.ts';
import { beginWithMark, findCommitOutcome } from './commit-outcome.ts';
import type { Db, QueryOptions, Queryable } from './db.ts';
import { classifyError, DbUnavailableError, isUnavailable, toConfig } from './db.ts';
import { Pipelines } from './pipeline.ts';
import { Timeouts } from './timeouts.ts';
import { ReadWatchdog } from './watchdog.ts';

interface PostgresOptions {
  connectionString: string;
  statementTimeoutMs: number;
  /** How long a query waits for a connection (a new one, or a free one of the pool) before 503. */
  connectTimeoutMs?: number;
  /** Connections of the pool and those set aside for timed statements (default 10). */
  maxConnections?: number;
  /** Connections in pipeline mode for statements marked `pipeline` (default 2); 0 sends them through the pool. */
  pipelineConnections?: number;
  /** Statements on each pipelined connection at once (default: no bound); more wait for room, in turn. */
  pipelineDepth?: number;
  /** After this many ms without an answer, a pipelined connection's statements are sent again on another (default: never). */
  pipelineRetryMs?: number;
  /**
   * Of the maxConnections, how many are set aside for statements with a time-out of their own
   * (QueryOptions.timeoutMs: the searches), one statement each at a time (default 0: they use
   * the pool). Each is sent with its BEGIN, its settings and its COMMIT in one write. The pool
   * keeps at least one; with pipelineConnections 0 there are none.
   */
  timedConnections?: number;
  /**
   * Named statements and session settings (default true). Off behind a pooler in transaction
   * mode (PgBouncer), which hands each transaction whichever server connection is free: every
   * statement is sent unnamed, and the time-outs are set inside each transaction (timeouts.ts).
   */
  preparedStatements?: boolean;
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
  const pooled = options.preparedStatements === false;
  const timeouts = new Timeouts(options.statementTimeoutMs, pooled);
  const maxConnections = options.maxConnections ?? 10;
  const timedConnections =
    options.pipelineConnections === 0 ? 0 : Math.max(0, Math.min(options.timedConnections ?? 0, maxConnections - 1));
  // No time-outs among the startup parameters: a pooler refuses the ones it does not know.
  const pool = new pg.Pool({
    connectionString: options.connectionString,
    max: maxConnections - timedConnections,
    connectionTimeoutMillis: options.connectTimeoutMs ?? 3000,
    idleTimeoutMillis: 30_000,
    application_name: 'portfolio',
  });
  // An idle client that loses its server emits here; without a listener the process dies.
  pool.on('error', (err) => options.onError?.(err));
  // Sent before the connection's first statement: pg runs a client's statements in order.
  if (timeouts.session)
    pool.on('connect', (client) => {
      client.query(timeouts.session as string).catch(() => undefined);
    });
  // The server enforces statement_timeout only while it runs; a server that hangs (stopped,
  // unreachable) is given up on here, so no request waits much longer than the statement would.
  const watchdog = new ReadWatchdog(pool, options.statementTimeoutMs + 1000, options.onError);
  const pipelines = options.pipelineConnections === 0 ? null : new Pipelines({ ...options, timeouts }, watchdog);
  // A statement with a time-out of its own may run for that long: on a connection of its own,
  // never sent again (what it holds up is itself), its transaction in one write.
  const timed =
    timedConnections === 0
      ? null
      : new Pipelines(
          { ...options, timeouts, pipelineConnections: timedConnections, pipelineDepth: 1, pipelineRetryMs: 0 },
          watchdog,
        );
  const named = (sql: string, params: readonly unknown[] | undefined, queryOptions: QueryOptions | undefined) =>
    toConfig(sql, params, pooled ? undefined : queryOptions);
  // A kept plan needs a kept statement: an unnamed one (behind a pooler, or without a name) would
  // get a plan for any values each time, never reused.
  const within = (timeoutMs: number, own: QueryOptions) =>
    timeouts.within(timeoutMs, {
      indexScans: own.indexScans,
      genericPlan: own.genericPlan === true && !pooled && own.name !== undefined,
    });

  /**
   * One statement on a connection of the pool, watched (pool.query would set a timer per
   * statement), with its rows; failures come out classified. One async layer: each more costs
   * every statement a promise and a turn of the microtask queue.
   */
  const runOnPool = async <R>(config: pg.QueryConfig | string, own?: QueryOptions): Promise<R[]> => {
    let client: pg.PoolClient | undefined;
    let broken = false;
    try {
      const since = watchdog.now;
      client = await pool.connect();
      // Behind a pooler, or with a time-out of its own: a transaction of its own, whose time-outs
      // hold on whichever server connection it gets.
      const opening = own?.timeoutMs === undefined ? timeouts.perStatement : within(own.timeoutMs, own);
      if (!opening) return (await watchdog.query(client, config, since)).rows as R[];
      await watchdog.query(client, opening, since);
      let result: pg.QueryResult;
      try {
        result = await watchdog.query(client, config);
      } catch (err) {
        // COMMIT ends a failed transaction too (as ROLLBACK); a connection it cannot end is not used again.
        await watchdog.query(client, 'COMMIT').catch(() => {
          broken = true;
        });
        throw err;
      }
      await watchdog.query(client, 'COMMIT');
      return result.rows as R[];
    } catch (err) {
      const failure = classifyError(err);
      // A statement the server refused leaves the connection ready for the next one.
      broken ||= failure instanceof DbUnavailableError;
      throw failure;
    } finally {
      client?.release(broken);
    }
  };

  return {
    kind: 'postgres',
    query: <R>(sql: string, params?: readonly unknown[], queryOptions?: QueryOptions) =>
      queryOptions?.pipeline && pipelines
        ? pipelines.query<R>(named(sql, params, queryOptions))
        : queryOptions?.timeoutMs !== undefined && timed
          ? timed.query<R>(named(sql, params, queryOptions), within(queryOptions.timeoutMs, queryOptions))
          : runOnPool<R>(named(sql, params, queryOptions), queryOptions),
    exec: async (sql) => {
      await runOnPool(sql);
    },
    transaction: async (fn) => {
      const attempt = await attemptTransaction(pool, watchdog, timeouts, pooled, fn).catch((err: unknown) => {
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
    stats: () => ({
      total: pool.totalCount,
      idle: pool.idleCount,
      waiting: pool.waitingCount,
      pipelined: (pipelines?.unanswered() ?? 0) + (timed?.unanswered() ?? 0),
      retried: pipelines?.retried ?? 0,
    }),
    close: async () => {
      watchdog.stop();
      await Promise.all([pool.end(), pipelines?.close(), timed?.close()]);
    },
  };
}

type Attempt<T> = { committed: true; result: T } | { committed: false; result: T; mark: CommitMark; failure: Error };

/**
 * BEGIN, fn, COMMIT on one connection. A failure before the COMMIT rolls back; a COMMIT the
 * server refused did not commit; a COMMIT that got no answer, or whose connection broke, may
 * have committed or not (the server may read it after the client gave up): the attempt says so.
 */
async function attemptTransaction<T>(
  pool: pg.Pool,
  watchdog: ReadWatchdog,
  timeouts: Timeouts,
  pooled: boolean,
  fn: (tx: Queryable) => Promise<T>,
): Promise<Attempt<T>> {
  const since = watchdog.now;
  const client = await pool.connect();
  const run = (config: pg.QueryConfig | string, from?: number) => watchdog.query(client, config, from);
  // A connection whose server went away or stopped answering is not used again; when it ends,
  // the server rolls back whatever it had not committed.
  let broken = false;
  try {
    // BEGIN's time counts from the request for the connection, as a single statement's does.
    const begun = (await run(timeouts.begin(beginWithMark), since)) as unknown as pg.QueryResult<CommitMark>[];
    const mark = begun[begun.length - 1]?.rows[0] as CommitMark;
    let result: T;
    try {
      result = await fn({
        query: async <R>(sql: string, params?: readonly unknown[], queryOptions?: QueryOptions) =>
          (await run(toConfig(sql, params, pooled ? undefined : queryOptions))).rows as R[],
        exec: async (sql) => {
          await run(sql);
        },
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
 * The outcome of a COMMIT that got no answer, asked from a fresh connection (commit-outcome.ts):
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
  if (outcome === 'aborted')
    throw new DbUnavailableError(
      `database unavailable: ${what}; it did not commit, as pg_xact_status showed after ${after}`,
      { cause: failure },
    );
  throw new DbUnavailableError(
    `database unavailable: ${what}; its outcome is unknown: nothing settled it within ${after}. ` +
      `SELECT pg_xact_status('${mark.xid}') on the server tells whether the change was saved`,
    { cause: failure },
  );
}
