// `npm run bench:search`: search as a catalogue's users meet it, on the benchmark's databases
// (bench/run.ts; reused when a run before left them, generated otherwise), against the site's
// former substring search (the baseline's search, bench/baseline.ts) and PostgreSQL's full-text
// search done well (the same baseline with BASELINE_SEARCH=fts: German stemming, unaccent, GIN,
// ranked top hits, facets; its tables made here once per database) in the same run:
// - one and two words drawn from the generated titles and names, so frequent words come up as
//   often as they are in the data, at 1 and at 64 connections, with every kept result made stale
//   ten times a second by a change, so that a search is made anew on a word index that has caught
//   up with the change unless the same words were asked within that tenth of a second: the share
//   of answers for which a search was made (portfolio_searches_total over the answers) is
//   reported beside the requests/s; one worker process, and at 64 connections also two, as
//   deploy/ runs the product on two cores;
// - person HTML at 16 connections on the one process with the index and on the same without it
//   (its search process's socket names nothing: no index is read), each started for this case
//   and given only person pages (a process that has answered searches also keeps their results,
//   up to KEPT_MAX_MB): what keeping the index costs the other pages;
// - person pages at 16 connections alone, then beside 12 clients that send the most expensive
//   searches a client can (4 two-letter wildcards and 8 one-letter words, ORed), each uncached.
// BENCH_SECONDS (default 10) per server and case in BENCH_SLICES (default 4) turns, after
// BENCH_WARMUP_SECONDS (default 5) of searches per server; BENCH_SIZES. BENCH_COMPARE, the folder
// of another checkout of the project, built: its product runs beside this one in every case, in
// the same turns (a change's paired figures); BENCH_PEERS=0 leaves out the baseline and the peer.
import path from 'node:path';
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { buildServer, startArguments } from '../bin/build.ts';
import { createRandom, makeName, makeTitle } from '../bin/lib/sample-data.ts';
import type { LoadResult, Slice } from './load.ts';
import { combine, runSlice } from './load.ts';
import type { Started } from './run.ts';
import { buildBaseline, prepareDataset, startServer, stopServer, watchStatements } from './run.ts';
import { ftsSetup } from './baseline.ts';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const seconds = Number(process.env.BENCH_SECONDS ?? 10);
const slices = Number(process.env.BENCH_SLICES ?? 4);
const sizes = (process.env.BENCH_SIZES ?? '200000,1000000').split(',').map(Number);
const warmUpSeconds = Number(process.env.BENCH_WARMUP_SECONDS ?? 5);
const compare = process.env.BENCH_COMPARE ? path.resolve(process.env.BENCH_COMPARE) : null;
const peers = process.env.BENCH_PEERS !== '0';

const pick = <T>(random: () => number, list: readonly T[]) => list[Math.floor(random() * list.length)] as T;

/** One or two words of a generated title (four in five) or name: as frequent as in the data. */
function userSearch(random: () => number): string {
  const words = random() < 0.8 ? makeTitle(random).split(' ') : Object.values(makeName(random)).join(' ').split(' ');
  const first = pick(random, words);
  const term =
    random() < 0.5
      ? first
      : `${first} ${
          pick(
            random,
            words.filter((w) => w !== first),
          ) ?? ''
        }`.trim();
  return `/search.json?query=${encodeURIComponent(`any,contains,${term}`)}`;
}

/** The dearest search the product takes: 4 two-letter wildcards and 8 one-letter words, ORed, each asked once. */
function expensiveSearch(random: () => number): string {
  const letters = [...'abcdefghiklmnoprstuw'];
  const words = [
    ...Array.from({ length: 4 }, () => `${pick(random, letters)}${pick(random, letters)}*`),
    ...Array.from({ length: 8 }, () => pick(random, letters)),
  ];
  return `/search.json?query=${encodeURIComponent(`any,contains,${words.join(' OR ')}`)}`;
}

type Server =
  | 'product'
  | 'product, 2 workers'
  | 'product, index, pages only'
  | 'product, no index'
  | 'compared'
  | 'compared, 2 workers'
  | 'baseline'
  | 'PostgreSQL full-text';

interface Case {
  name: string;
  connections: number;
  path: (random: () => number) => string;
  servers: Server[];
}

interface Measured {
  works: number;
  case: string;
  server: Server;
  result: LoadResult;
  repeated: number;
  madeAnew: number | null;
}

/** The full-text peer's tables and GIN indexes, made once per database; their bytes. */
async function preparePeer(url: string): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const setting = Date.now();
    for (const statement of ftsSetup) await client.query(statement);
    const { rows } = await client.query<{ bytes: string }>(
      `SELECT (pg_total_relation_size('bench_fts_werk') + pg_total_relation_size('bench_fts_person'))::text AS bytes`,
    );
    console.log(`bench: the full-text peer's tables ready in ${((Date.now() - setting) / 1000).toFixed(1)} s`);
    return Number(rows[0]?.bytes ?? 0);
  } finally {
    await client.end();
  }
}

/** portfolio_search_index_bytes of a product server. */
async function indexBytes(origin: string): Promise<number> {
  const text = await (await fetch(`${origin}/metrics`)).text();
  return Number(/^portfolio_search_index_bytes (\d+)$/m.exec(text)?.[1] ?? 0);
}

/** The searches a server has made on its word index (portfolio_searches_total); null for the baseline, which has no /metrics. */
async function searchesMade(origin: string): Promise<number | null> {
  const res = await fetch(`${origin}/metrics`);
  const text = await res.text();
  const made = /^portfolio_searches_total (\d+)$/m.exec(text);
  return res.ok && made ? Number(made[1]) : null;
}

async function main(): Promise<void> {
  const started = Date.now();
  await buildServer();
  const baselineFile = await buildBaseline();
  const rows: Measured[] = [];
  const burstRows: string[] = [];
  const memoryRows: string[] = [];
  for (const works of sizes) {
    const dataset = await prepareDataset(works, { reuse: true });
    const productEnv = (workers: string, logs: string) => ({
      NODE_ENV: 'production',
      PORT: '0',
      HOST: '127.0.0.1',
      DATABASE_URL: dataset.url,
      DEMO_DATA: '0',
      LOG_DIR: path.join(root, 'dist', logs),
      WEB_CONCURRENCY: workers,
    });
    const comparedArguments = compare
      ? [...startArguments().slice(0, -1), path.join(compare, 'dist', 'server.js')]
      : [];
    const running = new Map<Server, Started>();
    running.set(
      'product',
      await startServer(`the product (${works} works)`, startArguments(), productEnv('1', 'bench-logs')),
    );
    running.set(
      'product, 2 workers',
      await startServer(
        `the product with two workers (${works} works)`,
        startArguments(),
        productEnv('2', 'bench-logs-2'),
      ),
    );
    // For person pages only: one process with the index, and the same without it (its search
    // process's socket names nothing, so its searches are 503 and nothing of the index is read).
    const pagesOnly = await startServer(
      `the product for person pages (${works} works)`,
      startArguments(),
      productEnv('1', 'bench-logs-p'),
    );
    running.set('product, index, pages only', pagesOnly);
    // One process serves before its index is read (an empty one holds a few buffers of 64 KB): it
    // is waited for, at most two minutes.
    for (let i = 0; i < 240 && (await indexBytes(pagesOnly.origin)) < 2 ** 20; i++)
      await new Promise((resolve) => setTimeout(resolve, 500));
    running.set(
      'product, no index',
      await startServer(`the product without the index (${works} works)`, startArguments(), {
        ...productEnv('1', 'bench-logs-n'),
        PORTFOLIO_SEARCH_SOCKET: path.join(root, 'dist', 'no-search-process.sock'),
      }),
    );
    if (compare) {
      running.set(
        'compared',
        await startServer(
          `the product of ${compare} (${works} works)`,
          comparedArguments,
          productEnv('1', 'bench-logs-c'),
        ),
      );
      running.set(
        'compared, 2 workers',
        await startServer(
          `the product of ${compare} with two workers (${works} works)`,
          comparedArguments,
          productEnv('2', 'bench-logs-c2'),
        ),
      );
    }
    let peerSize = 0;
    if (peers) {
      running.set(
        'baseline',
        await startServer(`the baseline (${works} works)`, [baselineFile], {
          PORT: '0',
          DATABASE_URL: dataset.url,
          BASELINE_STYLE: 'strong',
        }),
      );
      peerSize = await preparePeer(dataset.url);
      running.set(
        'PostgreSQL full-text',
        await startServer(`the full-text peer (${works} works)`, [baselineFile], {
          PORT: '0',
          DATABASE_URL: dataset.url,
          BASELINE_STYLE: 'strong',
          BASELINE_SEARCH: 'fts',
        }),
      );
    }
    const product = running.get('product') as Started;
    const quiet = await watchStatements([new URL(dataset.url).pathname.slice(1)]);
    // Every kept result stale ten times a second: a change to one work, as an editor makes.
    const writer = new pg.Client({ connectionString: dataset.url });
    await writer.connect();
    let writing = true;
    const changes = (async () => {
      while (writing) {
        await writer.query('UPDATE werk SET jahr = jahr WHERE id = 1');
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    })();
    try {
      const cases: Case[] = [
        {
          name: 'search, 1-2 words, uncached, 1 connection',
          connections: 1,
          path: userSearch,
          servers: ['product', 'compared', 'baseline', 'PostgreSQL full-text'],
        },
        {
          name: 'search, 1-2 words, uncached, 64 connections',
          connections: 64,
          path: userSearch,
          servers: [
            'product',
            'product, 2 workers',
            'compared',
            'compared, 2 workers',
            'baseline',
            'PostgreSQL full-text',
          ],
        },
        // What keeping the index costs the other pages of its process: one process with it, one without.
        {
          name: 'person HTML, 16 connections',
          connections: 16,
          path: (random: () => number) => `/person/${pick(random, dataset.slugs)}`,
          servers: ['product, index, pages only', 'product, no index'],
        },
      ].map((c) => ({ ...c, servers: c.servers.filter((name) => running.has(name as Server)) as Server[] }));
      // Warm-up, as bench/run.ts has: the search's code compiled by V8 in every worker (cold, a
      // worker served a third less in its first ten seconds), the database's pages read.
      const warm = createRandom(99);
      for (const [name, server] of running) {
        await quiet();
        const warmPath =
          name === 'product, no index' || name === 'product, index, pages only'
            ? () => `/person/${pick(warm, dataset.slugs)}`
            : () => userSearch(warm);
        await runSlice({
          origin: server.origin,
          connections: 64,
          seconds: warmUpSeconds,
          pid: server.child.pid ?? 0,
          nextPath: warmPath,
        });
      }
      for (const [i, c] of cases.entries()) {
        const servers: [Server, Started][] = c.servers.map((name) => [name, running.get(name) as Started]);
        const sliced = new Map<string, { slices: Slice[]; paths: string[]; made: number | null }>(
          servers.map(([name]) => [name, { slices: [], paths: [], made: 0 }]),
        );
        const randoms = new Map(servers.map(([name]) => [name, createRandom(2000 + i)]));
        for (let turn = 0; turn < slices; turn++) {
          for (const [name, server] of turn % 2 === i % 2 ? servers : [...servers].reverse()) {
            const random = randoms.get(name)!;
            const entry = sliced.get(name)!;
            await quiet();
            const before = c.name.startsWith('search') ? await searchesMade(server.origin) : null;
            entry.slices.push(
              await runSlice({
                origin: server.origin,
                connections: c.connections,
                seconds: seconds / slices,
                pid: server.child.pid ?? 0,
                nextPath: () => {
                  const p = c.path(random);
                  entry.paths.push(p);
                  return p;
                },
              }),
            );
            const after = await searchesMade(server.origin);
            entry.made = entry.made === null || before === null || after === null ? null : entry.made + after - before;
          }
        }
        for (const [name] of servers) {
          const entry = sliced.get(name)!;
          const result = combine(entry.slices);
          const repeated = 1 - new Set(entry.paths).size / Math.max(1, entry.paths.length);
          const answered = entry.slices.reduce((sum, slice) => sum + slice.raw.totalCompletedRequests, 0);
          const madeAnew = entry.made === null ? null : entry.made / Math.max(1, answered);
          rows.push({ works, case: c.name, server: name, result, repeated, madeAnew });
          console.log(
            `bench: ${works} ${c.name} ${name}: ${result.requestsPerSecond.toFixed(0)} req/s p50 ${result.p50} p99 ${result.p99} p99.9 ${result.p99_9} max ${result.max} errors ${result.errors} non2xx ${result.non2xx}${madeAnew === null ? '' : ` made anew ${(madeAnew * 100).toFixed(1)}%`}`,
          );
        }
      }
      // Person pages alone, then beside 12 clients sending the dearest searches.
      const personPath = (random: () => number) => `/person/${pick(random, dataset.slugs)}.json`;
      await quiet();
      const alone = combine([
        await runSlice({
          origin: product.origin,
          connections: 16,
          seconds,
          pid: product.child.pid ?? 0,
          nextPath: (
            (r) => () =>
              personPath(r)
          )(createRandom(7)),
        }),
      ]);
      await quiet();
      const burstRandom = createRandom(8);
      const [beside, burst] = await Promise.all([
        runSlice({
          origin: product.origin,
          connections: 16,
          seconds,
          pid: product.child.pid ?? 0,
          nextPath: (
            (r) => () =>
              personPath(r)
          )(createRandom(7)),
        }),
        runSlice({
          origin: product.origin,
          connections: 12,
          seconds,
          pid: product.child.pid ?? 0,
          nextPath: () => expensiveSearch(burstRandom),
        }),
      ]);
      const besideResult = combine([beside]);
      const burstResult = combine([burst]);
      const fmt = (r: LoadResult) =>
        `${r.requestsPerSecond.toFixed(0)} | ${r.p50} | ${r.p99} | ${r.p99_9} | ${r.max} | ${r.errors} | ${r.non2xx}`;
      burstRows.push(`| ${works} | person JSON, 16 connections, alone | ${fmt(alone)} |`);
      burstRows.push(`| ${works} | person JSON, 16 connections, beside the searches | ${fmt(besideResult)} |`);
      burstRows.push(`| ${works} | 12 clients of 12-word OR searches with 4 wildcards | ${fmt(burstResult)} |`);
      console.log(burstRows.slice(-3).join('\n'));
    } finally {
      writing = false;
      await changes;
      await writer.end();
      await quiet.end();
      const compared = running.get('compared');
      memoryRows.push(
        `| ${works} | ${((await indexBytes(product.origin)) / 2 ** 20).toFixed(0)} MB outside the heap${compared ? ` (compared: ${((await indexBytes(compared.origin)) / 2 ** 20).toFixed(0)} MB)` : ''} | ${peers ? `${(peerSize / 2 ** 20).toFixed(0)} MB of tables and GIN indexes (in PostgreSQL's cache)` : 'not run'} |`,
      );
      await Promise.all([...running.values()].map(stopServer));
    }
  }
  const minutes = ((Date.now() - started) / 60_000).toFixed(1);
  const table = [
    '| works | case | server | req/s | p50 ms | p99 ms | p99.9 ms | max ms | errors | non-2xx | repeated URLs | searches made anew | made anew/s | peak RSS, largest process |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|',
    ...rows.map(
      (r) =>
        `| ${r.works} | ${r.case} | ${r.server} | ${r.result.requestsPerSecond.toFixed(0)} | ${r.result.p50} | ${r.result.p99} | ${r.result.p99_9} | ${r.result.max} | ${r.result.errors} | ${r.result.non2xx} | ${(r.repeated * 100).toFixed(0)}% | ${r.madeAnew === null ? '' : `${(r.madeAnew * 100).toFixed(1)}%`} | ${r.madeAnew === null ? '' : (r.madeAnew * r.result.requestsPerSecond).toFixed(0)} | ${r.result.peakRssMb.toFixed(0)} MB |`,
    ),
  ].join('\n');
  const burst = [
    '| works | load | req/s | p50 ms | p99 ms | p99.9 ms | max ms | errors | non-2xx |',
    '|---|---|---|---|---|---|---|---|---|',
    ...burstRows,
  ].join('\n');
  const memory = ["| works | the product's word index | the full-text peer's |", '|---|---|---|', ...memoryRows].join(
    '\n',
  );
  const text = `# Search benchmark\n\n${seconds} s per server and case in ${slices} turns, kept results made stale ten times a second; whole run ${minutes} min, ${new Date().toISOString().slice(0, 10)}. The baseline is the former substring search; the PostgreSQL full-text peer is bench/baseline.ts with BASELINE_SEARCH=fts.\n\n${table}\n\n## What the index holds\n\n${memory}\n\n## Expensive searches beside person pages\n\n${burst}\n`;
  writeFileSync(path.join(root, 'bench/search-results.md'), text);
  console.log(`\n${text}`);
}

main().catch((err: unknown) => {
  console.error(`bench: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
