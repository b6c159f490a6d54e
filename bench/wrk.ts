// Load from wrk (a load generator written in C, `apt-get install wrk`), for `npm run bench:tail`:
// it needs a fraction of the processor autocannon needs, so on a machine the servers share with
// the load generator it leaves them more of it and drives them harder. Each request asks for one
// of the given paths at random; wrk's own summary (requests, latency percentiles, errors) comes
// back from the script's done() as one line of JSON.
import { spawn, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import type { LoadResult } from './load.ts';

/**
 * One run as wrk reports it: errors are connect, read and write errors and time-outs, non2xx
 * the answers of status 400 or more; latencies in ms.
 */
export type WrkSlice = Pick<LoadResult, 'p50' | 'p99' | 'p99_9' | 'max' | 'errors' | 'non2xx'> & {
  requests: number;
  seconds: number;
};

const script = `
local threads = 0
function setup(thread)
  threads = threads + 1
  thread:set("id", threads)
end
function init(args)
  math.randomseed(tonumber(args[1]) * 100 + id)
  paths = {}
  for line in io.lines(args[2]) do paths[#paths + 1] = line end
end
function request()
  return wrk.format("GET", paths[math.random(#paths)])
end
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('{"requests":%d,"seconds":%f,"p50":%f,"p99":%f,"p99_9":%f,"max":%f,"errors":%d,"non2xx":%d}\\n',
    summary.requests, summary.duration / 1e6, latency:percentile(50) / 1000, latency:percentile(99) / 1000,
    latency:percentile(99.9) / 1000, latency.max / 1000, e.connect + e.read + e.write + e.timeout, e.status))
end
`;

export function wrkInstalled(): boolean {
  return spawnSync('wrk', ['--version'], { stdio: 'ignore' }).error === undefined;
}

/** Writes the script and the paths into `dir`; returns what runWrk needs of them. */
export function prepareWrk(dir: string, paths: readonly string[]): { script: string; paths: string } {
  const files = { script: path.join(dir, 'random-paths.lua'), paths: path.join(dir, 'paths.txt') };
  writeFileSync(files.script, script);
  writeFileSync(files.paths, `${paths.join('\n')}\n`);
  return files;
}

/** One run of wrk with two threads; `seed` makes its choice of paths differ from run to run. */
export function runWrk(options: {
  origin: string;
  files: { script: string; paths: string };
  connections: number;
  seconds: number;
  seed: number;
}): Promise<WrkSlice> {
  const { origin, files, connections, seconds, seed } = options;
  // wrk takes whole seconds.
  const args = [
    '-t2',
    `-c${connections}`,
    `-d${Math.max(1, Math.round(seconds))}s`,
    '--timeout',
    '10s',
    '-s',
    files.script,
    `${origin}/`,
    '--',
    String(seed),
    files.paths,
  ];
  return new Promise((resolve, reject) => {
    const child = spawn('wrk', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), (seconds + 30) * 1000);
    child.once('error', reject);
    child.once('exit', (code) => {
      clearTimeout(timer);
      const line = output.split('\n').find((l) => l.startsWith('{"requests"'));
      if (code !== 0 || !line) return reject(new Error(`wrk exited with ${code}: ${output}`));
      resolve(JSON.parse(line) as WrkSlice);
    });
  });
}

/**
 * Slices of one server as one row: requests over the seconds they took, the longest request, and
 * the median of the slices' percentiles (wrk gives percentiles, not the latencies behind them),
 * in whole ms as autocannon's; each slice with the server's peak RSS during it.
 */
export function combineWrk(slices: readonly (WrkSlice & { peakRssKb: number })[]): LoadResult {
  const median = (pick: (s: WrkSlice) => number) => {
    const sorted = slices.map(pick).sort((a, b) => a - b);
    const mid = Math.floor(sorted.length / 2);
    return sorted.length % 2 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
  };
  const sum = (pick: (s: WrkSlice) => number) => slices.reduce((total, s) => total + pick(s), 0);
  return {
    requestsPerSecond: sum((s) => s.requests) / sum((s) => s.seconds),
    p50: Math.round(median((s) => s.p50)),
    p99: Math.round(median((s) => s.p99)),
    p99_9: Math.round(median((s) => s.p99_9)),
    max: Math.round(Math.max(...slices.map((s) => s.max))),
    errors: sum((s) => s.errors),
    non2xx: sum((s) => s.non2xx),
    peakRssMb: Math.max(...slices.map((s) => s.peakRssKb)) / 1024,
    // wrk counts answers of 400 and more, not each status.
    statuses: {},
  };
}
