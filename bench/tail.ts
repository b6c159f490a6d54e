// `npm run bench:tail`: the tail under pressure (docs/performance.md, Tail latency). The product
// with WEB_CONCURRENCY=2 against the strong baseline as a plain node:cluster of two workers
// (bench/baseline.ts, BASELINE_WORKERS=2), taking turns in short slices: person JSON at 64
// connections alone, then beside a neighbour whose load varies (bounded bursts of busy loops in two
// threads); where wrk is installed, alone again driven by wrk (bench/wrk.ts), which needs less of
// the processor than autocannon and so drives the servers harder; then alone and beside the
// neighbour at a fixed rate, each latency counted from when the request was due
// (bench/open-loop.ts), which shows stalls a closed loop hides. Then the product alone in a mixed
// case: person and work pages, person lists, uncached searches and a librarian's changes, at 64
// connections. Each case reports req/s, p50, p99, p99.9,
// max and the largest process's peak RSS (a worker's, in cluster mode).
// BENCH_WORKS (default 200000; the database of `npm run bench`, reused when it is there),
// BENCH_SECONDS (default 20) per server and case, BENCH_SLICES (default 8), BENCH_RATE (default
// 3000 requests/s) for the fixed-rate cases.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { buildServer, startArguments } from '../bin/build.ts';
import { createRandom, titleNouns } from '../bin/lib/sample-data.ts';
import type { LoadOptions, LoadResult, Slice } from './load.ts';
import { combine, runSlice, withPeakRss } from './load.ts';
import { keepAliveAgent, percentile, runAtRate } from './open-loop.ts';
import type { Started } from './run.ts';
import { buildBaseline, prepareDataset, startServer, stopServer, watchStatements } from './run.ts';
import type { WrkSlice } from './wrk.ts';
import { combineWrk, prepareWrk, runWrk, wrkInstalled } from './wrk.ts';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const works = Number(process.env.BENCH_WORKS ?? 200_000);
const seconds = Number(process.env.BENCH_SECONDS ?? 20);
const slices = Number(process.env.BENCH_SLICES ?? 8);
const rate = Number(process.env.BENCH_RATE ?? 3000);
const connections = 64;

type Request = ReturnType<NonNullable<LoadOptions['nextRequest']>>;

/**
 * A neighbour whose load varies: two threads that each spin for 20–300 ms, then rest for
 * 20–400 ms (about 0.9 of a core on average, from none to two), until it is stopped or `ms` pass.
 */
function startNeighbour(ms: number): () => Promise<void> {
  const script = `
    const { Worker } = require('node:worker_threads');
    const end = Date.now() + ${Math.round(ms)};
    const code = 'const end = ' + end + '; const rest = new Int32Array(new SharedArrayBuffer(4));' +
      'while (Date.now() < end) { const t = Date.now(), busy = 20 + Math.random() * 280; while (Date.now() - t < busy); Atomics.wait(rest, 0, 0, 20 + Math.random() * 380); }';
    for (let i = 0; i < 2; i++) new Worker(code, { eval: true });`;
  const child = spawn(process.execPath, ['-e', script], { stdio: 'ignore' });
  return () =>
    new Promise((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve();
      child.once('exit', () => resolve());
      child.kill('SIGKILL');
    });
}

/**
 * The servers take turns, one slice each, in the order A B, B A, A B, …, each slice after the
 * database is quiet and, with `neighbour`, beside a neighbour started for it and stopped after it.
 */
async function inTurns<S>(
  servers: readonly S[],
  quiet: () => Promise<void>,
  neighbour: boolean,
  slice: (server: S) => Promise<void>,
): Promise<void> {
  for (let turn = 0; turn < slices; turn++) {
    for (const server of turn % 2 === 0 ? servers : [...servers].reverse()) {
      await quiet();
      const stopNeighbour = neighbour ? startNeighbour((seconds / slices) * 1000 + 2000) : null;
      try {
        await slice(server);
      } finally {
        await stopNeighbour?.();
      }
    }
  }
}

/** A librarian account in the benchmark's database (npm run accounts), for the mixed case's changes. */
function ensureLibrarian(url: string): { username: string; password: string } {
  const account = { username: 'bench-librarian', password: 'bench-librarian-password' };
  const env = { ...process.env, DATABASE_URL: url };
  const listed = spawnSync(process.execPath, ['--import', 'tsx', 'bin/accounts.ts', 'list'], {
    cwd: root,
    env,
    encoding: 'utf8',
  });
  if (!listed.stdout.includes(account.username)) {
    const added = spawnSync(
      process.execPath,
      ['--import', 'tsx', 'bin/accounts.ts', 'add', account.username, '--role', 'librarian'],
      {
        cwd: root,
        env,
        input: `${account.password}\n`,
        encoding: 'utf8',
      },
    );
    if (added.status !== 0) throw new Error(`npm run accounts add failed: ${added.stderr}`);
  }
  return account;
}

/** Logs in through the form: the session cookie and its CSRF token. */
async function logIn(
  origin: string,
  account: { username: string; password: string },
): Promise<{ cookie: string; csrf: string }> {
  const form = await fetch(`${origin}/login`);
  const anonymous = (form.headers.get('set-cookie') ?? '').split(';')[0] as string;
  const token = /name="csrf_token" value="([^"]+)"/.exec(await form.text())?.[1] ?? '';
  const res = await fetch(`${origin}/login`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: anonymous, origin },
    body: new URLSearchParams({ username: account.username, password: account.password, csrf_token: token }).toString(),
  });
  const cookie = (res.headers.get('set-cookie') ?? '').split(';')[0] as string;
  if (res.status !== 303 || !cookie) throw new Error(`logging in as ${account.username} answered ${res.status}`);
  const page = await (await fetch(`${origin}/personen/neu`, { headers: { cookie } })).text();
  const csrf = /name="csrf_token" value="([^"]+)"/.exec(page)?.[1];
  if (!csrf) throw new Error('no CSRF token on /personen/neu after logging in');
  return { cookie, csrf };
}

/**
 * What a catalogue's visitors and staff ask for, per 100 requests: 45 person pages (JSON, XML,
 * HTML), 20 work pages, 10 person list pages, 22 searches for one or two title words (few repeat),
 * and 3 new works by a logged-in librarian, which end the kept results of everyone.
 */
function mixedRequests(
  random: () => number,
  slugs: readonly string[],
  origin: string,
  session: { cookie: string; csrf: string },
): () => Request {
  const pick = <T>(list: readonly T[]) => list[Math.floor(random() * list.length)] as T;
  const formats = ['json', 'xml', 'html'];
  let made = 0;
  return () => {
    const roll = random() * 100;
    if (roll < 45) return { method: 'GET', path: `/person/${pick(slugs)}.${pick(formats)}` };
    if (roll < 65) return { method: 'GET', path: `/werk/${1 + Math.floor(random() * works)}.${pick(formats)}` };
    if (roll < 75)
      return { method: 'GET', path: `/personen.json?offset=${50 * Math.floor(random() * (slugs.length / 50))}` };
    if (roll < 97) {
      const words = random() < 0.5 ? pick(titleNouns) : `${pick(titleNouns)} ${pick(titleNouns)}`;
      return { method: 'GET', path: `/search.json?query=${encodeURIComponent(`any,contains,${words.toLowerCase()}`)}` };
    }
    return {
      method: 'POST',
      path: `/person/${pick(slugs)}/werke`,
      headers: {
        cookie: session.cookie,
        'x-csrf-token': session.csrf,
        origin,
        'content-type': 'application/json',
        accept: 'application/json',
      },
      body: JSON.stringify({ titel: `Lastprobe ${++made}`, jahr: 2026 }),
    };
  };
}

async function removeMadeWorks(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query("DELETE FROM werk WHERE titel LIKE 'Lastprobe %'");
  } finally {
    await client.end();
  }
}

function line(label: string, r: LoadResult): string {
  return `| ${label} | ${r.requestsPerSecond.toFixed(0)} | ${r.p50} | ${r.p99} | ${r.p99_9} | ${r.max} | ${r.errors} | ${r.non2xx} | ${r.peakRssMb.toFixed(0)} |`;
}

async function main(): Promise<void> {
  const started = Date.now();
  await buildServer();
  const baselineFile = await buildBaseline();
  const dataset = await prepareDataset(works, { reuse: true });
  const librarian = ensureLibrarian(dataset.url);
  const logDir = mkdtempSync(path.join(os.tmpdir(), 'portfolio-bench-tail-'));
  const quiet = await watchStatements([new URL(dataset.url).pathname.slice(1)]);
  const servers: { role: string; server: Started }[] = [];
  const table = [
    '| case | server | req/s | p50 ms | p99 ms | p99.9 ms | max ms | errors | non-2xx | peak RSS MB |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  try {
    servers.push({
      role: 'product, WEB_CONCURRENCY=2',
      server: await startServer('the product', startArguments(), {
        NODE_ENV: 'production',
        PORT: '0',
        HOST: '127.0.0.1',
        DATABASE_URL: dataset.url,
        DEMO_DATA: '0',
        LOG_DIR: logDir,
        WEB_CONCURRENCY: '2',
      }),
    });
    servers.push({
      role: 'baseline, node:cluster of 2',
      server: await startServer('the baseline', [baselineFile], {
        PORT: '0',
        DATABASE_URL: dataset.url,
        BASELINE_STYLE: 'strong',
        BASELINE_WORKERS: '2',
      }),
    });
    const person = (random: () => number) => () =>
      `/person/${dataset.slugs[Math.floor(random() * dataset.slugs.length)]}.json`;
    const cases = [
      { name: 'person JSON', neighbour: false },
      { name: 'person JSON, beside a varying neighbour', neighbour: true },
    ];
    for (const [i, c] of cases.entries()) {
      const sliced = new Map(servers.map((s) => [s, [] as Slice[]]));
      const randoms = new Map(servers.map((s) => [s, createRandom(2000 + i)]));
      for (const s of servers)
        await runSlice({
          origin: s.server.origin,
          nextPath: person(createRandom(1)),
          connections,
          seconds: 2,
          pid: s.server.child.pid ?? 0,
        });
      await inTurns(servers, quiet, c.neighbour, async (s) => {
        sliced.get(s)!.push(
          await runSlice({
            origin: s.server.origin,
            nextPath: person(randoms.get(s)!),
            connections,
            seconds: seconds / slices,
            pid: s.server.child.pid ?? 0,
          }),
        );
      });
      const results = servers.map((s) => ({ role: s.role, result: combine(sliced.get(s)!) }));
      for (const { role, result } of results) table.push(line(`${c.name} | ${role}`, result));
      const [product, baseline] = results.map((r) => r.result) as [LoadResult, LoadResult];
      console.log(
        `bench: ${c.name}: product p99 ${product.p99} ms, ${(product.p99 / baseline.p99).toFixed(2)}x the cluster baseline's (${baseline.p99} ms); req/s ${(product.requestsPerSecond / baseline.requestsPerSecond).toFixed(2)}x`,
      );
    }
    // The same closed loop driven by wrk, which leaves the servers more of the processor.
    if (wrkInstalled()) {
      const name = "person JSON, wrk (median of the slices' percentiles)";
      const files = prepareWrk(
        logDir,
        dataset.slugs.map((slug) => `/person/${slug}.json`),
      );
      const sliced = new Map(servers.map((s) => [s, [] as (WrkSlice & { peakRssKb: number })[]]));
      let seed = 0;
      await inTurns(servers, quiet, false, async (s) => {
        const { value, peakRssKb } = await withPeakRss(s.server.child.pid ?? 0, () =>
          runWrk({ origin: s.server.origin, files, connections, seconds: seconds / slices, seed: ++seed }),
        );
        sliced.get(s)!.push({ ...value, peakRssKb });
      });
      const [product, baseline] = servers.map((s) => {
        const result = combineWrk(sliced.get(s)!);
        table.push(line(`${name} | ${s.role}`, result));
        return { result, p99s: sliced.get(s)!.map((x) => x.p99) };
      }) as [{ result: LoadResult; p99s: number[] }, { result: LoadResult; p99s: number[] }];
      const pairs = product.p99s.map((p99, i) => (p99 / (baseline.p99s[i] ?? p99)).toFixed(2));
      console.log(
        `bench: ${name}: product p99 ${product.result.p99} ms, ${(product.result.p99 / baseline.result.p99).toFixed(2)}x the cluster baseline's (${baseline.result.p99} ms); per slice ${pairs.join(', ')}; req/s ${(product.result.requestsPerSecond / baseline.result.requestsPerSecond).toFixed(2)}x`,
      );
    } else {
      console.log('bench: no wrk on this machine (apt-get install wrk): its case is left out');
    }
    // The same pages at a fixed rate, latency from the due time (bench/open-loop.ts).
    for (const neighbour of [false, true]) {
      const name = `person JSON at ${rate} req/s, from the due time${neighbour ? ', beside a varying neighbour' : ''}`;
      const runs = new Map(
        servers.map((s) => [
          s,
          {
            latencies: [] as number[],
            opening: [] as number[],
            errorCodes: {} as Record<string, number>,
            non2xx: 0,
            achieved: 0,
            peakRssKb: 0,
          },
        ]),
      );
      const randoms = new Map(servers.map((s) => [s, createRandom(neighbour ? 4001 : 4000)]));
      // Each server keeps its connections from slice to slice, as a proxy in front of it would:
      // the tail measured is that of requests, not of opening connections (reported apart).
      const agents = new Map(servers.map((s) => [s, keepAliveAgent(connections)]));
      await inTurns(servers, quiet, neighbour, async (s) => {
        const run = runs.get(s)!;
        const { value: r, peakRssKb } = await withPeakRss(s.server.child.pid ?? 0, () =>
          runAtRate({
            origin: s.server.origin,
            nextPath: person(randoms.get(s)!),
            rate,
            seconds: seconds / slices,
            connections,
            agent: agents.get(s),
          }),
        );
        run.latencies.push(...r.latencies);
        run.opening.push(...r.opening);
        for (const [code, count] of Object.entries(r.errorCodes))
          run.errorCodes[code] = (run.errorCodes[code] ?? 0) + count;
        run.non2xx += r.non2xx;
        run.achieved += r.achieved / slices;
        run.peakRssKb = Math.max(run.peakRssKb, peakRssKb);
      });
      for (const agent of agents.values()) agent.destroy();
      const p99s: number[] = [];
      for (const s of servers) {
        const run = runs.get(s)!;
        const sorted = run.latencies.sort((a, b) => a - b);
        const at = (p: number) => Math.round(percentile(sorted, p));
        p99s.push(percentile(sorted, 99));
        const errors = Object.values(run.errorCodes).reduce((sum, count) => sum + count, 0);
        table.push(
          `| ${name} | ${s.role} | ${run.achieved.toFixed(0)} | ${at(50)} | ${at(99)} | ${at(99.9)} | ${at(100)} | ${errors} | ${run.non2xx} | ${(run.peakRssKb / 1024).toFixed(0)} |`,
        );
        const opened = run.opening.sort((a, b) => a - b);
        console.log(
          `bench: ${name}: ${s.role}: ${opened.length} requests opened a connection, p50 ${percentile(opened, 50).toFixed(1)} ms, max ${(opened[opened.length - 1] ?? 0).toFixed(1)} ms${errors ? `; errors ${JSON.stringify(run.errorCodes)}` : ''}`,
        );
      }
      console.log(
        `bench: ${name}: product p99 ${p99s[0]?.toFixed(1)} ms, ${((p99s[0] ?? 0) / (p99s[1] ?? 1)).toFixed(2)}x the cluster baseline's (${p99s[1]?.toFixed(1)} ms)`,
      );
    }
    // The baseline has no changes, searches of words or sessions: the mixed case is the product's alone.
    const product = servers[0]!.server;
    const session = await logIn(product.origin, librarian);
    await quiet();
    const mixed = combine([
      await runSlice({
        origin: product.origin,
        nextRequest: mixedRequests(createRandom(3000), dataset.slugs, product.origin, session),
        connections,
        seconds,
        pid: product.child.pid ?? 0,
      }),
    ]);
    table.push(line(`mixed: 45% person, 20% work, 10% list, 22% search, 3% change | ${servers[0]!.role}`, mixed));
    console.log(`bench: mixed: answers by status ${JSON.stringify(mixed.statuses)}`);
    // The works it made go, so that the database is the generated one again for the next run
    // (after the changes still under way when the load stopped).
    await new Promise((resolve) => setTimeout(resolve, 1000));
    await quiet();
    await removeMadeWorks(dataset.url);
  } finally {
    await Promise.all([...servers.map((s) => stopServer(s.server)), quiet.end()]);
    rmSync(logDir, { recursive: true, force: true });
  }
  const minutes = ((Date.now() - started) / 60_000).toFixed(1);
  console.log(
    `\n${os.cpus().length} cores, ${works.toLocaleString('en')} works, ${connections} connections, ${seconds} s per server and case in ${slices} turns; ${minutes} min\n\n${table.join('\n')}\n`,
  );
}

main().catch((err: unknown) => {
  console.error(`bench: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
