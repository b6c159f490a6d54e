// One measured load run: autocannon against a server for a fixed time with a fresh path per
// request, while the server's resident memory is sampled from /proc.
import { readFileSync } from 'node:fs';
import autocannon from 'autocannon';

export interface LoadOptions {
  origin: string;
  /** The path of the next request, e.g. a random person. */
  nextPath: () => string;
  connections: number;
  seconds: number;
  /** Process whose memory is sampled. */
  pid: number;
}

export interface LoadResult {
  requestsPerSecond: number;
  p50: number;
  p99: number;
  errors: number;
  non2xx: number;
  peakRssMb: number;
}

export async function runLoad(options: LoadOptions): Promise<LoadResult> {
  let peakRssKb = readRssKb(options.pid);
  const sampler = setInterval(() => { peakRssKb = Math.max(peakRssKb, readRssKb(options.pid)); }, 100);
  try {
    const result = await autocannon({
      url: options.origin,
      connections: options.connections,
      duration: options.seconds,
      requests: [{ method: 'GET', setupRequest: (request) => ({ ...request, path: options.nextPath() }) }],
    });
    return {
      requestsPerSecond: result.requests.total / options.seconds,
      p50: result.latency.p50,
      p99: result.latency.p99,
      errors: result.errors + result.timeouts,
      non2xx: result.non2xx,
      peakRssMb: peakRssKb / 1024,
    };
  } finally {
    clearInterval(sampler);
  }
}

/** VmRSS of a process in kB; 0 once it is gone. */
export function readRssKb(pid: number): number {
  return readMemoryKb(pid).rss;
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
    return { rss: field(/^VmRSS:\s+(\d+) kB$/m), anon: field(/^RssAnon:\s+(\d+) kB$/m), file: field(/^RssFile:\s+(\d+) kB$/m) };
  } catch {
    return { rss: 0, anon: 0, file: 0 };
  }
}
