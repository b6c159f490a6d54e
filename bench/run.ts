// `npm run bench`: generates persons and works on the local PostgreSQL, starts the product as
// `npm start` does (dist/server.js, production mode, access log on) and the hand-written baseline
// (bench/baseline.ts, built to plain JavaScript as well), drives
// both with autocannon in turn, and prints the table that bench/results.md keeps.
// BENCH_SECONDS (default 10) per server and case, taken in BENCH_SLICES (default 4) turns,
// BENCH_SIZES (default 200000,1000000) works,
// BENCH_CASES (default all: names, or parts of names, separated by commas, e.g. "person HTML"),
// BENCH_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/portfolio_bench; one database per
// size, portfolio_bench_200000 and so on, each re-created), BENCH_REUSE=1 (keep the databases an
// earlier run generated when they have the size and every migration).
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import pg from 'pg';
import { buildServer, startArguments } from '../bin/build.ts';
import { migrate, openPostgres } from '../lib/db/index.ts';
import { generateData } from '../bin/lib/fill-database.ts';
import { createRandom, titleAdjectives, titleNouns, titlePlaces } from '../bin/lib/sample-data.ts';
import type { LoadResult, Slice } from './load.ts';
import { combine, runLoad, runSlice } from './load.ts';
import type { Row } from './report.ts';
import { checkTargets, formatTable } from './report.ts';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const seconds = Number(process.env.BENCH_SECONDS ?? 10);
const slices = Number(process.env.BENCH_SLICES ?? 4);
const sizes = (process.env.BENCH_SIZES ?? '200000,1000000').split(',').map(Number);
const databaseUrl = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/portfolio_bench';
const reuse = process.env.BENCH_REUSE === '1';
const caseFilter =
  process.env.BENCH_CASES?.split(',')
    .map((n) => n.trim())
    .filter(Boolean) ?? [];
const worksPerPerson = 50;
const connections = 64;

interface Case {
  name: string;
  connections: number;
  path: (random: () => number) => string;
  /** Sent with every request of the case, e.g. Accept-Encoding. */
  headers?: Record<string, string>;
}

// What browsers send: the product answers brotli, the baselines ignore it and send the bytes as they are.
const compressed = { 'accept-encoding': 'br, gzip' };

function defineCases(slugs: readonly string[]): Case[] {
  const pick = <T>(random: () => number, list: readonly T[]) => list[Math.floor(random() * list.length)] as T;
  const nouns = titleNouns.map((n) => n.toLowerCase());
  const stems = titleAdjectives.map((a) => a.replace(/e$/, ''));
  const contains = (r: () => number) => `/search.json?query=${encodeURIComponent(`any,contains,${pick(r, nouns)}`)}`;
  const beginsWith = (r: () => number) =>
    `/search.json?query=${encodeURIComponent(`title,begins_with,${pick(r, stems)}`)}`;
  // Phrases of the generated titles ("Hafen und Deich", "Hafen von Lübeck"): thousands of them,
  // so few repeat within a run and most miss the kept results, as a catalogue's users' searches do.
  const places = titlePlaces.slice(0, 10);
  const uncached = (r: () => number) => {
    const phrase =
      r() < 0.5 ? `${pick(r, titleNouns)} und ${pick(r, titleNouns)}` : `${pick(r, titleNouns)} von ${pick(r, places)}`;
    return `/search.json?query=${encodeURIComponent(`any,contains,${phrase}`)}`;
  };
  const cases: Case[] = [
    { name: 'person JSON', connections, path: (r) => `/person/${pick(r, slugs)}.json` },
    { name: 'person JSON, br/gzip', connections, path: (r) => `/person/${pick(r, slugs)}.json`, headers: compressed },
    { name: 'person XML', connections, path: (r) => `/person/${pick(r, slugs)}.xml` },
    { name: 'person HTML', connections, path: (r) => `/person/${pick(r, slugs)}.html` },
    { name: 'person HTML, br/gzip', connections, path: (r) => `/person/${pick(r, slugs)}.html`, headers: compressed },
    { name: 'person list JSON', connections, path: () => '/personen.json' },
    { name: 'search any,contains', connections, path: contains },
    { name: 'search title,begins_with', connections, path: beginsWith },
    { name: 'search any,contains, uncached phrases', connections, path: uncached },
    { name: 'search any,contains, 1 connection', connections: 1, path: contains },
    { name: 'search title,begins_with, 1 connection', connections: 1, path: beginsWith },
  ];
  return caseFilter.length === 0 ? cases : cases.filter((c) => caseFilter.some((part) => c.name.includes(part)));
}

export async function recreateDatabase(url: string): Promise<void> {
  const name = new URL(url).pathname.slice(1);
  if (!/^[a-z_][a-z0-9_]*$/.test(name))
    throw new Error(`BENCH_DATABASE_URL must name a plain database (letters, digits, _), not "${name}".`);
  const admin = new pg.Client({ connectionString: Object.assign(new URL(url), { pathname: '/postgres' }).href });
  await admin.connect();
  try {
    // Identifiers cannot be placeholders; the name was checked above.
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
}

export interface Started {
  origin: string;
  child: ChildProcess;
}

/** The baseline as plain JavaScript next to the product's bundle: neither runs the tsx loader. */
export async function buildBaseline(): Promise<string> {
  const outfile = path.join(root, 'dist/bench-baseline.js');
  await build({
    entryPoints: [path.join(root, 'bench/baseline.ts')],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    packages: 'external',
    logLevel: 'warning',
  });
  return outfile;
}

/**
 * Starts a server program that prints "listening on http://…/" and waits for that line from each
 * of its WEB_CONCURRENCY workers, and with workers for its search process's line, printed once it
 * has read the index (seconds at a million works).
 */
export function startServer(label: string, args: string[], env: NodeJS.ProcessEnv): Promise<Started> {
  const child = spawn(process.execPath, args, {
    cwd: root,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const listeners = Number(env.WEB_CONCURRENCY ?? 1);
  return new Promise((resolve, reject) => {
    let output = '';
    const timer = setTimeout(
      () => reject(new Error(`${label} did not say where it listens within 180 s: ${output}`)),
      180_000,
    );
    child.once('exit', (code) => reject(new Error(`${label} exited with ${code} before listening: ${output}`)));
    child.stdout?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const matches = [...output.matchAll(/listening on (http:\/\/[^/\s]+)\//g)];
      // The product's workers keep no index: its search process says when it has read it.
      const searching =
        !/portfolio: primary \d+ runs/.test(output) || /search process \d+ answers searches/.test(output);
      if (matches.length >= listeners && searching) {
        clearTimeout(timer);
        resolve({ origin: (matches[0] as RegExpMatchArray)[1] as string, child });
      }
    });
  });
}

export function stopServer(server: Started): Promise<void> {
  return new Promise((resolve) => {
    if (server.child.exitCode !== null) return resolve();
    server.child.once('exit', () => resolve());
    server.child.kill('SIGTERM');
  });
}

async function checkAnswers(server: Started, cases: readonly Case[]): Promise<void> {
  const random = createRandom(99);
  for (const c of cases) {
    const target = c.path(random);
    let res = await fetch(server.origin + target, { headers: c.headers });
    // One process serves before it has read the word index: its searches are 503 until then.
    for (let waited = 0; res.status === 503 && waited < 300; waited++) {
      await res.arrayBuffer();
      await new Promise((resolve) => setTimeout(resolve, 1000));
      res = await fetch(server.origin + target, { headers: c.headers });
    }
    await res.arrayBuffer();
    if (res.status !== 200)
      throw new Error(`${server.origin}${target} answered ${res.status}, not 200; the benchmark would measure errors.`);
  }
}

/** A database per size (portfolio_bench_200000, …), generated, vacuumed and checkpointed. */
export interface Dataset {
  works: number;
  url: string;
  slugs: string[];
}

/** The database a run before left, when it holds these many works and every migration. */
async function reuseDataset(url: string, works: number): Promise<Dataset | null> {
  const db = openPostgres({ connectionString: url, statementTimeoutMs: 60_000 });
  try {
    const [row] = await db.query<{ works: number; migrations: number }>(
      'SELECT (SELECT count(*) FROM werk)::int AS works, (SELECT count(*) FROM schema_migrations)::int AS migrations',
    );
    const expected = readdirSync(path.join(root, 'sql')).filter((f) => /^\d+_.*\.sql$/.test(f)).length;
    if (row?.works !== works || row.migrations !== expected) return null;
    console.log(`bench: reusing ${new URL(url).pathname.slice(1)} (${works} works)`);
    const slugs = (await db.query<{ slug: string }>('SELECT slug FROM person ORDER BY id')).map((r) => r.slug);
    return { works, url, slugs };
  } catch {
    return null;
  } finally {
    await db.close();
  }
}

export async function prepareDataset(works: number, options: { reuse?: boolean } = {}): Promise<Dataset> {
  const url = Object.assign(new URL(databaseUrl), { pathname: `${new URL(databaseUrl).pathname}_${works}` }).href;
  if (options.reuse) {
    const reused = await reuseDataset(url, works);
    if (reused) return reused;
  }
  await recreateDatabase(url);
  const db = openPostgres({ connectionString: url, statementTimeoutMs: 600_000 });
  try {
    await migrate(db, path.join(root, 'sql'));
    const summary = await generateData(db, {
      persons: works / worksPerPerson,
      works: worksPerPerson,
      seed: 1,
      replace: true,
    });
    console.log(
      `bench: generated ${summary.persons} persons and ${summary.works} works in ${(summary.milliseconds / 1000).toFixed(1)} s`,
    );
    // The rows are all new: VACUUM sets their visibility and hint bits and CHECKPOINT writes the
    // pages out now, so neither autovacuum nor page writes caused by the first reads of each row
    // land in the measured seconds of one server and not the other's.
    const settling = Date.now();
    await db.exec('VACUUM (ANALYZE)');
    await db
      .exec('CHECKPOINT')
      .catch((error: Error) =>
        console.log(
          `bench: no CHECKPOINT (${error.message}); the first runs may share the processor with writing pages out`,
        ),
      );
    console.log(`bench: vacuumed and checkpointed in ${((Date.now() - settling) / 1000).toFixed(1)} s`);
    const slugs = (await db.query<{ slug: string }>('SELECT slug FROM person ORDER BY id')).map((r) => r.slug);
    return { works, url, slugs };
  } finally {
    await db.close();
  }
}

interface Contender {
  works: number;
  role: 'product' | 'baseline' | 'reference';
  server: Started;
  cases: Case[];
}

/**
 * Every size's product and baseline run at once and take turns within each case, so that the
 * comparison between sizes is paired as well as the one between the two servers.
 */
async function measure(datasets: readonly Dataset[], logDir: string, baselineFile: string): Promise<Row[]> {
  const contenders: Contender[] = [];
  const quiet = await watchStatements(datasets.map((d) => new URL(d.url).pathname.slice(1)));
  try {
    for (const { works, url, slugs } of datasets) {
      const cases = defineCases(slugs);
      const product = await startServer(`the product (${works} works)`, startArguments(), {
        NODE_ENV: 'production',
        PORT: '0',
        HOST: '127.0.0.1',
        DATABASE_URL: url,
        DEMO_DATA: '0',
        LOG_DIR: path.join(logDir, String(works)),
        WEB_CONCURRENCY: '1',
      });
      contenders.push({ works, role: 'product', server: product, cases });
      contenders.push({
        works,
        role: 'baseline',
        server: await startServer(`the baseline (${works} works)`, [baselineFile], {
          PORT: '0',
          DATABASE_URL: url,
          BASELINE_STYLE: 'strong',
        }),
        cases,
      });
      contenders.push({
        works,
        role: 'reference',
        server: await startServer(`the reference baseline (${works} works)`, [baselineFile], {
          PORT: '0',
          DATABASE_URL: url,
          BASELINE_STYLE: 'reference',
        }),
        cases,
      });
    }
    for (const c of contenders) {
      await checkAnswers(c.server, c.cases);
      // Warm-up: compiled scripts, templates, JIT and the database cache.
      const random = createRandom(5);
      await runLoad({
        origin: c.server.origin,
        nextPath: () => c.cases[0]!.path(random),
        connections,
        seconds: 2,
        pid: c.server.child.pid ?? 0,
      });
    }
    // Each contender's result of each case, its slices added up once.
    const results = new Map<Contender, LoadResult[]>(contenders.map((c) => [c, []]));
    const caseCount = contenders[0]?.cases.length ?? 0;
    for (let i = 0; i < caseCount; i++) {
      // Each server gets the same paths in the same order, from its own generator.
      const randoms = new Map(contenders.map((c) => [c, createRandom(1000 + i)]));
      const slice = async (c: Contender, sliceSeconds: number) => {
        const random = randoms.get(c)!;
        const which = c.cases[i]!;
        await quiet();
        return runSlice({
          origin: c.server.origin,
          nextPath: () => which.path(random),
          headers: which.headers,
          connections: which.connections,
          seconds: sliceSeconds,
          pid: c.server.child.pid ?? 0,
        });
      };
      // An unmeasured second each: this case's code paths and, for search, its kept documents.
      for (const c of contenders) await slice(c, 1);
      // The servers take turns in short slices, in the order A B C D, D C B A, A B C D, …, who is
      // A alternating from case to case: drifting background load and the idle spell before each
      // slice fall on all alike.
      const order = i % 2 === 0 ? contenders : [...contenders].reverse();
      const slicesOfCase = new Map<Contender, Slice[]>(contenders.map((c) => [c, []]));
      for (let turn = 0; turn < slices; turn++) {
        for (const c of turn % 2 === 0 ? order : [...order].reverse())
          slicesOfCase.get(c)!.push(await slice(c, seconds / slices));
      }
      const line = contenders.map((c) => {
        const r = combine(slicesOfCase.get(c)!);
        results.get(c)!.push(r);
        return `${c.role} ${c.works} ${r.requestsPerSecond.toFixed(0)} req/s p50 ${r.p50} p99 ${r.p99} p99.9 ${r.p99_9}`;
      });
      console.log(`bench: ${contenders[0]!.cases[i]!.name}: ${line.join('; ')}`);
    }
    return datasets.flatMap(({ works }) => {
      const of = (role: Contender['role']) => contenders.find((c) => c.works === works && c.role === role)!;
      return of('product').cases.map((c, i) => ({
        works,
        case: c.name,
        product: results.get(of('product'))![i]!,
        baseline: results.get(of('baseline'))![i]!,
        reference: results.get(of('reference'))![i]!,
      }));
    });
  } finally {
    await Promise.all([...contenders.map((c) => stopServer(c.server)), quiet.end()]);
  }
}

const quietLimitMs = 30_000;

/**
 * Waits until no statement runs in the benchmark's databases. A server whose load generator has
 * stopped may still have statements running and queued: the baseline's search at a million works
 * keeps PostgreSQL busy for seconds after its slice, which would fall on the next server's.
 */
export async function watchStatements(
  databases: string[],
): Promise<(() => Promise<void>) & { end: () => Promise<void> }> {
  const admin = new pg.Client({
    connectionString: Object.assign(new URL(databaseUrl), { pathname: '/postgres' }).href,
  });
  await admin.connect();
  const wait = async () => {
    const started = Date.now();
    for (;;) {
      const {
        rows: [row],
      } = await admin.query<{ running: number }>(
        `SELECT count(*)::int AS running FROM pg_stat_activity WHERE datname = ANY ($1) AND state = 'active' AND pid <> pg_backend_pid()`,
        [databases],
      );
      if ((row?.running ?? 0) === 0) return;
      if (Date.now() - started > quietLimitMs) {
        console.log(
          `bench: statements still running after ${quietLimitMs / 1000} s; the next slice shares the machine with them`,
        );
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };
  return Object.assign(wait, { end: () => admin.end() });
}

async function main(): Promise<void> {
  if (!Number.isFinite(seconds) || seconds < 1 || seconds > 120)
    throw new Error(`BENCH_SECONDS must be 1 to 120, not ${process.env.BENCH_SECONDS}.`);
  if (!Number.isInteger(slices) || slices < 1 || slices > 20 || seconds / slices < 1) {
    throw new Error(
      `BENCH_SLICES must be 1 to 20, each slice at least 1 s of BENCH_SECONDS, not ${process.env.BENCH_SLICES}.`,
    );
  }
  if (sizes.some((n) => !Number.isInteger(n) || n < worksPerPerson || n % worksPerPerson !== 0)) {
    throw new Error(`BENCH_SIZES must be multiples of ${worksPerPerson} works, e.g. 200000,1000000.`);
  }
  const started = Date.now();
  await buildServer();
  const baselineFile = await buildBaseline();
  const datasets: Dataset[] = [];
  for (const works of sizes) datasets.push(await prepareDataset(works, { reuse }));
  const logDir = mkdtempSync(path.join(os.tmpdir(), 'portfolio-bench-logs-'));
  let rows: Row[];
  try {
    rows = await measure(datasets, logDir, baselineFile);
  } finally {
    rmSync(logDir, { recursive: true, force: true });
  }
  const table = formatTable(rows);
  const targets = checkTargets(rows, sizes);
  const minutes = ((Date.now() - started) / 60_000).toFixed(1);
  const setup =
    `${os.cpus().length} cores (${os.cpus()[0]?.model ?? 'unknown CPU'}), Node ${process.version}, ${connections} connections unless noted, ${seconds} s per server and case in ${slices} turns of ${seconds / slices} s, ` +
    `${worksPerPerson} works per person, load generator on the same machine; whole run ${minutes} min, ${new Date().toISOString().slice(0, 10)}.`;
  console.log(`\n${table}\n\n${targets.join('\n')}\n`);
  writeFileSync(
    path.join(root, 'bench/results.md'),
    `# Benchmark results\n\n${setup}\n\n${table}\n\n## Targets\n\n${targets.map((t) => `- ${t}`).join('\n')}\n`,
  );
  console.log(`bench: wrote bench/results.md (${minutes} min)`);
}

// Run, not imported (bench/search.ts uses its parts).
if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((err: unknown) => {
    console.error(`bench: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  });
}
