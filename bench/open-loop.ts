// Load at a fixed rate, each request's latency counted from when it was due, not from when a
// connection was free to send it: a server that stalls for a second delays every request due in
// that second, and all of them count. A closed loop (autocannon: each connection sends its next
// request when the last one is answered) sends nothing during a stall and so counts it once; this
// is the correction for that "coordinated omission" that wrk2 makes. At most `connections`
// keep-alive connections; requests due while all are busy wait for one, and the wait counts.
import http from 'node:http';

export interface RateOptions {
  origin: string;
  nextPath: () => string;
  /** Requests per second. */
  rate: number;
  seconds: number;
  connections: number;
  /** Connections kept from an earlier run (from keepAliveAgent), so that this one opens none. */
  agent?: http.Agent;
}

export interface RateResult {
  /** Latencies in ms, from the due time to the last byte. */
  latencies: number[];
  /** Those of the requests that opened a connection (the rest reused one). */
  opening: number[];
  errors: number;
  /** The errors by code (ECONNRESET, …; "unanswered" for requests still open at the end). */
  errorCodes: Record<string, number>;
  non2xx: number;
  /** Requests answered (any status) per second of the run, waiting for the last ones included. */
  achieved: number;
}

/** The connections each agent has used, so that a kept one does not count as opened again. */
const usedSockets = new WeakMap<http.Agent, WeakSet<object>>();

/** Requests still unanswered this long after the run's last was due are counted as errors. */
const graceMs = 30_000;

export function runAtRate(options: RateOptions): Promise<RateResult> {
  const agent = options.agent ?? keepAliveAgent(options.connections);
  const total = Math.round(options.rate * options.seconds);
  const interval = 1000 / options.rate;
  const latencies: number[] = [];
  const opening: number[] = [];
  const used = usedSockets.get(agent) ?? new WeakSet<object>();
  usedSockets.set(agent, used);
  const errorCodes: Record<string, number> = {};
  let non2xx = 0;
  let sent = 0;
  let settled = 0;
  const started = performance.now();
  return new Promise((resolve) => {
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      clearInterval(ticker);
      clearTimeout(deadline);
      if (!options.agent) agent.destroy();
      if (total > settled) errorCodes.unanswered = total - settled;
      const errors = Object.values(errorCodes).reduce((sum, count) => sum + count, 0);
      resolve({
        latencies,
        opening,
        errors,
        errorCodes,
        non2xx,
        achieved: latencies.length / ((performance.now() - started) / 1000),
      });
    };
    const settle = () => {
      settled++;
      if (settled === total) finish();
    };
    const failed = (error: NodeJS.ErrnoException) => {
      const code = error.code ?? error.message;
      errorCodes[code] = (errorCodes[code] ?? 0) + 1;
      settle();
    };
    const send = (due: number) => {
      let first = false;
      const req = http.get(options.origin + options.nextPath(), { agent }, (res) => {
        res.resume();
        res.on('end', () => {
          latencies.push(performance.now() - due);
          if (first) opening.push(performance.now() - due);
          if (res.statusCode === undefined || res.statusCode < 200 || res.statusCode > 299) non2xx++;
          settle();
        });
        res.on('error', failed);
      });
      req.on('error', failed);
      req.on('socket', (socket) => {
        first = !used.has(socket);
        used.add(socket);
      });
    };
    // Every millisecond, all requests that have come due since the last tick.
    const ticker = setInterval(() => {
      const now = performance.now();
      while (sent < total && started + sent * interval <= now) send(started + sent++ * interval);
      if (sent === total) clearInterval(ticker);
    }, 1);
    const deadline = setTimeout(finish, options.seconds * 1000 + graceMs);
  });
}

/**
 * At most `connections` keep-alive connections, shared by the runs given it. A connection idle for
 * 4 s is closed by this side, before the servers' keep-alive of 5 s closes it: a request sent on a
 * connection at the moment the server closes it fails with ECONNRESET, which would count as an
 * error of the server (Node's agent takes the server's `Keep-Alive: timeout=5` as is, without a
 * margin). As nginx's `keepalive_timeout` below the upstream's does.
 */
export function keepAliveAgent(connections: number): http.Agent {
  return new http.Agent({ keepAlive: true, maxSockets: connections, keepAliveMsecs: 1000, timeout: 4000 });
}

/** The percentile p (0–100) of sorted latencies. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] as number;
}
