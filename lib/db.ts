// One small database interface over node-postgres (pg.Pool) and the embedded PGlite,
// so scripts and tests run the same SQL against either backend.
import pg from 'pg';
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
}

export interface Queryable {
  /** Runs one statement with $1… placeholders and returns its rows. */
  query<R = Row>(sql: string, params?: readonly unknown[], options?: QueryOptions): Promise<R[]>;
  /** Runs a script of several statements without parameters (migrations). */
  exec(sql: string): Promise<void>;
}

export interface Db extends Queryable {
  readonly kind: 'postgres' | 'pglite';
  /** Runs fn in one transaction: committed when fn resolves, rolled back when it throws. */
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
  onError?: (err: Error) => void;
}

export function openPostgres(options: PostgresOptions): Db {
  const pool = new pg.Pool({
    connectionString: options.connectionString,
    max: options.maxConnections ?? 10,
    connectionTimeoutMillis: options.connectTimeoutMs ?? 3000,
    idleTimeoutMillis: 30_000,
    statement_timeout: options.statementTimeoutMs,
    // The server enforces statement_timeout only while it runs; a server that hangs (stopped,
    // unreachable) is given up on here, so no request waits longer than the statement would.
    query_timeout: options.statementTimeoutMs + 1000,
    idle_in_transaction_session_timeout: options.statementTimeoutMs * 2,
    application_name: 'portfolio',
  });
  // An idle client that loses its server emits here; without a listener the process dies.
  pool.on('error', (err) => options.onError?.(err));

  const wrap = async <T>(run: () => Promise<T>): Promise<T> => {
    try {
      return await run();
    } catch (err) {
      throw classifyError(err);
    }
  };

  return {
    kind: 'postgres',
    query: <R>(sql: string, params?: readonly unknown[], queryOptions?: QueryOptions) =>
      wrap(async () => (await pool.query(toConfig(sql, params, queryOptions))).rows as R[]),
    exec: (sql) => wrap(async () => { await pool.query(sql); }),
    transaction: (fn) => wrap(async () => {
      const client = await pool.connect();
      const onClientError = (err: Error) => options.onError?.(err);
      client.on('error', onClientError);
      let broken = false;
      try {
        await client.query('BEGIN');
        const result = await fn({
          query: async <R>(sql: string, params?: readonly unknown[], queryOptions?: QueryOptions) =>
            (await client.query(toConfig(sql, params, queryOptions))).rows as R[],
          exec: async (sql) => { await client.query(sql); },
        });
        await client.query('COMMIT');
        return result;
      } catch (err) {
        try {
          await client.query('ROLLBACK');
        } catch {
          broken = true; // the connection is gone; do not return it to the pool
        }
        throw err;
      } finally {
        client.off('error', onClientError);
        client.release(broken);
      }
    }),
    close: () => pool.end(),
  };
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
