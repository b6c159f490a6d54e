// Measured load: autocannon against a server with a fresh path per request, while the server's
// resident memory is sampled from /proc. A measurement may be cut into slices that take turns
// with another server's (bench/run.ts); the slices' counts and latency histograms are then
// added up into one result with autocannon's own aggregateResult.
import { readFileSync } from 'node:fs';
import autocannon from 'autocannon';

export interface LoadOptions {
  origin: string;
  /** The path of the next request, e.g. a random person. */
  nextPath?: () => string;
  /** Headers of every request, e.g. Accept-Encoding. */
  headers?: Record<string, string>;
  /** Instead of nextPath: the next request whole, for a mix of reads and changes. */
  nextRequest?: () => { method: string; path: string; headers?: Record<string, string>; body?: string };
  connections: number;
  seconds: number;
  /** Process whose memory is sampled: the largest of it and its children (a cluster's workers). */
  pid: number;
}

export interface LoadResult {
  requestsPerSecond: number;
  p50: number;
  p99: number;
  /** One request in a thousand waited longer. */
  p99_9: number;
  max: number;
  errors: number;
  non2xx: number;
  peakRssMb: number;
  /** Answers by status code. */
  statuses: Record<string, number>;
}

/** One slice as autocannon reports it with skipAggregateResult (its histograms still encoded). */
export interface Slice {
  raw: { totalCompletedRequests: number; duration: number };
  origin: string;
  connections: number;
  peakRssKb: number;
}

// Not in @types/autocannon: adds up results run with skipAggregateResult.
const { aggregateResult } = autocannon as unknown as {
  aggregateResult: (results: unknown[], opts: { url: string; connections: number }) => autocannon.Result;
};

/** One run, not yet aggregated, with the server's peak RSS during it. */
export async function runSlice(options: LoadOptions): Promise<Slice> {
  const { nextPath } = options;
  type Next = ReturnType<NonNullable<LoadOptions['nextRequest']>>;
  const next: (() => Next) | null =
    options.nextRequest ?? (nextPath ? () => ({ method: 'GET', path: nextPath() }) : null);
  if (!next) throw new Error('runSlice needs nextPath or nextRequest');
  const { value: raw, peakRssKb } = await withPeakRss(
    options.pid,
    async () =>
      (await autocannon({
        url: options.origin,
        connections: options.connections,
        duration: options.seconds,
        skipAggregateResult: true,
        requests: [
          {
            method: 'GET',
            headers: options.headers,
            setupRequest: (request: autocannon.Request) => {
              const { headers, ...rest } = next();
              return { ...request, ...rest, headers: { ...request.headers, ...headers } } as autocannon.Request;
            },
          },
        ],
      })) as unknown as Slice['raw'],
  );
  return { raw, origin: options.origin, connections: options.connections, peakRssKb };
}

/** Runs `run` while sampling the largest RSS of a process and its children every 100 ms; the highest in kB. */
export async function withPeakRss<T>(pid: number, run: () => Promise<T>): Promise<{ value: T; peakRssKb: number }> {
  let peakRssKb = readLargestRssKb(pid);
  const sampler = setInterval(() => {
    peakRssKb = Math.max(peakRssKb, readLargestRssKb(pid));
  }, 100);
  try {
    const value = await run();
    return { value, peakRssKb: Math.max(peakRssKb, readLargestRssKb(pid)) };
  } finally {
    clearInterval(sampler);
  }
}

/**
 * The slices of one server as one result: requests over the seconds they took (each slice's
 * duration as autocannon measured it), percentiles of all their latencies together.
 */
export function combine(slices: readonly Slice[]): LoadResult {
  const first = slices[0];
  if (!first) throw new Error('combine needs at least one slice');
  const result = aggregateResult(
    slices.map((s) => s.raw),
    { url: first.origin, connections: first.connections },
  );
  const seconds = slices.reduce((sum, s) => sum + s.raw.duration, 0);
  const requests = slices.reduce((sum, s) => sum + s.raw.totalCompletedRequests, 0);
  return {
    requestsPerSecond: requests / seconds,
    p50: result.latency.p50,
    p99: result.latency.p99,
    p99_9: (result.latency as unknown as { p99_9: number }).p99_9,
    max: result.latency.max,
    errors: result.errors + result.timeouts,
    non2xx: result.non2xx,
    peakRssMb: Math.max(...slices.map((s) => s.peakRssKb)) / 1024,
    statuses: Object.fromEntries(
      Object.entries(
        (result as unknown as { statusCodeStats: Record<string, { count: number }> }).statusCodeStats ?? {},
      ).map(([code, { count }]) => [code, count]),
    ),
  };
}

export async function runLoad(options: LoadOptions): Promise<LoadResult> {
  return combine([await runSlice(options)]);
}

/** VmRSS of a process in kB; 0 once it is gone. */
export function readRssKb(pid: number): number {
  return readMemoryKb(pid).rss;
}

/** The largest VmRSS among a process and its children, in kB: a cluster's largest worker. */
function readLargestRssKb(pid: number): number {
  let children: number[] = [];
  try {
    children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8')
      .trim()
      .split(/\s+/)
      .filter(Boolean)
      .map(Number);
  } catch {
    // Gone, or a kernel without the file: the process alone.
  }
  return Math.max(readRssKb(pid), ...children.map(readRssKb));
}

/**
 * Resident memory of a process in kB: all of it (VmRSS), the anonymous part (heap, buffers:
 * what a leak grows) and the file-backed part (the mapped node binary and libraries); zeros
 * once it is gone.
 */
export function readMemoryKb(pid: number): { rss: number; anon: number; file: number } {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const field = (pattern: RegExp) => Number(pattern.exec(status)?.[1] ?? 0);
    return {
      rss: field(/^VmRSS:\s+(\d+) kB$/m),
      anon: field(/^RssAnon:\s+(\d+) kB$/m),
      file: field(/^RssFile:\s+(\d+) kB$/m),
    };
  } catch {
    return { rss: 0, anon: 0, file: 0 };
  }
}
