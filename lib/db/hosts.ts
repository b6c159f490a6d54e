// Several hosts in one connection URL, as libpq writes them (postgres://h1:5432,h2:5433/db), which
// node-postgres does not parse: the primary is the host that accepts writes, and after it is lost
// (a failover promotes a standby) the next statement that fails starts a search for the new one
// (docs/operations.md, The database tier).
import pg from 'pg';
import type { Db, PoolStats, QueryOptions, Queryable } from './db.ts';
import { DbUnavailableError } from './db.ts';

/** One URL per host of url, in its order; the query keeps everything but target_session_attrs, which is what the search does. */
export function splitHosts(url: string): string[] {
  const match = /^(postgres(?:ql)?:\/\/)([^@/?#]*@)?([^/?#]*)(.*)$/i.exec(url.trim());
  if (!match) return [url];
  const [, scheme, user = '', hostList = '', rest = ''] = match;
  const [pathPart = '', query = ''] = rest.split(/\?(.*)/s);
  const params = new URLSearchParams(query);
  params.delete('target_session_attrs');
  const tail = pathPart + (params.size > 0 ? `?${params}` : '');
  const hosts = hostList.split(',').map((host) => host.trim());
  if (hosts.length > 1 && hosts.some((host) => host === '')) {
    throw new Error(`DATABASE_URL names an empty host in "${hostList}"; write the hosts as host:port,host:port.`);
  }
  return hosts.map((host) => `${scheme}${user}${host}${tail}`);
}

/** The host part of a URL, for messages: no user, no password. */
export function hostOf(url: string): string {
  return /^postgres(?:ql)?:\/\/(?:[^@/?#]*@)?([^/?#]*)/i.exec(url)?.[1] ?? url;
}

type Role = 'primary' | 'standby' | 'unreachable';

/** Whether the server at url accepts writes (pg_is_in_recovery() is false), asked on a connection of its own. */
export async function roleOf(url: string, timeoutMs: number): Promise<Role> {
  const client = new pg.Client({
    connectionString: url,
    connectionTimeoutMillis: timeoutMs,
    query_timeout: timeoutMs,
    application_name: 'portfolio',
  });
  client.on('error', () => undefined);
  try {
    await client.connect();
    const { rows } = await client.query<{ standby: boolean }>('SELECT pg_is_in_recovery() AS standby');
    return rows[0]?.standby ? 'standby' : 'primary';
  } catch {
    return 'unreachable';
  } finally {
    client.end().catch(() => undefined);
  }
}

/** The first of urls whose server accepts writes; null when none does right now. */
export async function findPrimary(
  urls: readonly string[],
  timeoutMs: number,
): Promise<{ primary: string | null; roles: Role[] }> {
  const roles = await Promise.all(urls.map((url) => roleOf(url, timeoutMs)));
  const index = roles.indexOf('primary');
  return { primary: index < 0 ? null : (urls[index] as string), roles };
}

interface FailoverOptions {
  /** One URL per host, in the order to prefer them. */
  urls: string[];
  /** The host found at start. */
  primary: string;
  open: (url: string) => Db;
  connectTimeoutMs: number;
  /** The pause between two searches while no host accepts writes. */
  retryMs?: number;
  onWarning?: (message: string) => void;
}

/**
 * The primary among several hosts. Statements go to the host found last; one that fails as
 * unavailable (refused, cut, read-only after a demotion) starts a search in the background, one
 * at a time: every host is asked whether it accepts writes, and the first that does takes over.
 * Meanwhile statements still go to the old host and fail as unavailable (503) if it is gone.
 */
export class Failover implements Db {
  readonly kind = 'postgres' as const;
  private url: string;
  private db: Db;
  private searching: Promise<void> | null = null;
  /** When the last search ended. */
  private searched = -Infinity;
  private closed = false;
  private readonly retired: Promise<void>[] = [];

  constructor(private readonly options: FailoverOptions) {
    this.url = options.primary;
    this.db = options.open(options.primary);
  }

  query<R>(sql: string, params?: readonly unknown[], queryOptions?: QueryOptions): Promise<R[]> {
    return this.watch(this.db.query<R>(sql, params, queryOptions));
  }

  exec(sql: string): Promise<void> {
    return this.watch(this.db.exec(sql));
  }

  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
    return this.watch(this.db.transaction(fn));
  }

  stats(): PoolStats | null {
    return this.db.stats();
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.searching;
    await Promise.all([this.db.close(), ...this.retired]);
  }

  private async watch<T>(running: Promise<T>): Promise<T> {
    try {
      return await running;
    } catch (err) {
      // At most one search a second: failures under load (no free connection) must not add a connection to every host each.
      if (err instanceof DbUnavailableError && !this.closed && performance.now() - this.searched >= 1000) {
        this.searching ??= this.search().finally(() => {
          this.searching = null;
          this.searched = performance.now();
        });
      }
      throw err;
    }
  }

  private async search(): Promise<void> {
    const { urls, connectTimeoutMs, retryMs = 250 } = this.options;
    const started = performance.now();
    while (!this.closed) {
      // The host in use first: while it accepts writes nothing moves, even if a host before it
      // in the URL is back as a primary of its own (an old primary must not take over again).
      if ((await roleOf(this.url, connectTimeoutMs)) === 'primary') return;
      const { primary } = await findPrimary(
        urls.filter((url) => url !== this.url),
        connectTimeoutMs,
      );
      if (primary && !this.closed) {
        const old = this.db;
        this.url = primary;
        this.db = this.options.open(primary);
        // Statements already on their way to the old host end there.
        this.retired.push(old.close().catch(() => undefined));
        this.options.onWarning?.(
          `the database primary is now ${hostOf(primary)}, found ${Math.round(performance.now() - started)} ms after a statement failed`,
        );
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, retryMs));
    }
  }
}
