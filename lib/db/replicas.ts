// Reads from streaming replicas, with each client reading its own writes: a change's client is
// given the primary's WAL position after it (a signed cookie, lib/auth/written-mark.ts), and its
// reads go to a replica only once that replica has replayed so far (docs/operations.md, The
// database tier). Everyone else may read a replica up to its lag behind the primary.
import type { Db, QueryOptions } from './db.ts';
import { DbUnavailableError } from './db.ts';
import { hostOf } from './hosts.ts';

interface ReplicaOptions {
  urls: string[];
  open: (url: string) => Db;
  primary: Db;
  /** A replica further behind than this is skipped. */
  maxLagMs: number;
  /** How long a read waits for a replica to replay the client's own change before it goes to the primary. */
  waitMs: number;
  /** How often the positions are read (default 200 ms). */
  pollMs?: number;
  onWarning?: (message: string) => void;
}

interface Replica {
  host: string;
  db: Db;
  /** The WAL position it has replayed; null while it does not answer. */
  replayed: bigint | null;
  /** At most how long ago the primary was where the replica is now; Infinity while unknown. */
  lagMs: number;
  /** A question for its position on its way, shared by the reads that wait for it. */
  asking: Promise<bigint | null> | null;
  /** Statements it answered for requests, for the metrics. */
  reads: number;
}

/**
 * Where one safe request reads. All of its statements go to one server, so that its data and the
 * data version its results are kept under belong together: a replica, or the primary. If the
 * replica fails a statement (gone, or a conflict with what it replays), that statement and all
 * that follow go to the primary, and the request's results are not kept.
 */
export interface ReadRoute {
  db: Db;
  /** The server whose data version and kept results apply: the replica's Db, or the primary. */
  readonly server: Db;
  /** Moves the rest of the request to the primary. */
  fallBack(): void;
  /** Whether the request's statements went to more than one server: its results are not kept. */
  readonly mixed: boolean;
}

/** The written mark of a change whose position could not be read: its client reads from the primary. */
export const unknownPosition = (1n << 63n) - 1n;

/** A primary that fails this many polls in a row counts as down. */
const failuresForDown = 3;

/** A WAL position as PostgreSQL writes it (16/B374D848) as a number. */
export function parseLsn(text: string): bigint {
  const [high = '0', low = '0'] = text.split('/');
  return (BigInt(`0x${high}`) << 32n) + BigInt(`0x${low}`);
}

export function formatLsn(lsn: bigint): string {
  return `${(lsn >> 32n).toString(16).toUpperCase()}/${(lsn & 0xffffffffn).toString(16).toUpperCase()}`;
}

export class Replicas {
  private readonly replicas: Replica[];
  /** The primary's position, sampled at each poll, oldest first. */
  private history: { at: number; lsn: bigint }[] = [];
  private primaryFailures = 0;
  private next = 0;
  private polling = false;
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly options: ReplicaOptions) {
    this.replicas = options.urls.map((url) => ({
      host: hostOf(url),
      db: options.open(url),
      replayed: null,
      lagMs: Infinity,
      asking: null,
      reads: 0,
    }));
    this.timer = setInterval(() => void this.poll(), options.pollMs ?? 200).unref();
  }

  /** Reads the positions once, so the first requests already find the replicas that are current. */
  async start(): Promise<void> {
    await this.poll();
  }

  /**
   * Where a safe request reads: a replica that answers, is within the lag, and has replayed
   * `after` (the client's last change; 0 for none), waiting up to waitMs for one to get there;
   * else the primary. While the primary is down, a replica within the lag last measured serves
   * every read.
   */
  async route(after: bigint): Promise<ReadRoute> {
    const primaryUp = this.primaryFailures < failuresForDown;
    const usable = this.replicas.filter((r) => r.replayed !== null && r.lagMs <= this.options.maxLagMs);
    if (usable.length === 0 || (after === unknownPosition && primaryUp)) return this.onPrimary(after);
    const first = this.next++ % usable.length;
    const ordered = [...usable.slice(first), ...usable.slice(0, first)];
    const ready = ordered.find((r) => (r.replayed as bigint) >= after);
    if (ready) return this.onReplica(ready);
    const candidate = ordered[0] as Replica;
    if (!primaryUp) return this.onReplica(candidate);
    const deadline = performance.now() + this.options.waitMs;
    for (let remaining = this.options.waitMs; remaining > 0; remaining = deadline - performance.now()) {
      await sleep(Math.min(5, remaining));
      // A replica that hangs is not waited for beyond the deadline.
      const replayed = await Promise.race([
        this.ask(candidate),
        sleep(Math.max(0, deadline - performance.now())).then(() => null),
      ]);
      if (replayed !== null && replayed >= after) return this.onReplica(candidate);
    }
    return this.onPrimary(after);
  }

  /**
   * The primary's WAL position now: past every change committed before the call, since a commit
   * returns once its WAL is flushed (synchronous_commit on, the default). The flushed position,
   * not the insert position: the insert position also covers WAL of transactions under way that
   * is not flushed yet, which a standby cannot have, so a mark there could be out of every
   * replica's reach for as long as the primary is gone.
   */
  async position(): Promise<bigint> {
    const [row] = await this.options.primary.query<{ lsn: string }>(
      'SELECT pg_current_wal_flush_lsn()::text AS lsn',
      [],
      { pipeline: true },
    );
    return parseLsn(row?.lsn ?? '0/0');
  }

  /** The replicas as the metrics show them. */
  status(): { host: string; up: boolean; lagMs: number; reads: number }[] {
    return this.replicas.map((r) => ({ host: r.host, up: r.replayed !== null, lagMs: r.lagMs, reads: r.reads }));
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await Promise.all(this.replicas.map((r) => r.db.close()));
  }

  /**
   * The primary, with a way out: a statement the primary cannot answer goes to a replica within
   * the lag. If the primary is gone (and the polls have not counted it down yet), any such
   * replica, one that has replayed `after` first, as once they do; if it is there but has no
   * connection to spare, only one that has replayed `after`, so that the client still sees its
   * own change. Else the failure stands. The rest of the request follows it there, and its
   * results are not kept (mixed).
   */
  private onPrimary(after: bigint): ReadRoute {
    const { primary } = this.options;
    let replica: Replica | null = null;
    const db = this.routedDb(
      async (sql, params, options) => {
        if (!replica) {
          try {
            return await primary.query(sql, params, options);
          } catch (err) {
            const usable =
              failsOnReplica(err) && codeOf(err) !== '40001'
                ? this.replicas.filter((r) => r.replayed !== null && r.lagMs <= this.options.maxLagMs)
                : [];
            // A primary that is gone: any of them, as once the polls count it down. One that is
            // there but busy: only one that has the client's change.
            const found =
              usable.find((r) => (r.replayed as bigint) >= after) ?? (primaryBusy(err) ? undefined : usable[0]);
            if (!found) throw err;
            replica = found;
          }
        }
        return readOn(replica, sql, params, options);
      },
      () => primary.stats(),
    );
    return {
      db,
      server: primary,
      fallBack: () => undefined,
      get mixed() {
        return replica !== null;
      },
    };
  }

  private onReplica(replica: Replica): ReadRoute {
    const { primary } = this.options;
    let onReplica = true;
    let used = false;
    const route: ReadRoute = {
      db: this.routedDb(
        async (sql, params, options) => {
          if (!onReplica) return primary.query(sql, params, options);
          try {
            const rows = await readOn(replica, sql, params, options);
            used = true;
            return rows;
          } catch (err) {
            if (!failsOnReplica(err)) throw err;
            if (codeOf(err) !== '40001') this.markDown(replica);
            route.fallBack();
            return primary.query(sql, params, options);
          }
        },
        () => replica.db.stats(),
      ),
      get server() {
        return onReplica ? replica.db : primary;
      },
      fallBack: () => {
        onReplica = false;
      },
      get mixed() {
        return used && !onReplica;
      },
    };
    return route;
  }

  /** A request's Db whose statements `query` places; its changes and transactions go to the primary. */
  private routedDb(
    query: (sql: string, params?: readonly unknown[], options?: QueryOptions) => Promise<unknown[]>,
    stats: Db['stats'],
  ): Db {
    const { primary } = this.options;
    return {
      kind: 'postgres',
      query: query as Db['query'],
      exec: (sql) => primary.exec(sql),
      transaction: (fn) => primary.transaction(fn),
      stats,
      close: async () => undefined,
    };
  }

  private async poll(): Promise<void> {
    if (this.polling) return;
    this.polling = true;
    try {
      const now = performance.now();
      try {
        const [row] = await this.options.primary.query<{ lsn: string }>(
          'SELECT pg_current_wal_lsn()::text AS lsn',
          [],
          { pipeline: true },
        );
        this.primaryFailures = 0;
        this.history.push({ at: now, lsn: parseLsn(row?.lsn ?? '0/0') });
        // Enough to tell any lag up to the limit; older samples could only say "too far behind".
        const keepFrom = now - this.options.maxLagMs - 1000;
        while (this.history.length > 1 && (this.history[0] as { at: number }).at < keepFrom) this.history.shift();
      } catch {
        this.primaryFailures++;
      }
      const measured = this.primaryFailures === 0;
      await Promise.all(
        this.replicas.map(async (replica) => {
          const was = replica.replayed !== null;
          const replayed = await this.ask(replica);
          // Without the primary's position the lag last measured stands.
          if (replayed === null) replica.lagMs = Infinity;
          else if (measured) replica.lagMs = this.lagOf(replayed, now);
          if (was && replayed === null)
            this.options.onWarning?.(`replica ${replica.host} does not answer; its reads go to the primary`);
          if (!was && replayed !== null) this.options.onWarning?.(`replica ${replica.host} answers again`);
        }),
      );
    } finally {
      this.polling = false;
    }
  }

  /** The replica's replayed position, asked once for all who wait; null when it does not answer. */
  private ask(replica: Replica): Promise<bigint | null> {
    replica.asking ??= replica.db
      .query<{ lsn: string | null }>(
        // A promoted standby replays nothing more: it is as far as its own WAL.
        `SELECT (CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() ELSE pg_current_wal_lsn() END)::text AS lsn`,
        [],
        { pipeline: true },
      )
      .then(
        ([row]) => (replica.replayed = row?.lsn ? parseLsn(row.lsn) : null),
        () => (replica.replayed = null),
      )
      .finally(() => {
        replica.asking = null;
      });
    return replica.asking;
  }

  /**
   * At most how long ago the primary was where `replayed` is: the replica has everything the
   * primary had at the newest sample it has reached. 0 when it has reached the newest; Infinity
   * when it has reached none that is kept (further behind than the limit, or just started).
   */
  private lagOf(replayed: bigint, now: number): number {
    for (let i = this.history.length - 1; i >= 0; i--) {
      const sample = this.history[i] as { at: number; lsn: bigint };
      if (sample.lsn <= replayed) return now - sample.at;
    }
    return Infinity;
  }

  private markDown(replica: Replica): void {
    replica.replayed = null;
    replica.lagMs = Infinity;
  }
}

/**
 * A failure the primary would not have: the replica is gone (unavailable), or it cancelled a read
 * that conflicted with what it replays (40001). A write sent to it by mistake (25006) is not one.
 */
export function failsOnReplica(err: unknown): boolean {
  const code = codeOf(err);
  if (code === '40001') return true;
  return err instanceof DbUnavailableError && code !== '25006';
}

/** A statement on a replica, counted for the metrics. */
async function readOn<R>(
  replica: Replica,
  sql: string,
  params?: readonly unknown[],
  options?: QueryOptions,
): Promise<R[]> {
  const rows = await replica.db.query<R>(sql, params, options);
  replica.reads++;
  return rows;
}

/** A primary that answers but has no connection to spare (as against one that is gone). */
function primaryBusy(err: unknown): boolean {
  const cause = (err as { cause?: { code?: string; message?: string } }).cause;
  return (
    cause?.code === '53300' ||
    /timeout exceeded when trying to connect|no more connections allowed/i.test(cause?.message ?? String(err))
  );
}

function codeOf(err: unknown): string | undefined {
  const { code, cause } = err as { code?: string; cause?: { code?: string } };
  return code ?? cause?.code;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
