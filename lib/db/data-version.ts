// Remembers results of expensive reads (search totals and pages, the start page's counts) and
// whole rendered documents until persons or works change. data_version (sql/005) moves in the
// same transaction as every change, so one cheap read per request tells whether a remembered
// result still holds, in every worker process alike. It is the sum of 64 counters, so that
// concurrent changes do not wait for each other on one row (sql/008). The sum names a state of
// the data on one server: a replica's and the primary's are kept apart (lib/scripts/run.ts).
import type { Db } from './db.ts';

/** Reads data_version; requests that arrive together share a read. */
export class DataVersion {
  private readonly db: Db;
  // The read on its way to the database, and the one that follows it.
  private reading: Promise<bigint> | null = null;
  private queued: Promise<bigint> | null = null;

  constructor(db: Db) {
    this.db = db;
  }

  /**
   * The data version now; call once per request. A request that arrives while a read is under
   * way waits for the next read, which is sent after the current one returns and so after the
   * request arrived: a change committed before the request came is always seen, and sixty-four
   * requests at once cost two reads, not sixty-four. When the read under way fails (the
   * database is unavailable), those waiting fail with it: a request waits for one read's time
   * at most, not for two in a row (docs/robustness.md).
   */
  current(): Promise<bigint> {
    if (!this.reading) {
      this.reading = this.read().finally(() => {
        this.reading = null;
      });
      return this.reading;
    }
    this.queued ??= this.reading
      .finally(() => {
        this.queued = null;
      })
      .then(() => this.current());
    return this.queued;
  }

  private async read(): Promise<bigint> {
    // A view: the sum of 64 counters (sql/008), one page read whole.
    const [row] = await this.db.query<{ n: string }>('SELECT n::text AS n FROM data_version', [], {
      name: 'data-version',
      pipeline: true,
    });
    return BigInt(row?.n ?? '0');
  }
}

/**
 * Results by key, each valid for the data version it was computed at, least used dropped first
 * once their weights pass the limit: by default each weighs 1 and the limit is a count; kept
 * documents weigh their bytes (lib/scripts/run.ts).
 */
export class ResultCache {
  private readonly limit: number;
  private readonly weigh: (value: never) => number;
  private version = -1n;
  private weight = 0;
  // A Map keeps insertion order: re-inserting on a hit makes the oldest entry the least used.
  private readonly entries = new Map<string, { value: unknown; weight: number }>();
  // Requests that arrive while a result is being computed wait for that computation
  // instead of starting their own: sixty-four clients asking for one new term run it once.
  private readonly pending = new Map<string, Promise<unknown>>();

  constructor(options: { limit?: number; weigh?: (value: never) => number } = {}) {
    this.limit = options.limit ?? 2000;
    this.weigh = options.weigh ?? (() => 1);
  }

  /**
   * The result for key at this version: remembered, or compute()d and remembered. A result
   * that keep() refuses, or that alone weighs more than the limit, goes to the requests waiting
   * for it but is not remembered.
   */
  async get<T>(
    version: bigint,
    key: string,
    compute: () => Promise<T>,
    keep: (value: T) => boolean = () => true,
  ): Promise<T> {
    if (version > this.version) {
      this.entries.clear();
      this.weight = 0;
      this.version = version;
    }
    const entry = version === this.version ? this.entries.get(key) : undefined;
    if (entry) {
      this.entries.delete(key);
      this.entries.set(key, entry);
      return entry.value as T;
    }
    const flight = `${version}\u0000${key}`;
    const running = this.pending.get(flight);
    if (running) return running as Promise<T>;
    const computing = compute()
      .then((value) => {
        // Computed while the data moved on (or for a request that read an older version):
        // still right for its requests, not worth keeping.
        if (version === this.version && keep(value)) this.remember(key, value);
        return value;
      })
      .finally(() => this.pending.delete(flight));
    this.pending.set(flight, computing);
    return computing;
  }

  private remember(key: string, value: unknown): void {
    const weight = this.weigh(value as never);
    if (weight > this.limit) return;
    this.weight += weight - (this.entries.get(key)?.weight ?? 0);
    this.entries.delete(key);
    this.entries.set(key, { value, weight });
    for (const [oldest, { weight }] of this.entries) {
      if (this.weight <= this.limit) break;
      this.entries.delete(oldest);
      this.weight -= weight;
    }
  }
}
