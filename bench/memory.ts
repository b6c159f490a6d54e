// `npm run bench:memory`: what a server holds in memory, process by process, as WEB_CONCURRENCY
// grows: the product as `npm start` runs it (dist/server.js) and the plain node:http + pg baseline
// (bench/baseline.ts, BASELINE_WORKERS) on the benchmark's databases (bench/run.ts; reused when a
// run before left them). For each size and each count of workers in BENCH_WORKERS (default
// 1,2,4), one after another: the server is started (the product waits for its search process to
// have read the index), the resident sizes of all its processes are read once it is idle, then
// after BENCH_SECONDS (default 10) of person pages, HTML, random persons, 16 connections, with
// their peaks sampled every 100 ms meanwhile. The figure of the issue is the difference per added
// worker: (total at 4 − total at 2) / 2, beside the baseline's. BENCH_SIZES (default 200000).
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildServer, startArguments } from '../bin/build.ts';
import { createRandom } from '../bin/lib/sample-data.ts';
import { runLoad, readRssKb } from './load.ts';
import type { Started } from './run.ts';
import { buildBaseline, prepareDataset, startServer, stopServer } from './run.ts';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const seconds = Number(process.env.BENCH_SECONDS ?? 10);
const sizes = (process.env.BENCH_SIZES ?? '200000').split(',').map(Number);
const workerCounts = (process.env.BENCH_WORKERS ?? '1,2,4').split(',').map(Number);

/** A process and its children (a cluster's primary, workers and search process), pids. */
function tree(pid: number): number[] {
  try {
    const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8')
      .trim()
      .split(/\s+/)
      .filter(Boolean)
      .map(Number);
    return [pid, ...children];
  } catch {
    return [pid];
  }
}

/** Resident MB of every process of the server, summed, and the largest. */
function measureTree(pid: number): { totalMb: number; largestMb: number; processes: number } {
  const sizes = tree(pid)
    .map(readRssKb)
    .filter((kb) => kb > 0);
  return {
    totalMb: sizes.reduce((a, b) => a + b, 0) / 1024,
    largestMb: Math.max(...sizes) / 1024,
    processes: sizes.length,
  };
}

interface Measured {
  server: string;
  works: number;
  workers: number;
  idle: number;
  peak: number;
  largest: number;
  processes: number;
  rps: number;
  p99: number;
}

/**
 * Until every process that keeps an index has read it: /metrics says its works (the highest of
 * the workers' figures, each of which keeps its own where there is no search process), and every
 * worker has answered. The baseline has no index and no /metrics.
 */
async function indexRead(origin: string, works: number, workers: number): Promise<void> {
  for (let i = 0; i < 600; i++) {
    const text = await (await fetch(`${origin}/metrics`)).text();
    const rows = Number(/^portfolio_search_index_rows\{kind="werke"\} (\d+)$/m.exec(text)?.[1] ?? -1);
    if (rows === -1 && !text.includes('portfolio_')) return;
    // Each worker in turn: one that has not read its own index answers 503.
    const searches = await Promise.all(
      Array.from(
        { length: workers * 2 },
        async () =>
          (await fetch(`${origin}/search.json?query=any,contains,hafen`, { headers: { connection: 'close' } })).status,
      ),
    );
    if (rows >= works && searches.every((s) => s === 200)) return;
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
  throw new Error('the index was not read within 10 minutes');
}

async function measure(
  label: string,
  works: number,
  workers: number,
  server: Started,
  slugs: readonly string[],
): Promise<Measured> {
  const pid = server.child.pid as number;
  await indexRead(server.origin, works, workers);
  // Settled: the start's garbage collected.
  await new Promise((resolve) => setTimeout(resolve, 3000));
  const idle = measureTree(pid);
  const random = createRandom(7);
  let peak = idle.totalMb;
  let largest = idle.largestMb;
  const sampler = setInterval(() => {
    const now = measureTree(pid);
    peak = Math.max(peak, now.totalMb);
    largest = Math.max(largest, now.largestMb);
  }, 100);
  const result = await runLoad({
    origin: server.origin,
    connections: 16,
    seconds,
    pid,
    nextPath: () => `/person/${slugs[Math.floor(random() * slugs.length)]}`,
    headers: { accept: 'text/html' },
  });
  clearInterval(sampler);
  return {
    server: label,
    works,
    workers,
    idle: idle.totalMb,
    peak,
    largest,
    processes: idle.processes,
    rps: result.requestsPerSecond,
    p99: result.p99,
  };
}

async function main(): Promise<void> {
  await buildServer();
  const baselineFile = await buildBaseline();
  const rows: Measured[] = [];
  for (const works of sizes) {
    const dataset = await prepareDataset(works, { reuse: true });
    for (const workers of workerCounts) {
      const product = await startServer(`the product (${works} works, ${workers} workers)`, startArguments(), {
        NODE_ENV: 'production',
        PORT: '0',
        HOST: '127.0.0.1',
        DATABASE_URL: dataset.url,
        DEMO_DATA: '0',
        LOG_DIR: path.join(root, 'dist', 'bench-logs-memory'),
        WEB_CONCURRENCY: String(workers),
      });
      try {
        rows.push(await measure('product', works, workers, product, dataset.slugs));
      } finally {
        await stopServer(product);
      }
      const baseline = await startServer(`the baseline (${works} works, ${workers} workers)`, [baselineFile], {
        PORT: '0',
        DATABASE_URL: dataset.url,
        BASELINE_STYLE: 'strong',
        BASELINE_WORKERS: String(workers),
        WEB_CONCURRENCY: String(workers),
      });
      try {
        rows.push(await measure('baseline', works, workers, baseline, dataset.slugs));
      } finally {
        await stopServer(baseline);
      }
    }
  }
  const mb = (n: number) => n.toFixed(0);
  console.log(
    '\n| server | works | workers | processes | idle, all processes | peak under person load, all | largest process | person HTML req/s | p99 ms |',
  );
  console.log('|---|---|---|---|---|---|---|---|---|');
  for (const r of rows) {
    console.log(
      `| ${r.server} | ${r.works} | ${r.workers} | ${r.processes} | ${mb(r.idle)} MB | ${mb(r.peak)} MB | ${mb(r.largest)} MB | ${r.rps.toFixed(0)} | ${r.p99} |`,
    );
  }
  console.log('\nPer added worker, (peak at the most workers − peak at the fewest above 1) / their difference:');
  for (const works of sizes) {
    for (const server of ['product', 'baseline']) {
      const of = rows
        .filter((r) => r.works === works && r.server === server && r.workers > 1)
        .sort((a, b) => a.workers - b.workers);
      const [low, high] = [of[0], of[of.length - 1]];
      if (!low || !high || low === high) continue;
      const perWorker = (key: 'idle' | 'peak') => (high[key] - low[key]) / (high.workers - low.workers);
      console.log(
        `${server}, ${works} works, ${low.workers} → ${high.workers}: idle ${mb(perWorker('idle'))} MB, peak ${mb(perWorker('peak'))} MB a worker`,
      );
    }
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
