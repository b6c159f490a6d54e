// Remembers results of expensive read queries (search totals and pages, the start page's
// counts) until persons or works change. data_version (sql/005) moves in the same
// transaction as every change, so one cheap read per request tells whether a remembered
// result still holds, in every worker process alike.
import type { Db } from './db.ts';

export class ResultCache {
  private readonly db: Db;
  private readonly limit: number;
  private version: string | null = null;
  // A Map keeps insertion order: re-inserting on a hit makes the oldest entry the least used.
  private readonly entries = new Map<string, unknown>();
  // Requests that arrive while a result is being computed wait for that computation
  // instead of starting their own: sixty-four clients asking for one new term run it once.
  private readonly pending = new Map<string, Promise<unknown>>();

  constructor(db: Db, options: { limit?: number } = {}) {
    this.db = db;
    this.limit = options.limit ?? 2000;
  }

  /** The data version now; call once per request and pass it to get(). */
  async currentVersion(): Promise<string> {
    const [row] = await this.db.query<{ n: string }>('SELECT n::text AS n FROM data_version', [], { name: 'data-version' });
    const version = row?.n ?? '0';
    if (version !== this.version) {
      this.entries.clear();
      this.version = version;
    }
    return version;
  }

  /** The remembered result for key at this version, or compute() remembered. */
  async get<T>(version: string, key: string, compute: () => Promise<T>): Promise<T> {
    if (version === this.version && this.entries.has(key)) {
      const value = this.entries.get(key) as T;
      this.entries.delete(key);
      this.entries.set(key, value);
      return value;
    }
    const flight = `${version}\u0000${key}`;
    const running = this.pending.get(flight);
    if (running) return running as Promise<T>;
    const computing = compute().then((value) => {
      // Computed while the data moved on: still right for this request, not worth keeping.
      if (version === this.version) {
        this.entries.set(key, value);
        if (this.entries.size > this.limit) this.entries.delete(this.entries.keys().next().value as string);
      }
      return value;
    }).finally(() => this.pending.delete(flight));
    this.pending.set(flight, computing);
    return computing;
  }
}
