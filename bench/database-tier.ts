// `npm run bench:db`: what the database tier's settings cost, each case against its baseline in
// turns of BENCH_SLICE_SECONDS (default 5) in one run, BENCH_SLICES (default 4) turns each.
//
// 1. Person and work pages (random ones of 10,000 persons × 20 works) from one process: prepared
//    statements on, off, and off through PgBouncer in transaction mode (on cannot work there).
// 2. Creating works at 16 and 64 connections: the product's transaction (the data version moves
//    with it, sql/008), the same with the single counter row of before, and a bare INSERT into a
//    table without a trigger.
// On the local PostgreSQL (BENCH_DATABASE_URL, default postgres://postgres@127.0.0.1:5432/portfolio_bench_tier,
// re-created). Prints a table per part: req/s, p50, p99, p99.9 and max.
import { randomInt } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import autocannon from 'autocannon';
import pg from 'pg';
import { generateData } from '../bin/lib/fill-database.ts';
import { migrate, openPostgres } from '../lib/db/index.ts';
import { startProgram } from '../test/program.ts';
import { startPgbouncer } from '../test/topology/pgbouncer.ts';

const sliceSeconds = Number(process.env.BENCH_SLICE_SECONDS ?? 5);
const slices = Number(process.env.BENCH_SLICES ?? 4);
const databaseUrl = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/portfolio_bench_tier';
const persons = 10_000;
const works = 20;

interface Figures {
  requests: number;
  seconds: number;
  latencies: number[];
  errors: number;
}
const empty = (): Figures => ({ requests: 0, seconds: 0, latencies: [], errors: 0 });

function row(name: string, f: Figures): string {
  const sorted = [...f.latencies].sort((a, b) => a - b);
  const at = (p: number) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? 0;
  const ms = (v: number) => v.toFixed(v < 10 ? 1 : 0);
  return `| ${name} | ${Math.round(f.requests / f.seconds).toLocaleString('en')} | ${ms(at(0.5))} | ${ms(at(0.99))} | ${ms(at(0.999))} | ${ms(sorted[sorted.length - 1] ?? 0)} | ${f.errors} |`;
}

async function recreate(): Promise<void> {
  const url = new URL(databaseUrl);
  const name = url.pathname.slice(1);
  const admin = new pg.Client({
    connectionString: Object.assign(new URL(databaseUrl), { pathname: '/postgres' }).href,
  });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
}

async function pages(): Promise<void> {
  const bouncer = await startPgbouncer(Number(new URL(databaseUrl).port || 5432), { poolSize: 20 });
  const viaBouncer = Object.assign(new URL(bouncer.url), { pathname: new URL(databaseUrl).pathname }).href;
  const servers: { name: string; env: Record<string, string> }[] = [
    { name: 'prepared statements on', env: { DATABASE_URL: databaseUrl } },
    { name: 'prepared statements off', env: { DATABASE_URL: databaseUrl, DB_PREPARED_STATEMENTS: 'off' } },
    {
      name: 'off, through PgBouncer (transaction mode)',
      env: { DATABASE_URL: viaBouncer, DB_PREPARED_STATEMENTS: 'off' },
    },
  ];
  const programs = [];
  for (const server of servers) programs.push(await startProgram({ ...server.env, DEMO_DATA: '0' }));
  const figures = servers.map(empty);
  try {
    for (let turn = 0; turn < slices; turn++) {
      for (const [i, program] of programs.entries()) {
        const latencies: number[] = [];
        const started = performance.now();
        const result = await autocannon({
          url: program.origin,
          connections: 64,
          duration: sliceSeconds,
          requests: [
            {
              setupRequest: (req) => ({
                ...req,
                path:
                  randomInt(2) === 0
                    ? `/person/${1 + randomInt(persons)}.json`
                    : `/werk/${1 + randomInt(persons * works)}.json`,
              }),
            },
          ],
          // Every latency, for p99.9 and the maximum.
          setupClient: (client) => {
            client.on('response', (_status: number, _bytes: number, time: number) => latencies.push(time));
          },
        } as autocannon.Options);
        const f = figures[i] as Figures;
        f.requests += result.requests.total;
        f.seconds += (performance.now() - started) / 1000;
        f.latencies.push(...latencies);
        f.errors += result.errors + result.non2xx;
      }
    }
  } finally {
    for (const program of programs) program.remove();
    await bouncer.stop();
  }
  console.log(`\nPerson and work JSON, one process, 64 connections, ${slices} × ${sliceSeconds} s each\n`);
  console.log('| | req/s | p50 ms | p99 ms | p99.9 ms | max ms | errors |\n|---|---|---|---|---|---|---|');
  for (const [i, server] of servers.entries()) console.log(row(server.name, figures[i] as Figures));
}

const singleRow = `CREATE OR REPLACE FUNCTION bump_data_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN UPDATE data_version_counter SET n = n + 1 WHERE slot = 0; RETURN NULL; END; $$`;
const slots = `CREATE OR REPLACE FUNCTION bump_data_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN UPDATE data_version_counter SET n = n + 1 WHERE slot = (pg_current_xact_id()::text::bigint % 64); RETURN NULL; END; $$`;

async function writes(): Promise<void> {
  const admin = openPostgres({ connectionString: databaseUrl, statementTimeoutMs: 60_000 });
  await admin.exec('CREATE TABLE IF NOT EXISTS werk_bare (LIKE werk INCLUDING ALL)');
  const cases = [
    { name: 'create a work (the data version in 64 counters)', setup: slots, table: 'werk', transaction: true },
    { name: 'the same with one counter row (before)', setup: singleRow, table: 'werk', transaction: true },
    { name: 'bare INSERT, no trigger, no transaction block', setup: null, table: 'werk_bare', transaction: false },
  ];
  for (const connections of [16, 64]) {
    const db = openPostgres({ connectionString: databaseUrl, statementTimeoutMs: 60_000, maxConnections: connections });
    const figures = cases.map(empty);
    for (let turn = 0; turn < slices; turn++) {
      for (const [i, c] of cases.entries()) {
        if (c.setup) await admin.exec(c.setup);
        const f = figures[i] as Figures;
        const started = performance.now();
        const until = started + sliceSeconds * 1000;
        const insert = `INSERT INTO ${c.table} (person_id, titel, jahr) VALUES ($1, $2, 2026)`;
        await Promise.all(
          Array.from({ length: connections }, async () => {
            for (let n = 0; performance.now() < until && n < 1_000_000; n++) {
              const t = performance.now();
              try {
                const values = [1 + randomInt(persons), `Neu ${n}`];
                if (c.transaction) await db.transaction((tx) => tx.query(insert, values));
                else await db.query(insert, values);
                f.latencies.push(performance.now() - t);
                f.requests++;
              } catch {
                f.errors++;
              }
            }
          }),
        );
        f.seconds += (performance.now() - started) / 1000;
      }
    }
    await db.close();
    console.log(`\nCreating works, ${connections} connections, ${slices} × ${sliceSeconds} s each\n`);
    console.log('| | commits/s | p50 ms | p99 ms | p99.9 ms | max ms | errors |\n|---|---|---|---|---|---|---|');
    for (const [i, c] of cases.entries()) console.log(row(c.name, figures[i] as Figures));
  }
  await admin.exec(slots);
  await admin.close();
}

await recreate();
const db = openPostgres({ connectionString: databaseUrl, statementTimeoutMs: 600_000 });
await migrate(db, new URL('../sql', import.meta.url).pathname);
await generateData(db, { persons, works, seed: 1, replace: true });
await db.close();
await pages();
await writes();
