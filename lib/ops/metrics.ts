// Prometheus metrics through prom-client: requests by route, method and status, their latency,
// the database connections, sessions, refused logins and password checks, the log files' failed
// writes, and Node's own (event-loop lag, heap, garbage collection). With worker processes the
// worker that is asked gets every worker's metrics from the primary, added up, with the counts of
// workers that are gone (docs/operations.md, Health and metrics).
// https://prometheus.io/docs/instrumenting/exposition_formats/
import cluster from 'node:cluster';
import type { MetricObjectWithValues, MetricValue } from 'prom-client';
import { AggregatorRegistry, collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Db } from '../db/index.ts';
import type { Exchange } from '../http/index.ts';
import { askPrimary, onCollect } from '../http/index.ts';

/** The search's figures (lib/search, SearchStats). */
interface SearchFigures {
  personen: number;
  werke: number;
  bytes: number;
  searches: number;
  catchUps: number;
  reloads: number;
  snapshotsTaken: number;
  snapshotsWritten: number;
}

/** What the metrics read from the parts of a running app. */
export interface MetricSources {
  db: Db;
  logFailedWrites: () => number;
  logins: { failed: number; throttled: number; busy: number; left: number; checked: number };
  /** Password checks waiting for their turn (lib/auth/check-queue.ts). */
  checksWaiting: () => number;
  /** Surrogate keys waiting for a cache in front that has not answered (lib/http/purge.ts). */
  purgesWaiting?: () => number;
  countSessions: () => Promise<{ signedIn: number; anonymous: number }>;
  /** The replicas (DATABASE_REPLICA_URL) as this process sees them. */
  replicas?: () => { host: string; up: boolean; lagMs: number; reads: number }[];
  /** The search's word index: this process's, or the search process's (lib/search/word-index.ts). */
  search?: () => SearchFigures | Promise<SearchFigures>;
}

type Json = MetricObjectWithValues<MetricValue<string>>[];

const methods = new Set(['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'OPTIONS']);
const contentType = Registry.PROMETHEUS_CONTENT_TYPE;

// Node's own metrics, once per process however many apps it runs (the tests run many).
let processRegistry: Registry | null = null;
function processMetrics(): Registry {
  if (!processRegistry) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry });
  }
  return processRegistry;
}

export class Metrics {
  readonly contentType = contentType;
  private readonly registry = new Registry();
  private readonly requests: Counter<'route' | 'method' | 'status'>;
  private readonly duration: Histogram<'route'>;

  constructor(sources: MetricSources) {
    const registers = [this.registry];
    this.requests = new Counter({
      name: 'portfolio_http_requests_total',
      help: 'Requests answered, by route (a script, static, proxy, probe, none), method and status.',
      labelNames: ['route', 'method', 'status'],
      registers,
    });
    this.duration = new Histogram({
      name: 'portfolio_http_request_duration_seconds',
      help: 'Time from the request to the end of its answer, by route.',
      labelNames: ['route'],
      buckets: [0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    });
    new Gauge({
      name: 'portfolio_db_connections',
      help: "PostgreSQL: connections of the pool (total, idle), requests waiting for one (waiting), statements on the pipelined connections, the searches' own included, unanswered or waiting for one (pipelined).",
      labelNames: ['state'],
      registers,
      collect() {
        const stats = sources.db.stats();
        if (!stats) return;
        for (const state of ['total', 'idle', 'waiting', 'pipelined'] as const) this.set({ state }, stats[state]);
      },
    });
    new Counter({
      name: 'portfolio_db_pipeline_retries_total',
      help: 'PostgreSQL: pipelined statements sent again on another connection to the primary because theirs had answered nothing for DB_PIPELINE_RETRY_MS.',
      registers,
      collect() {
        const stats = sources.db.stats();
        if (!stats) return;
        this.reset();
        this.inc(stats.retried);
      },
    });
    if (sources.replicas) {
      const { replicas } = sources;
      new Gauge({
        name: 'portfolio_db_replica_up',
        help: 'Whether a replica answers (1) or not (0); the lowest any worker sees. One that answers serves reads while its lag is within REPLICA_MAX_LAG_MS.',
        labelNames: ['host'],
        registers,
        aggregator: 'min',
        collect() {
          for (const replica of replicas()) this.set({ host: replica.host }, replica.up ? 1 : 0);
        },
      });
      new Gauge({
        name: 'portfolio_db_replica_lag_seconds',
        help: 'How long ago the primary was where a replica has replayed to; the highest any worker sees. Absent while the replica does not answer.',
        labelNames: ['host'],
        registers,
        aggregator: 'max',
        collect() {
          this.reset();
          for (const replica of replicas())
            if (Number.isFinite(replica.lagMs)) this.set({ host: replica.host }, replica.lagMs / 1000);
        },
      });
      new Counter({
        name: 'portfolio_db_replica_reads_total',
        help: 'Statements of requests a replica answered.',
        labelNames: ['host'],
        registers,
        collect() {
          this.reset();
          for (const replica of replicas()) this.inc({ host: replica.host }, replica.reads);
        },
      });
    }
    if (sources.search) {
      const { search } = sources;
      // One index a server (the one process's, or the search process's): every worker reports
      // the same figures, so the cluster's value is the highest, never the sum.
      new Gauge({
        name: 'portfolio_search_index_rows',
        help: "Persons and works in the search's word index.",
        labelNames: ['kind'],
        registers,
        aggregator: 'max',
        async collect() {
          const stats = await search();
          this.set({ kind: 'personen' }, stats.personen);
          this.set({ kind: 'werke' }, stats.werke);
        },
      });
      new Gauge({
        name: 'portfolio_search_index_bytes',
        help: "Memory the search's word index holds outside the JavaScript heap.",
        registers,
        aggregator: 'max',
        async collect() {
          this.set((await search()).bytes);
        },
      });
      new Counter({
        name: 'portfolio_search_index_reads_total',
        help: "Readings of the database's changes into the search's word index (catch_up), of everything (reload: the start, a TRUNCATE, a statement of many rows, notes deleted before they were read), and of the snapshot file at the start (snapshot).",
        labelNames: ['kind'],
        registers,
        aggregator: 'max',
        async collect() {
          const stats = await search();
          this.reset();
          this.inc({ kind: 'catch_up' }, stats.catchUps);
          this.inc({ kind: 'reload' }, stats.reloads);
          this.inc({ kind: 'snapshot' }, stats.snapshotsTaken);
        },
      });
      new Counter({
        name: 'portfolio_search_snapshots_written_total',
        help: "Snapshot files of the search's word index written (after a whole reading, every 5 minutes while it changes, at the stop).",
        registers,
        aggregator: 'max',
        async collect() {
          const stats = await search();
          this.reset();
          this.inc(stats.snapshotsWritten);
        },
      });
      new Counter({
        name: 'portfolio_searches_total',
        help: 'Searches made on the word index: requests for a search list that no kept result answered (requests that ask for one search at once may share it).',
        registers,
        aggregator: 'max',
        async collect() {
          const stats = await search();
          this.reset();
          this.inc(stats.searches);
        },
      });
    }
    new Gauge({
      name: 'portfolio_sessions',
      help: "Live login sessions: signed in, and anonymous ones that carry a login form's token.",
      labelNames: ['kind'],
      registers,
      // Every worker reads the same table: one worker's answer is the site's.
      aggregator: 'first',
      async collect() {
        const counts = await sources.countSessions().catch(() => null);
        if (!counts) return;
        this.set({ kind: 'signed_in' }, counts.signedIn);
        this.set({ kind: 'anonymous' }, counts.anonymous);
      },
    });
    // Counted where they happen (lib/auth, lib/log) and read here on each scrape.
    new Counter({
      name: 'portfolio_logins_refused_total',
      help: 'Logins refused: wrong name or password (failed), the throttle (throttled, 429), too many checks waiting (busy, 503), not checked as the client left before its turn (left).',
      labelNames: ['reason'],
      registers,
      collect() {
        this.reset();
        for (const reason of ['failed', 'throttled', 'busy', 'left'] as const)
          this.inc({ reason }, sources.logins[reason]);
      },
    });
    new Counter({
      name: 'portfolio_password_checks_total',
      help: 'Password checks run: each a scrypt of a third of a second and 128 MiB.',
      registers,
      collect() {
        this.reset();
        this.inc(sources.logins.checked);
      },
    });
    new Gauge({
      name: 'portfolio_password_checks_waiting',
      help: 'Password checks waiting for their turn (two run at once).',
      registers,
      collect() {
        this.set(sources.checksWaiting());
      },
    });
    new Gauge({
      name: 'portfolio_purge_keys_waiting',
      help: 'Surrogate keys waiting to be purged at a cache in front (PURGE_URLS) that has not answered; tried again until it does.',
      registers,
      collect() {
        this.set(sources.purgesWaiting?.() ?? 0);
      },
    });
    new Counter({
      name: 'portfolio_log_failed_writes_total',
      help: 'Writes to the access or error log that failed (a full disk, permissions); their lines are lost.',
      registers,
      collect() {
        this.reset();
        this.inc(sources.logFailedWrites());
      },
    });
    if (cluster.isWorker) onCollect(() => this.json());
  }

  /** One exchange, when its answer is done. */
  record(ex: Exchange, seconds: number): void {
    const method = methods.has(ex.req.method ?? '') ? (ex.req.method as string) : 'other';
    this.requests.inc({ route: ex.route, method, status: String(ex.res.statusCode) });
    this.duration.observe({ route: ex.route }, seconds);
  }

  /** The site's metrics in Prometheus's text format: this process's, or every worker's added up. */
  async text(): Promise<string> {
    if (cluster.isWorker) return (await askPrimary('metrics')) as string;
    return (await processMetrics().metrics()) + (await this.registry.metrics());
  }

  private async json(): Promise<Json> {
    const [own, node] = await Promise.all([this.registry.getMetricsAsJSON(), processMetrics().getMetricsAsJSON()]);
    return [...node, ...own] as Json;
  }
}

/** The primary's answer to a worker that asks for the metrics: every worker's, added up. */
export async function clusterMetrics(gather: () => Promise<unknown[]>): Promise<string> {
  return AggregatorRegistry.aggregate(metricsOf(await gather())).metrics();
}

/**
 * The primary's fold of what workers that are gone gave last: their counters and histograms
 * added up, so that a reload does not make the sums fall (which Prometheus reads as a reset).
 * Gauges (connections, heap) end with their worker.
 */
export async function foldMetrics(values: unknown[]): Promise<unknown> {
  const added = await AggregatorRegistry.aggregate(metricsOf(values)).getMetricsAsJSON();
  // Only what the workers' counts add up to: a counter every worker reports alike (the search
  // process's, 'max') leaves nothing behind with a worker that goes, and starts anew with its process.
  return added.filter(
    (metric) =>
      (String(metric.type) === 'counter' || String(metric.type) === 'histogram') && metric.aggregator === 'sum',
  );
}

/** The values that are metrics: a worker that failed to collect gave none. */
function metricsOf(values: unknown[]): Json[] {
  return values.filter((value): value is Json => Array.isArray(value));
}
