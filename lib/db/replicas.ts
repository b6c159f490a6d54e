// Reads from streaming replicas, with each client reading its own writes: a change's client is
// given the primary's WAL position after it (a signed cookie, lib/auth/written-mark.ts), and its
// reads go to a replica only once that replica has replayed so far (docs/operations.md, The
// database tier). Everyone else may read a replica up to its lag behind the primary.
import type { Db, PoolStats, QueryOptions, Queryable } from './db.ts';
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
  /** Statements go to the replica, and to the primary if the replica fails them as unavailable. */
  reader: Db;
  /** The WAL position it has replayed; null while it does not answer. */
  replayed: bigint | null;
  /** How long ago the primary was where the replica is now; Infinity while unknown. */
  lagMs: number;
  /** A question for its position on its way, shared by the reads that wait for it. */
  asking: Promise<bigint | null> | null;
}

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
  private primaryUp = true;
  private next = 0;
  private polling = false;
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly options: ReplicaOptions) {
    this.replicas = options.urls.map((url) => {
      const db = options.open(url);
      const replica: Replica = { host: hostOf(url), db, reader: db, replayed: null, lagMs: Infinity, asking: null };
      replica.reader = new ReplicaReader(replica, options.primary, () => this.markDown(replica));
      return replica;
    });
    this.timer = setInterval(() => void this.poll(), options.pollMs ?? 200).unref();
  }

  /** Reads the positions once, so the first requests already find the replicas. */
  async start(): Promise<void> {
    await this.poll();
  }

  /**
   * Where a safe request reads: a replica that is up, within the lag, and has replayed `after`
   * (the client's last change; 0 for none), waiting up to waitMs for one to get there; else the
   * primary. With the primary down, a replica that is up serves whatever it has.
   */
  async reader(after: bigint): Promise<Db> {
    const usable = this.replicas.filter((r) => r.replayed !== null && (!this.primaryUp || r.lagMs <= this.options.maxLagMs));
    if (usable.length === 0) return this.options.primary;
    const first = this.next++ % usable.length;
    const ordered = [...usable.slice(first), ...usable.slice(0, first)];
    const ready = ordered.find((r) => (r.replayed as bigint) >= after);
    if (ready || !this.primaryUp) return (ready ?? ordered[0] as Replica).reader;
    const deadline = performance.now() + this.options.waitMs;
    const candidate = ordered[0] as Replica;
    while (performance.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 5));
      const replayed = await this.ask(candidate);
      if (replayed !== null && replayed >= after) return candidate.reader;
    }
    return this.options.primary;
  }

  /** The primary's WAL position now: past every change committed before the call. */
  async position(): Promise<bigint> {
    const [row] = await this.options.primary.query<{ lsn: string }>('SELECT pg_current_wal_insert_lsn()::text AS lsn', [], { pipeline: true });
    return parseLsn(row?.lsn ?? '0/0');
  }

  /** The replicas as the metrics show them. */
  status(): { host: string; up: boolean; lagMs: number }[] {
    return this.replicas.map((r) => ({ host: r.host, up: r.replayed !== null, lagMs: r.lagMs }));
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await Promise.all(this.replicas.map((r) => r.db.close()));
  }

  private async poll(): Promise<void> {
    if (this.polling) return;
    this.polling = true;
    try {
      const now = performance.now();
      try {
        const [row] = await this.options.primary.query<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn', [], { pipeline: true });
        this.primaryUp = true;
        this.history.push({ at: now, lsn: parseLsn(row?.lsn ?? '0/0') });
        // Enough to tell any lag up to the limit, and a little more.
        const keepFrom = now - this.options.maxLagMs - 1000;
        while (this.history.length > 2 && (this.history[0] as { at: number }).at < keepFrom) this.history.shift();
      } catch {
        this.primaryUp = false;
      }
      await Promise.all(this.replicas.map(async (replica) => {
        const was = replica.replayed !== null;
        const replayed = await this.ask(replica);
        replica.lagMs = replayed === null ? Infinity : this.lagOf(replayed, now);
        if (was && replayed === null) this.options.onWarning?.(`replica ${replica.host} does not answer; its reads go to the primary`);
        if (!was && replayed !== null) this.options.onWarning?.(`replica ${replica.host} answers again`);
      }));
    } finally {
      this.polling = false;
    }
  }

  /** The replica's replayed position, asked once for all who wait; null when it does not answer. */
  private ask(replica: Replica): Promise<bigint | null> {
    replica.asking ??= replica.db.query<{ lsn: string | null }>(
      // A promoted standby replays nothing more: it is as far as its own WAL.
      `SELECT (CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() ELSE pg_current_wal_lsn() END)::text AS lsn`,
      [], { pipeline: true },
    ).then(
      ([row]) => (replica.replayed = row?.lsn ? parseLsn(row.lsn) : null),
      () => (replica.replayed = null),
    ).finally(() => { replica.asking = null; });
    return replica.asking;
  }

  /** How long ago the primary first went past `replayed`: 0 when it has not. */
  private lagOf(replayed: bigint, now: number): number {
    const behind = this.history.find((sample) => sample.lsn > replayed);
    return behind ? now - behind.at : 0;
  }

  private markDown(replica: Replica): void {
    replica.replayed = null;
    replica.lagMs = Infinity;
  }
}

/** A replica's statements, each run again on the primary when the replica fails it as unavailable: no 5xx for a replica that goes away. */
class ReplicaReader implements Db {
  readonly kind = 'postgres' as const;

  constructor(private readonly replica: Replica, private readonly primary: Db, private readonly down: () => void) {}

  async query<R>(sql: string, params?: readonly unknown[], options?: QueryOptions): Promise<R[]> {
    if (this.replica.replayed === null) return this.primary.query<R>(sql, params, options);
    try {
      return await this.replica.db.query<R>(sql, params, options);
    } catch (err) {
      // A standby cancels a read that conflicts with what it replays (40001): the primary has no such conflict.
      const conflict = (err as { cause?: { code?: string }; code?: string }).code === '40001';
      if (!(err instanceof DbUnavailableError) && !conflict) throw err;
      if (!conflict) this.down();
      return this.primary.query<R>(sql, params, options);
    }
  }

  exec(sql: string): Promise<void> {
    return this.primary.exec(sql);
  }

  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
    return this.primary.transaction(fn);
  }

  stats(): PoolStats | null {
    return this.replica.db.stats();
  }

  async close(): Promise<void> {
    // The replica's connections are closed with the Replicas.
  }
}
