// The database room: one small interface over PostgreSQL (a pool, pipelined connections, COMMITs
// that got no answer looked up) and the embedded PGlite; migrations; the data version that
// remembered results are checked against. Knows no HTTP.
// May import: none.
import type { Config } from '../config.ts';
import type { Db } from './db.ts';
import { openPglite } from './pglite.ts';
import { openPostgres } from './postgres.ts';

export type { CommitMark } from './commit-outcome.ts';
export { beginWithMark, findCommitOutcome } from './commit-outcome.ts';
export { DataVersion, ResultCache } from './data-version.ts';
export type { Db, PoolStats, QueryOptions, Queryable } from './db.ts';
export { DbInputError, DbUnavailableError } from './db.ts';
export { migrate, migrationVersions, pendingMigrations, prepareDatabase } from './migrate.ts';
export { openPglite } from './pglite.ts';
export { openPostgres } from './postgres.ts';

interface DatabaseEvents {
  /** A connection failed outside any statement. */
  onError?: (err: Error) => void;
  /** A COMMIT that got no answer turned out to have committed. */
  onWarning?: (message: string) => void;
}

/** DATABASE_URL's PostgreSQL, or the embedded PGlite in DATA_DIR, with the configured time-outs. */
export async function openDatabase(config: Config, events: DatabaseEvents = {}): Promise<Db> {
  if (!config.databaseUrl) return openPglite({ dataDir: config.dataDir });
  return openPostgres({
    connectionString: config.databaseUrl,
    statementTimeoutMs: config.statementTimeoutMs,
    maxConnections: config.dbPoolMax,
    pipelineConnections: config.dbPipelineConnections,
    preparedStatements: config.dbPreparedStatements,
    connectTimeoutMs: config.dbConnectTimeoutMs,
    outcomeTimeoutMs: config.dbOutcomeTimeoutMs,
    ...events,
  });
}
