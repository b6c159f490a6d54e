// The database room: one small interface over PostgreSQL (a pool, pipelined connections, COMMITs
// that got no answer looked up) and the embedded PGlite; migrations; the data version that
// remembered results are checked against. Knows no HTTP.
// May import: none.
import type { Config } from '../config.ts';
import type { Db } from './db.ts';
import { Failover, findPrimary, hostOf, splitHosts } from './hosts.ts';
import { loadDemoData, migrate, migrationVersions, pendingMigrations } from './migrate.ts';
import { openPglite } from './pglite.ts';
import { openPostgres } from './postgres.ts';
import { Replicas } from './replicas.ts';

export type { CommitMark } from './commit-outcome.ts';
export { beginWithMark, findCommitOutcome } from './commit-outcome.ts';
export { DataVersion, ResultCache } from './data-version.ts';
export type { Db, PoolStats, QueryOptions, Queryable } from './db.ts';
export { DbInputError, DbUnavailableError } from './db.ts';
export { migrate, migrationVersions, pendingMigrations } from './migrate.ts';
export { openPglite } from './pglite.ts';
export { openPostgres } from './postgres.ts';
export type { ReadRoute } from './replicas.ts';
export { failsOnReplica, Replicas, unknownPosition } from './replicas.ts';

interface DatabaseEvents {
  /** A connection failed outside any statement. */
  onError?: (err: Error) => void;
  /** A COMMIT that got no answer turned out to have committed. */
  onWarning?: (message: string) => void;
}

/**
 * DATABASE_URL's PostgreSQL, or the embedded PGlite in DATA_DIR, with the configured time-outs and
 * sizes. Of several hosts (postgres://h1,h2/db) the one that accepts writes; a URL that names only
 * standbys stops the start with a message that says so.
 */
export async function openDatabase(config: Config, events: DatabaseEvents = {}): Promise<Db> {
  if (!config.databaseUrl) {
    if (config.databaseReplicaUrls.length > 0)
      throw new Error('DATABASE_REPLICA_URL needs DATABASE_URL: the embedded database (PGlite) has no replicas.');
    return openPglite({ dataDir: config.dataDir });
  }
  const urls = splitHosts(config.databaseUrl);
  const { primary, roles } = await findPrimary(urls, config.dbConnectTimeoutMs);
  if (!primary && roles.includes('standby')) {
    const standbys = urls
      .filter((_, i) => roles[i] === 'standby')
      .map(hostOf)
      .join(', ');
    throw new Error(
      `DATABASE_URL names no primary: ${standbys} ${roles.filter((r) => r === 'standby').length > 1 ? 'are standbys' : 'is a standby'} (in recovery) and cannot take changes or migrations. ` +
        'Point DATABASE_URL at the primary, and name standbys in DATABASE_REPLICA_URL to read from them.',
    );
  }
  const open = (url: string) => openPostgresFor(config, url, events);
  // None answers: the first host, and the start fails on it as for one host, saying why.
  if (urls.length === 1) return open(urls[0] as string);
  return new Failover({
    urls,
    primary: primary ?? (urls[0] as string),
    open,
    connectTimeoutMs: config.dbConnectTimeoutMs,
    onWarning: events.onWarning,
  });
}

/** DATABASE_REPLICA_URL's standbys for the reads of safe requests, or null when there are none. */
export function openReplicas(config: Config, primary: Db, events: DatabaseEvents = {}): Replicas | null {
  if (config.databaseReplicaUrls.length === 0) return null;
  return new Replicas({
    urls: config.databaseReplicaUrls,
    open: (url) => openPostgresFor(config, url, events),
    primary,
    maxLagMs: config.replicaMaxLagMs,
    waitMs: config.replicaWaitMs,
    onWarning: events.onWarning,
  });
}

function openPostgresFor(config: Config, url: string, events: DatabaseEvents): Db {
  return openPostgres({
    connectionString: url,
    statementTimeoutMs: config.statementTimeoutMs,
    maxConnections: config.dbPoolMax,
    pipelineConnections: config.dbPipelineConnections,
    pipelineDepth: config.dbPipelineDepth,
    pipelineRetryMs: config.dbPipelineRetryMs,
    timedConnections: config.searchConcurrency,
    preparedStatements: config.dbPreparedStatements,
    connectTimeoutMs: config.dbConnectTimeoutMs,
    outcomeTimeoutMs: config.dbOutcomeTimeoutMs,
    ...events,
  });
}

/**
 * What every start does before serving: migrate, and with DEMO_DATA fill an empty database.
 * On PostgreSQL, pending migrations run on connections of their own under MIGRATION_TIMEOUT_MS:
 * one that writes every row of a large table takes minutes, where a request's statement gets
 * STATEMENT_TIMEOUT_MS.
 */
export async function prepareDatabase(db: Db, config: Config, events: DatabaseEvents = {}): Promise<void> {
  // Most starts have none: one read, and no transaction. Several processes that find the same
  // ones pending wait for each other in migrate(), which looks again.
  if ((await pendingMigrations(db, await migrationVersions(config.sqlDir))).length > 0) {
    // PGlite enforces no statement time-out, and its one connection is db.
    const own = config.databaseUrl
      ? await openDatabase(
          { ...config, statementTimeoutMs: config.migrationTimeoutMs, dbPipelineConnections: 0, dbPoolMax: 1 },
          events,
        )
      : db;
    try {
      await migrate(own, config.sqlDir);
    } finally {
      if (own !== db) await own.close();
    }
  }
  if (config.demoData && (await loadDemoData(db, config.sqlDir)))
    console.log('portfolio: loaded the demo data into the empty database');
}
