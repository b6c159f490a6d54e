// The ops room: what load balancers and Prometheus ask a running server (/healthz, /readyz,
// /metrics), answered before the Host check and the rewrite table, and the metrics recorded for
// every exchange.
// May import: db, http, log.
export { clusterMetrics, foldMetrics, Metrics } from './metrics.ts';
export { Probes } from './probes.ts';
