// /healthz, /readyz and /metrics: answered before the Host check and the rewrite table, without
// sessions, and left out of the access log unless LOG_PROBES=1 (docs/operations.md, Health and
// metrics). Each costs a bounded amount whoever asks: /readyz asks the database at most once a
// second, /metrics answers 404 to every address outside METRICS_ALLOW.
import type { Config } from '../config.ts';
import type { Db } from '../db/index.ts';
import { migrationVersions, pendingMigrations } from '../db/index.ts';
import type { Exchange, Trust } from '../http/index.ts';
import { basePathOf, compileTrust, isStopping, sendBody, sendEmpty } from '../http/index.ts';
import type { Metrics } from './metrics.ts';

type Probe = 'healthz' | 'readyz' | 'metrics';

// A readiness answer is reused this long: a load balancer's checks from many sides, or anyone
// asking in a loop, reach the database at most once a second.
const readyForMs = 1000;
// A database that does not answer in this time is not ready (the statement time-out may be longer).
const readyTimeoutMs = 2000;

interface Readiness {
  ready: boolean;
  /** Why not, for the operator reading the answer. */
  reason: string;
  at: number;
}

const textHeaders = { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' };

export class Probes {
  private readonly paths = new Map<string, Probe>();
  private readonly metricsAllow: Trust | null;
  private readiness: Readiness | null = null;
  private checking: Promise<Readiness> | null = null;
  private asking: Promise<string> | null = null;
  private versions: string[] | null = null;

  constructor(
    private readonly config: Config,
    private readonly db: Db,
    private readonly metrics: Metrics,
  ) {
    const base = basePathOf(config);
    for (const probe of ['healthz', 'readyz', 'metrics'] as const) {
      this.paths.set(`/${probe}`, probe);
      if (base) this.paths.set(`${base}/${probe}`, probe);
    }
    this.metricsAllow = compileTrust(config.metricsAllow, 'METRICS_ALLOW');
  }

  /**
   * The probe this request asks for, if any: the path alone decides, whatever the query. /metrics
   * from an address outside METRICS_ALLOW is no probe: it gets the site's 404, as any address
   * with nothing there, and reveals nothing.
   */
  probeOf(ex: Exchange): Probe | null {
    const url = ex.req.url ?? '';
    const end = url.indexOf('?');
    const probe = this.paths.get(end === -1 ? url : url.slice(0, end)) ?? null;
    if (probe === 'metrics' && !this.metricsAllow?.(ex.client.address, 0)) return null;
    return probe;
  }

  /** Answers a probe; the caller has checked probeOf. */
  async answer(ex: Exchange, probe: Probe): Promise<void> {
    ex.route = 'probe';
    const method = ex.req.method;
    if (method !== 'GET' && method !== 'HEAD')
      return sendEmpty(ex, 405, { allow: 'GET, HEAD', 'cache-control': 'no-store' });
    if (probe === 'healthz') return sendBody(ex, 200, textHeaders, 'ok\n');
    if (probe === 'readyz') {
      const readiness = isStopping() ? { ready: false, reason: 'stopping' } : await this.check();
      return sendBody(
        ex,
        readiness.ready ? 200 : 503,
        textHeaders,
        readiness.ready ? 'ready\n' : `not ready: ${readiness.reason}\n`,
      );
    }
    const text = await this.metrics.text();
    sendBody(ex, 200, { 'content-type': this.metrics.contentType, 'cache-control': 'no-store' }, text);
  }

  /** The database answers and has every migration applied; one check at a time, reused for a second. */
  private check(): Promise<Readiness> {
    if (this.readiness && Date.now() - this.readiness.at < readyForMs) return Promise.resolve(this.readiness);
    this.checking ??= this.ask().then((readiness) => {
      this.readiness = readiness;
      this.checking = null;
      return readiness;
    });
    return this.checking;
  }

  private async ask(): Promise<Readiness> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<string>((resolve) => {
      timer = setTimeout(() => resolve(`the database did not answer within ${readyTimeoutMs} ms`), readyTimeoutMs);
    });
    // A database that hangs gets no second question while the first still waits.
    this.asking ??= this.askDatabase().finally(() => {
      this.asking = null;
    });
    const reason = await Promise.race([this.asking, late]);
    clearTimeout(timer);
    return { ready: reason === '', reason, at: Date.now() };
  }

  /** '' when every migration this process knows is applied; otherwise why not. */
  private async askDatabase(): Promise<string> {
    // The migrations of sql/ when this process first asked: files copied there for the next
    // deploy do not make a running instance unready.
    this.versions ??= await migrationVersions(this.config.sqlDir);
    try {
      const pending = await pendingMigrations(this.db, this.versions);
      return pending.length === 0 ? '' : `migrations not applied: ${pending.join(', ')}`;
    } catch {
      // Not the error itself: the answer is public, and the error may name hosts.
      return 'the database is unavailable';
    }
  }
}
