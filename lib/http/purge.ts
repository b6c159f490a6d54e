// Tells the caches in front (PURGE_URLS: Varnish with its xkey module, or anything that takes the
// same request) to drop the documents a change touched, by their surrogate keys: one request
// `PURGE` with the keys in `xkey` and `Surrogate-Key`, and the data version the change committed
// at in `X-Data-Version`, so that the cache can refuse a page rendered before it that arrives
// after the purge (docs/operations.md, An edge cache). Each cache has a queue: keys that wait
// while a purge is under way go out together in the next, and a cache that cannot be reached
// is asked again, every few seconds up to half a minute, until it answers; its keys wait,
// at most maxKeys of them (beyond, the key that names every public document). A change never
// fails for it.
import http from 'node:http';
import https from 'node:https';

export interface PurgeOptions {
  /** The key of every public document, sent instead of more than maxKeys waiting keys. */
  allKey: string;
  /** Reports a failed purge (the error log, level warn). */
  onFailure: (message: string) => void;
  /** Milliseconds a purge may take before it counts as failed. */
  timeoutMs?: number;
}

/** Keys one cache keeps waiting while it cannot be reached. */
const maxKeys = 1000;
/** The longest wait between two tries. */
const maxBackoffMs = 30_000;

export class Purger {
  private readonly caches: CacheQueue[];

  constructor(urls: readonly string[], options: PurgeOptions) {
    this.caches = urls.map((url) => new CacheQueue(new URL(url), options));
  }

  /**
   * Purges keys at every cache, marked with the data version after the change; resolves once each
   * cache has answered or its first try has failed (it is tried again in the background).
   */
  purge(keys: readonly string[], version: bigint): Promise<void> {
    if (keys.length === 0) return Promise.resolve();
    return Promise.all(this.caches.map((cache) => cache.add(keys, version))).then(() => undefined);
  }

  /** Keys waiting for a cache that has not answered, for the metrics and tests. */
  waiting(): number {
    return this.caches.reduce((sum, cache) => sum + cache.waitingKeys(), 0);
  }

  /** Stops the tries in the background (at shutdown). */
  close(): void {
    for (const cache of this.caches) cache.close();
  }
}

class CacheQueue {
  private keys = new Set<string>();
  private version = 0n;
  private settled: (() => void)[] = [];
  private sending = false;
  private failures = 0;
  private timer: NodeJS.Timeout | null = null;
  private closed = false;
  private readonly agent: http.Agent;

  constructor(
    private readonly url: URL,
    private readonly options: PurgeOptions,
  ) {
    const Agent = url.protocol === 'https:' ? https.Agent : http.Agent;
    this.agent = new Agent({ keepAlive: true, maxSockets: 1 });
  }

  add(keys: readonly string[], version: bigint): Promise<void> {
    for (const key of keys) this.keys.add(key);
    if (this.keys.size > maxKeys) this.keys = new Set([this.options.allKey]);
    if (version > this.version) this.version = version;
    return new Promise((resolve) => {
      this.settled.push(resolve);
      // While the cache is being retried, a new change tries it at once rather than waiting.
      if (this.timer) {
        clearTimeout(this.timer);
        this.timer = null;
      }
      this.send();
    });
  }

  waitingKeys(): number {
    return this.keys.size;
  }

  close(): void {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.agent.destroy();
    for (const resolve of this.settled.splice(0)) resolve();
  }

  private send(): void {
    if (this.sending || this.closed || this.keys.size === 0) return;
    this.sending = true;
    const keys = [...this.keys];
    const version = this.version;
    const settled = this.settled.splice(0);
    this.keys.clear();
    this.request(keys.join(' '), version).then(
      () => {
        this.failures = 0;
        this.done(settled);
      },
      (err: Error) => {
        this.failures++;
        for (const key of keys) this.keys.add(key);
        if (this.keys.size > maxKeys) this.keys = new Set([this.options.allKey]);
        const wait = Math.min(maxBackoffMs, 500 * 2 ** (this.failures - 1));
        this.options.onFailure(
          `Purging ${keys.length} surrogate ${keys.length === 1 ? 'key' : 'keys'} at ${this.url.origin} failed (${err.message}), try ${this.failures}; trying again in ${wait / 1000} s.`,
        );
        if (!this.closed) {
          this.timer = setTimeout(() => {
            this.timer = null;
            this.send();
          }, wait);
          this.timer.unref();
        }
        this.done(settled);
      },
    );
  }

  private done(settled: (() => void)[]): void {
    this.sending = false;
    for (const resolve of settled) resolve();
    // Keys that came while this purge was under way go out now, unless the cache is being waited for.
    if (!this.timer) this.send();
  }

  private request(keys: string, version: bigint): Promise<void> {
    const client = this.url.protocol === 'https:' ? https : http;
    return new Promise((resolve, reject) => {
      const req = client.request(this.url, {
        method: 'PURGE',
        agent: this.agent,
        timeout: this.options.timeoutMs ?? 2000,
        headers: { xkey: keys, 'surrogate-key': keys, 'x-data-version': version.toString() },
      });
      req.on('timeout', () => req.destroy(new Error('no answer')));
      req.on('error', reject);
      req.on('response', (res) => {
        res.resume();
        res.on('error', reject);
        res.on('end', () =>
          res.statusCode !== undefined && res.statusCode >= 200 && res.statusCode < 300
            ? resolve()
            : reject(new Error(`answered ${res.statusCode}`)),
        );
      });
      req.end();
    });
  }
}
