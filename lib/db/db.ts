// The one database interface the site uses, over node-postgres (postgres.ts) and the embedded
// PGlite (pglite.ts), so scripts and tests run the same SQL against either; and how a failure
// is classified for the callers above.
import type pg from 'pg';

type Row = Record<string, unknown>;

export interface QueryOptions {
  /**
   * Prepares the statement under this name once per connection, sparing PostgreSQL its
   * parsing (node-postgres named statements). PostgreSQL plans it for the values of each of
   * the first five runs, and afterwards once for all unless that plan looks dearer: fine for
   * a lookup by key. It never chose the plan for all values for a search, which planned it
   * again for every one: genericPlan below. One name, one text, per process.
   */
  name?: string;
  /**
   * A short statement, such as a lookup by key: sent on one of a few connections kept in
   * pipeline mode, which take statements from any number of requests without waiting for the
   * answers before; the statements of one turn of the event loop go out in one write and the
   * server answers them one after the other without sleeping in between. Not for a statement
   * that may take long: the ones behind it on its connection wait for it. Only for a read: it may
   * run twice, when its connection stops answering for a while (DB_PIPELINE_RETRY_MS). Outside
   * transactions on PostgreSQL; elsewhere it changes nothing.
   */
  pipeline?: boolean;
  /**
   * A statement time-out shorter than the site's (STATEMENT_TIMEOUT_MS), for a statement whose
   * cost a request decides (a search): it runs in a transaction of its own that sets it, on the
   * connections set aside for such statements where there are (BEGIN, statement and COMMIT in
   * one write), else on the pool's. Not with pipeline. PGlite does not enforce time-outs.
   */
  timeoutMs?: number;
  /**
   * With timeoutMs: the planner takes no sequential scan where an index can answer. For a
   * statement whose LIMIT makes PostgreSQL hope to find its rows early in a walk through the
   * table (it guesses a word's share of the rows; when the guess is high, a search walked 100 ms
   * where the index answers in 2).
   */
  indexScans?: boolean;
  /**
   * With timeoutMs and a name: the statement is planned once on each connection, for any values,
   * and the plan kept (plan_cache_mode = force_generic_plan), where PostgreSQL would plan it
   * again for each one's values when it prices the kept plan higher. For a statement whose best
   * plan does not depend on its values; a search's planning was about a seventh of its time.
   * The plan is made under the settings of the statement's first run on the connection and kept
   * when they change: a name must always come with the same indexScans. No effect without a
   * name or behind a pooler (DB_PREPARED_STATEMENTS=off), where statements are unnamed.
   */
  genericPlan?: boolean;
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
  /** The connections as the metrics show them; null for PGlite, which has one and no pool. */
  stats(): PoolStats | null;
  close(): Promise<void>;
}

export interface PoolStats {
  /** Connections of the pool, open or opening. */
  total: number;
  idle: number;
  /** Statements and transactions waiting for a connection of the pool. */
  waiting: number;
  /** Statements on the pipelined connections (the searches' own included) not answered yet, or waiting for one. */
  pipelined: number;
  /** Pipelined statements sent again on another connection since the start (DB_PIPELINE_RETRY_MS). */
  retried: number;
}

/** The database could not be reached or gave up: the request may succeed later (the front answers 503). */
export class DbUnavailableError extends Error {
  override name = 'DbUnavailableError';
}

/** A value the database cannot hold or compare, such as a NUL byte: the request's fault (the front answers 400). */
export class DbInputError extends Error {
  override name = 'DbInputError';
}

/** A statement as node-postgres takes it: named (prepared once per connection) when asked. */
export function toConfig(
  text: string,
  params: readonly unknown[] | undefined,
  options: QueryOptions | undefined,
): pg.QueryConfig {
  const values = params as unknown[] | undefined;
  return options?.name ? { name: options.name, text, values } : { text, values };
}

// Connection failures become DbUnavailableError so the front can answer 503, not 500.
const unavailableCodes = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EHOSTUNREACH']);
// 25006: a read-only server where the primary was (a standby, after a failover).
const unavailableSqlStates = new Set([
  '57P01',
  '57P02',
  '57P03',
  '53300',
  '08000',
  '08003',
  '08006',
  '08001',
  '08004',
  '25006',
]);
// PgBouncer says with 08P01 that it has no server connection to give; PostgreSQL uses the same
// code for a malformed message, which is a bug, not an outage.
const poolerUnavailable =
  /query_wait_timeout|cannot connect to server|server conn crashed|server login has been failing|no more connections allowed/i;

// Text PostgreSQL cannot hold, such as a NUL byte in a search term or a user name: only a
// request can bring it (SQLSTATE 22021, 22P05).
const badTextSqlStates = new Set(['22021', '22P05']);

export function isUnavailable(err: unknown): boolean {
  return classifyError(err) instanceof DbUnavailableError;
}

/** A failure as the callers above see it: unavailable (try later), bad input, or as it was. */
export function classifyError(err: unknown): unknown {
  if (!(err instanceof Error)) return err;
  const code = (err as { code?: string }).code;
  if (code && badTextSqlStates.has(code)) {
    return new DbInputError(
      'The request contains a character that cannot be stored or searched, such as a NUL byte; remove it and try again.',
      { cause: err },
    );
  }
  if (
    code &&
    (unavailableCodes.has(code) ||
      unavailableSqlStates.has(code) ||
      (code === '08P01' && poolerUnavailable.test(err.message)))
  ) {
    return new DbUnavailableError(`database unavailable: ${err.message}`, { cause: err });
  }
  if (
    /timeout exceeded when trying to connect|Connection terminated|Query read timeout|not queryable|Client was closed/i.test(
      err.message,
    )
  ) {
    return new DbUnavailableError(`database unavailable: ${err.message}`, { cause: err });
  }
  return err;
}
