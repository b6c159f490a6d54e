// The one place that reads process.env: every other module receives a Config.
// Each variable is listed with its default in docs/operations.md (Configuration).
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export interface Config {
  port: number;
  host: string;
  /** PostgreSQL connection string; null means the embedded PGlite in dataDir. */
  databaseUrl: string | null;
  dataDir: string;
  /** Uploaded person pictures, served at /bilder/ (content-hash names). */
  picturesDir: string;
  /** The search index's snapshot file (docs/operations.md, The search index); null: none. */
  searchSnapshot: string | null;
  /** Largest picture upload in bytes (413 beyond). */
  pictureMaxBytes: number;
  /** Largest picture in pixels, width times height: a small file may unpack to gigabytes (422 beyond). */
  pictureMaxPixels: number;
  /** Picture conversions of one process at once; each holds one of libuv's threads while it runs. */
  pictureConcurrency: number;
  /** Uploads of one process that may wait for a conversion; more are 503 with Retry-After. */
  pictureQueue: number;
  /** Load the demo persons into an empty database on start. */
  demoData: boolean;
  /** Fixed origin (and optional path prefix) for absolute links, e.g. https://example.org */
  baseUrl: string | null;
  allowedHosts: string[];
  /** Addresses, CIDR ranges, 'loopback' or 'private': the proxies whose forwarding headers are believed. */
  trustedProxies: string[];
  /** Addresses and ranges, as trustedProxies, that may read /metrics; others get 404. */
  metricsAllow: string[];
  /** Write the health checks and metrics scrapes to the access log too. */
  logProbes: boolean;
  /** The primary's (or the one process's) pid, for `npm run reload` and init scripts; null for none. */
  pidFile: string | null;
  /** Whether PID_FILE named the file: then a file that cannot be written stops the start. */
  pidFileRequired: boolean;
  displayErrors: boolean;
  production: boolean;
  logDir: string;
  accessLog: string;
  errorLog: string;
  rulesFile: string;
  scriptsDir: string;
  templatesDir: string;
  publicDir: string;
  sqlDir: string;
  sessionIdleMinutes: number;
  sessionMaxHours: number;
  webConcurrency: number;
  /** Standbys that serve reads (GET, HEAD); empty for none. */
  databaseReplicaUrls: string[];
  /** A replica further behind the primary than this is skipped. */
  replicaMaxLagMs: number;
  /** How long a read waits for a replica to replay the client's own last change before it asks the primary. */
  replicaWaitMs: number;
  /** Named (prepared) statements; off behind a pooler in transaction mode, such as PgBouncer's. */
  dbPreparedStatements: boolean;
  /** Connections of each process's pool. */
  dbPoolMax: number;
  /**
   * Connections of each process that carry short statements in pipeline mode; 0 sends them
   * through the pool. 2 by default: fewer PostgreSQL processes to share the processor, and with
   * dbPipelineRetryMs one that loses it holds nothing up for long (docs/performance.md, Tail
   * latency in cluster mode).
   */
  dbPipelineConnections: number;
  /**
   * Statements each pipelined connection carries at once; more wait in the process, in turn, for
   * the first connection with room (docs/performance.md, Tail latency in cluster mode).
   */
  dbPipelineDepth: number;
  /**
   * Milliseconds a pipelined connection may go without answering before its statements are sent
   * again on another that answers (0: never); a PostgreSQL process that loses the processor for
   * a while then holds up none for longer (docs/performance.md, Tail latency in cluster mode).
   */
  dbPipelineRetryMs: number;
  /** Milliseconds a database statement may run before it is cancelled. */
  statementTimeoutMs: number;
  /**
   * Bytes a process keeps of remembered results, rendered documents and answers of a type of
   * their own, a third each, shared by the primary and the replicas (docs/development.md).
   */
  keptMaxBytes: number;
  /** Search (docs/interface.md, Search): hits of each kind taken from the index, its time-out, its share of connections. */
  searchMaxHits: number;
  searchTimeoutMs: number;
  searchConcurrency: number;
  searchWaitMs: number;
  /** Views, tabs and scopes of other Primo installations, mapped to ours: 01XYZ_INST:MAIN=druck. */
  searchViewAliases: Record<string, string>;
  /** Milliseconds a request waits for a database connection before it is answered 503. */
  dbConnectTimeoutMs: number;
  /** Milliseconds a change whose COMMIT got no answer keeps asking whether it committed. */
  dbOutcomeTimeoutMs: number;
  /** Statement time-out of migrations, which run on connections of their own. */
  migrationTimeoutMs: number;
  /**
   * Seconds a shared cache (Varnish, a CDN) may keep a public document without asking again
   * (s-maxage); 0 leaves them revalidated on every use (docs/operations.md, An edge cache).
   */
  sharedCacheSeconds: number;
  /** The caches told to drop what a change touched, by its surrogate keys (PURGE_URLS). */
  purgeUrls: string[];
  /** Milliseconds an upstream of a P rule may stay silent before the client gets 504. */
  proxyTimeoutMs: number;
  /**
   * Set by the primary in the processes it forks, never by hand: where the search process
   * listens, and whether this process is it (lib/search/service.ts). Null in the one process of
   * WEB_CONCURRENCY=1, which keeps the index itself.
   */
  searchProcess: { socket: string; serves: boolean } | null;
}

export type Env = Record<string, string | undefined>;

/**
 * The project folder, which relative paths start from. One folder up from this file, and just
 * as much from the bundle dist/server.js (npm run build), which sits one folder deep as lib/ does.
 */
export const projectRoot = path.dirname(path.dirname(fileURLToPath(import.meta.url)));

export function readConfig(env: Env = process.env): Config {
  const production = env.NODE_ENV === 'production';
  const databaseUrl = env.DATABASE_URL?.trim() || null;
  const logDir = path.resolve(projectRoot, env.LOG_DIR ?? 'logs');
  const dbPoolMax = readInteger(env, 'DB_POOL_MAX', 10, 1, 1000);
  const toLogTarget = (name: string) => (env.LOG_DIR === '-' ? '-' : path.join(logDir, name));
  const webConcurrency = readInteger(env, 'WEB_CONCURRENCY', 1, 1, 64);
  const searchProcess = env.PORTFOLIO_SEARCH_SOCKET
    ? { socket: env.PORTFOLIO_SEARCH_SOCKET, serves: env.PORTFOLIO_ROLE === 'search' }
    : null;
  return {
    port: readInteger(env, 'PORT', 8080, 0, 65535),
    host: env.HOST ?? '127.0.0.1',
    databaseUrl,
    dataDir: path.resolve(projectRoot, env.DATA_DIR ?? 'data'),
    picturesDir: path.resolve(projectRoot, env.PICTURES_DIR ?? path.join(env.DATA_DIR ?? 'data', 'bilder')),
    searchSnapshot:
      env.SEARCH_SNAPSHOT === 'off'
        ? null
        : path.resolve(projectRoot, env.SEARCH_SNAPSHOT || path.join(env.DATA_DIR ?? 'data', 'search-index.snapshot')),
    pictureMaxBytes: readInteger(env, 'PICTURE_MAX_BYTES', 10 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
    pictureMaxPixels: readInteger(env, 'PICTURE_MAX_PIXELS', 50_000_000, 10_000, 1_000_000_000),
    pictureConcurrency: readPictureConcurrency(env),
    pictureQueue: readInteger(env, 'PICTURE_QUEUE', 4, 0, 1000),
    demoData: readBoolean(env, 'DEMO_DATA', databaseUrl === null),
    baseUrl: readBaseUrl(env.BASE_URL),
    allowedHosts: (env.ALLOWED_HOSTS ?? 'localhost,127.0.0.1,[::1]')
      .split(',')
      .map((h) => h.trim().toLowerCase())
      .filter(Boolean),
    trustedProxies: readList(env.TRUSTED_PROXIES ?? ''),
    metricsAllow: readList(env.METRICS_ALLOW ?? 'loopback'),
    logProbes: readBoolean(env, 'LOG_PROBES', false),
    // As Apache's PidFile logs/httpd.pid.
    pidFile:
      env.PID_FILE !== undefined
        ? env.PID_FILE === ''
          ? null
          : path.resolve(projectRoot, env.PID_FILE)
        : env.LOG_DIR === '-'
          ? null
          : path.join(logDir, 'portfolio.pid'),
    pidFileRequired: env.PID_FILE !== undefined && env.PID_FILE !== '',
    displayErrors: readBoolean(env, 'DISPLAY_ERRORS', !production),
    production,
    logDir,
    accessLog: toLogTarget('access.log'),
    errorLog: toLogTarget('error.log'),
    rulesFile: path.resolve(projectRoot, env.REWRITE_RULES ?? 'rewrite-rules.json'),
    scriptsDir: path.resolve(projectRoot, env.SCRIPTS_DIR ?? 'scripts'),
    templatesDir: path.resolve(projectRoot, env.TEMPLATES_DIR ?? 'templates'),
    publicDir: path.resolve(projectRoot, env.PUBLIC_DIR ?? 'public'),
    sqlDir: path.resolve(projectRoot, 'sql'),
    sessionIdleMinutes: readInteger(env, 'SESSION_IDLE_MINUTES', 30, 1, 7 * 24 * 60),
    sessionMaxHours: readInteger(env, 'SESSION_MAX_HOURS', 12, 1, 30 * 24),
    webConcurrency,
    databaseReplicaUrls: readUrls(env.DATABASE_REPLICA_URL ?? ''),
    replicaMaxLagMs: readInteger(env, 'REPLICA_MAX_LAG_MS', 5000, 0, 3_600_000),
    replicaWaitMs: readInteger(env, 'REPLICA_WAIT_MS', 100, 0, 10_000),
    dbPreparedStatements: readBoolean(env, 'DB_PREPARED_STATEMENTS', true),
    dbPoolMax,
    dbPipelineConnections: readInteger(env, 'DB_PIPELINE_CONNECTIONS', 2, 0, 64),
    dbPipelineDepth: readInteger(env, 'DB_PIPELINE_DEPTH', 16, 1, 1000),
    dbPipelineRetryMs: readInteger(env, 'DB_PIPELINE_RETRY_MS', 20, 0, 60_000),
    statementTimeoutMs: readInteger(env, 'STATEMENT_TIMEOUT_MS', 5000, 100, 600_000),
    keptMaxBytes: readInteger(env, 'KEPT_MAX_MB', 48, 1, 65_536) * 1024 * 1024,
    searchMaxHits: readInteger(env, 'SEARCH_MAX_HITS', 1000, 10, 100_000),
    searchTimeoutMs: readInteger(env, 'SEARCH_TIMEOUT_MS', 250, 50, 600_000),
    // A third of the pool by default, each search on a connection of its own taken out of it: the
    // rest stays for person pages, lists and logins, at least one (lib/db/postgres.ts). The search
    // process answers every worker's searches: its share is theirs together, within its pool.
    searchConcurrency: readSearchConcurrency(env, dbPoolMax, searchProcess?.serves ? webConcurrency : 1),
    searchWaitMs: readInteger(env, 'SEARCH_WAIT_MS', 5000, 0, 600_000),
    searchViewAliases: readAliases(env.SEARCH_VIEW_ALIASES ?? ''),
    dbConnectTimeoutMs: readInteger(env, 'DB_CONNECT_TIMEOUT_MS', 3000, 100, 60_000),
    dbOutcomeTimeoutMs: readInteger(env, 'DB_OUTCOME_TIMEOUT_MS', 10_000, 0, 600_000),
    migrationTimeoutMs: readInteger(env, 'MIGRATION_TIMEOUT_MS', 3_600_000, 1000, 86_400_000),
    proxyTimeoutMs: readInteger(env, 'PROXY_TIMEOUT_MS', 30_000, 100, 600_000),
    sharedCacheSeconds: readInteger(env, 'SHARED_CACHE_SECONDS', 86_400, 0, 31_536_000),
    purgeUrls: readPurgeUrls(env.PURGE_URLS ?? ''),
    searchProcess,
  };
}

/**
 * SEARCH_CONCURRENCY, below DB_POOL_MAX: the searches' connections come out of the pool, which
 * keeps one or more; for the searches of `workers` processes, as many times that, within it.
 */
function readSearchConcurrency(env: Env, pool: number, workers: number): number {
  const value = readInteger(env, 'SEARCH_CONCURRENCY', Math.max(1, Math.floor(pool / 3)), 1, 1000);
  if (env.SEARCH_CONCURRENCY && pool > 1 && value >= pool) {
    throw new Error(
      `SEARCH_CONCURRENCY=${value} leaves no connection of DB_POOL_MAX=${pool} for the rest: the searches' connections are taken out of the pool. Set it below ${pool}, or raise DB_POOL_MAX.`,
    );
  }
  return workers > 1 ? Math.max(1, Math.min(pool - 1, value * workers)) : value;
}

/**
 * PICTURE_CONCURRENCY, which must leave a thread of libuv's pool (UV_THREADPOOL_SIZE, 4 by
 * default) to files: a conversion holds one while it runs, and two password checks two more
 * (lib/auth/password.ts).
 */
function readPictureConcurrency(env: Env): number {
  const value = readInteger(env, 'PICTURE_CONCURRENCY', 1, 1, 64);
  const pool = readInteger(env, 'UV_THREADPOOL_SIZE', 4, 1, 1024);
  if (env.PICTURE_CONCURRENCY && value + 2 >= pool) {
    throw new Error(
      `PICTURE_CONCURRENCY=${value} leaves no thread of libuv's pool (UV_THREADPOOL_SIZE=${pool}) for files: each conversion holds one, and two password checks two more. Raise UV_THREADPOOL_SIZE to ${value + 3} or more, or lower PICTURE_CONCURRENCY.`,
    );
  }
  return value;
}

/** Connection URLs separated by commas; a comma inside one (several hosts: postgres://h1,h2/db) stays. */
function readUrls(raw: string): string[] {
  return raw
    .split(/,(?=\s*postgres(?:ql)?:\/\/)/)
    .map((url) => url.trim())
    .filter(Boolean);
}

/** PURGE_URLS: http:// or https:// URLs separated by commas or spaces. */
function readPurgeUrls(raw: string): string[] {
  return readList(raw).map((url) => {
    let parsed: URL | null = null;
    try {
      parsed = new URL(url);
    } catch {}
    if (!parsed || (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')) {
      throw new Error(`PURGE_URLS: "${url}" is not an http:// or https:// URL; e.g. http://127.0.0.1:6081/.`);
    }
    return parsed.href;
  });
}

/** name=value pairs separated by commas or spaces; a name may hold colons (01XYZ_INST:MAIN=druck). */
function readAliases(raw: string): Record<string, string> {
  const aliases: Record<string, string> = {};
  for (const pair of readList(raw)) {
    const at = pair.lastIndexOf('=');
    if (at <= 0 || at === pair.length - 1)
      throw new Error(`SEARCH_VIEW_ALIASES: "${pair}" is not name=value; e.g. 01XYZ_INST:MAIN=portfolio.`);
    aliases[pair.slice(0, at)] = pair.slice(at + 1);
  }
  return aliases;
}

function readList(raw: string): string[] {
  return raw.split(/[\s,]+/).filter(Boolean);
}

function readInteger(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new Error(`${name}=${raw} is not an integer between ${min} and ${max}; fix or unset it.`);
  }
  return value;
}

function readBoolean(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name]?.trim().toLowerCase();
  if (raw === undefined || raw === '') return fallback;
  if (['1', 'true', 'on', 'yes'].includes(raw)) return true;
  if (['0', 'false', 'off', 'no'].includes(raw)) return false;
  throw new Error(`${name}=${env[name]} is not a boolean; use 1 or 0.`);
}

function readBaseUrl(raw: string | undefined): string | null {
  if (!raw) return null;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new Error(`BASE_URL=${raw} is not an absolute URL; use for example https://example.org`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new Error(`BASE_URL=${raw} must use http or https.`);
  }
  // Without a trailing slash, so paths can be appended as they are.
  return (url.origin + url.pathname).replace(/\/+$/, '');
}
