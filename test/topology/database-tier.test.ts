// The database tier as sites run it when one server is not enough: a primary, a streaming standby
// that serves reads (DATABASE_REPLICA_URL) and takes over when the primary is lost, PgBouncer in
// transaction pooling in front of the primary, and two instances that send every statement
// unnamed (DB_PREPARED_STATEMENTS=off). DATABASE_URL names PgBouncer and then the standby, so the
// instances find the standby once it is promoted. What is measured is printed as test
// diagnostics (docs/operations.md, The database tier).
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import sharp from 'sharp';
import { csrfTokenOf } from '../change-helpers.ts';
import { backend, missingTool } from '../helpers.ts';
import { logInAs } from '../login-helpers.ts';
import type { Program } from '../program.ts';
import { openPostgres } from '../../lib/db/index.ts';
import { startProgram } from '../program.ts';
import type { PostgresCluster } from '../robustness/postgres-cluster.ts';
import { createCluster, postgresBin } from '../robustness/postgres-cluster.ts';
import type { Bouncer } from './pgbouncer.ts';
import { startPgbouncer } from './pgbouncer.ts';

const skip =
  backend !== 'postgres'
    ? "the database tier is PostgreSQL's; run with DATABASE_URL"
    : missingTool('/usr/sbin/pgbouncer', 'pgbouncer') ||
      (postgresBin() ? false : 'initdb was not found; install postgresql');

const loadMs = Number(process.env.DB_TIER_SECONDS ?? 30) * 1000;
let primary: PostgresCluster;
let standby: PostgresCluster;
let bouncer: Bouncer;
const instances: Program[] = [];

before(async () => {
  if (skip) return;
  // Synchronous replication: a change is acknowledged only once the standby has it on disk, so
  // none is lost when the standby takes over.
  primary = await createCluster({ settings: "-c synchronous_standby_names='*'" });
  standby = await createCluster({ standbyOf: primary });
  bouncer = await startPgbouncer(primary.port);
  instances.push(await startProgram(tierEnv()), await startProgram(tierEnv()));
});

after(async () => {
  for (const program of instances) program.remove();
  await bouncer?.stop();
  await standby?.remove();
  await primary?.remove();
});

/** The instances' settings: PgBouncer first, then the standby for after a failover; the standby as replica. */
const tierEnv = () => ({
  DATABASE_URL: `postgres://postgres@127.0.0.1:${bouncer.port},127.0.0.1:${standby.port}/postgres`,
  DATABASE_REPLICA_URL: standby.url,
  DB_PREPARED_STATEMENTS: 'off',
  REPLICA_MAX_LAG_MS: '5000',
  DB_CONNECT_TIMEOUT_MS: '1000',
  // The searches among the reads stand for reads; their own 250 ms bound (503 past it) is not
  // what this test is about, and two cores running two instances, two PostgreSQL servers,
  // PgBouncer and the load stretch a search's statement past it now and then.
  SEARCH_TIMEOUT_MS: '2000',
  // Copies of the pictures served, a folder of each instance's own: what is served comes from the database.
  PICTURES_DIR: mkdtempSync(path.join(os.tmpdir(), 'portfolio-tier-bilder-')),
});

/** One statement on a connection of its own. */
async function ask<R extends pg.QueryResultRow>(url: string, sql: string, params: unknown[] = []): Promise<R[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<R>(sql, params)).rows;
  } finally {
    await client.end();
  }
}

/** A logged-in librarian: the session, the CSRF token, and the written mark the instances set after each change. */
interface Librarian {
  session: string;
  csrf: string;
  written: string;
}

async function librarian(origin: string): Promise<Librarian> {
  const session = await logInAs(origin, 'bibliothek');
  return { session, csrf: await csrfTokenOf(origin, session, '/person/max-muster/werke/neu'), written: '' };
}

interface Answer {
  status: number;
  body: string;
  location: string | null;
  retryAfter: string | null;
}

/** A request as the librarian: its cookies in, the written mark taken from the answer. */
async function asLibrarian(
  who: Librarian,
  origin: string,
  method: string,
  path: string,
  body?: object,
): Promise<Answer> {
  const res = await fetch(origin + path, {
    method,
    redirect: 'manual',
    headers: {
      cookie: [who.session, who.written].filter(Boolean).join('; '),
      accept: 'application/json',
      origin,
      ...(body ? { 'content-type': 'application/json', 'x-csrf-token': who.csrf } : {}),
    },
    body: body ? JSON.stringify(body) : undefined,
  });
  const written = res.headers.getSetCookie().find((c) => /^(__Host-)?portfolio_written=/.test(c));
  if (written) who.written = written.split(';')[0] as string;
  return {
    status: res.status,
    body: await res.text(),
    location: res.headers.get('location'),
    retryAfter: res.headers.get('retry-after'),
  };
}

/** The first few answers of 5xx to anonymous reads, for the diagnostics of a failing test. */
const failedReads: string[] = [];

async function anonymous(origin: string, path: string): Promise<number> {
  const res = await fetch(origin + path, { headers: { accept: 'application/json' } });
  const body = await res.text();
  if (res.status >= 500 && failedReads.length < 5)
    failedReads.push(`${res.status} ${path} at ${Math.round(performance.now())} ms: ${body.slice(0, 200)}`);
  return res.status;
}

const pick = <T>(items: readonly T[]): T => items[Math.floor(Math.random() * items.length)] as T;
const words = ['haus', 'meer', 'muster', 'deich', 'foto', 'zitronen'];
const publicPath = () =>
  pick([
    `/person/${1 + Math.floor(Math.random() * 14)}`,
    `/werk/${1 + Math.floor(Math.random() * 70)}`,
    '/personen',
    '/index',
    `/search?query=any,contains,${pick(words)}&tab=default_tab&search_scope=default_scope&vid=portfolio&offset=0`,
  ]);

describe('the database tier: PgBouncer, a replica, failover', { skip }, () => {
  test('a server whose DATABASE_URL names only a standby says so and does not start', async () => {
    await assert.rejects(startProgram({ DATABASE_URL: standby.url }), (err: Error) => {
      assert.match(err.message, /DATABASE_URL names no primary: 127\.0\.0\.1:\d+ is a standby \(in recovery\)/);
      assert.match(err.message, /DATABASE_REPLICA_URL/);
      return true;
    });
  });

  test('through PgBouncer the statement time-out holds, pooled, pipelined and in transactions, with no startup parameter', async () => {
    const db = openPostgres({ connectionString: bouncer.url, statementTimeoutMs: 300, preparedStatements: false });
    try {
      for (const pipeline of [false, true]) {
        const started = performance.now();
        await assert.rejects(
          db.query('SELECT pg_sleep(5)', [], { pipeline }),
          /canceling statement due to statement timeout/,
        );
        assert.ok(performance.now() - started < 4000, 'cancelled by the server, long before the sleep ends');
      }
      await assert.rejects(
        db.transaction((tx) => tx.query('SELECT pg_sleep(5)')),
        /canceling statement due to statement timeout/,
      );
      // Many statements, spread over PgBouncer's server connections: each one has the time-out.
      const shown = await Promise.all(
        Array.from({ length: 40 }, (_, i) =>
          db.query<{ statement_timeout: string }>('SHOW statement_timeout', [], { pipeline: i % 2 === 0 }),
        ),
      );
      assert.deepEqual(new Set(shown.map((rows) => rows[0]?.statement_timeout)), new Set(['300ms']));
      // And nothing stays behind on PgBouncer's server connections: another client sees the server's default.
      const others = await Promise.all(
        Array.from({ length: 20 }, () => ask<{ statement_timeout: string }>(bouncer.url, 'SHOW statement_timeout')),
      );
      assert.deepEqual(new Set(others.map((rows) => rows[0]?.statement_timeout)), new Set(['0']));
    } finally {
      await db.close();
    }
  });

  test('a client reads its own change at once while the replica lags; others read the replica', async () => {
    const [a, b] = instances as [Program, Program];
    const who = await librarian(a.origin);
    await ask(standby.url, 'SELECT pg_wal_replay_pause()');
    try {
      const created = await asLibrarian(who, a.origin, 'POST', '/person/max-muster/werke', {
        titel: 'Nur beim Schreiber',
        jahr: 2026,
      });
      assert.equal(created.status, 201, created.body);
      assert.ok(created.location && who.written, 'the change sets the written mark');
      const path = new URL(created.location, a.origin).pathname;
      // The other instance, with the mark: the replica has not replayed it, so the primary answers.
      const own = await asLibrarian(who, b.origin, 'GET', `${path}.json`);
      assert.equal(own.status, 200, own.body);
      assert.equal(JSON.parse(own.body).titel, 'Nur beim Schreiber');
      // Without the mark the read goes to the replica, which does not have the work yet.
      assert.equal(await anonymous(b.origin, `${path}.json`), 404);
      await ask(standby.url, 'SELECT pg_wal_replay_resume()');
      const deadline = performance.now() + 10_000;
      let status = 404;
      while (status === 404 && performance.now() < deadline) status = await anonymous(b.origin, `${path}.json`);
      assert.equal(status, 200, 'once replayed, everyone reads it');
      const metrics = await (await fetch(`${b.origin}/metrics`)).text();
      assert.match(metrics, /portfolio_db_replica_reads_total\{host="[^"]+"\} [1-9]/);
      assert.match(metrics, new RegExp(`portfolio_db_replica_up\\{host="127\\.0\\.0\\.1:${standby.port}"\\} 1`));
      assert.match(metrics, /portfolio_db_replica_lag_seconds\{host="[^"]+"\} [0-9.e-]+/);
    } finally {
      await ask(standby.url, 'SELECT pg_wal_replay_resume()').catch(() => undefined);
    }
  });

  test('an instance that starts while the replica is behind reads from the primary until the replica catches up', async () => {
    const [a] = instances as [Program];
    const who = await librarian(a.origin);
    await ask(standby.url, 'SELECT pg_wal_replay_pause()');
    let late: Program | null = null;
    try {
      const created = await asLibrarian(who, a.origin, 'POST', '/person/max-muster/werke', {
        titel: 'Vor dem Start',
        jahr: 2026,
      });
      assert.equal(created.status, 201, created.body);
      const path = new URL(created.location as string, a.origin).pathname;
      assert.equal(await anonymous(a.origin, `${path}.json`), 404, 'the replica does not have it yet');
      late = await startProgram(tierEnv());
      // No sample of the primary the replica has reached: its lag is unknown, so it is not read.
      for (let i = 0; i < 20; i++) assert.equal(await anonymous(late.origin, `${path}.json`), 200);
    } finally {
      await ask(standby.url, 'SELECT pg_wal_replay_resume()');
      late?.remove();
    }
  });

  test('a picture is read on the replica, and on the primary while the replica has not replayed it', async () => {
    const [, b] = instances as [Program, Program];
    const webp = await sharp({ create: { width: 160, height: 160, channels: 3, background: '#335577' } })
      .webp()
      .toBuffer();
    const picture = async (name: string) => {
      const res = await fetch(`${b.origin}/bilder/${name}`);
      const bytes = Buffer.from(await res.arrayBuffer());
      return res.status === 200 && bytes.equals(webp) ? 200 : res.status;
    };
    const onStandby = async (name: string) =>
      (await ask(standby.url, 'SELECT 1 FROM picture WHERE name = $1', [name])).length > 0;
    const store = (name: string) => ask(primary.url, 'INSERT INTO picture (name, bytes) VALUES ($1, $2)', [name, webp]);
    // Stored a moment ago: the replica does not have it yet, the primary answers.
    const fresh = `${'c'.repeat(32)}-160.webp`;
    await ask(standby.url, 'SELECT pg_wal_replay_pause()');
    try {
      await store(fresh);
      assert.equal(await onStandby(fresh), false);
      assert.equal(await picture(fresh), 200);
    } finally {
      await ask(standby.url, 'SELECT pg_wal_replay_resume()');
    }
    // Only the replica has it (deleted on the primary, not yet replayed): the replica answers.
    const replicated = `${'d'.repeat(32)}-160.webp`;
    await store(replicated);
    const deadline = performance.now() + 10_000;
    while (!(await onStandby(replicated)) && performance.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    await ask(standby.url, 'SELECT pg_wal_replay_pause()');
    try {
      await ask(primary.url, 'DELETE FROM picture WHERE name = $1', [replicated]);
      assert.equal(await onStandby(replicated), true);
      assert.equal(await picture(replicated), 200);
    } finally {
      await ask(standby.url, 'SELECT pg_wal_replay_resume()');
    }
    assert.equal(await picture(`${'e'.repeat(32)}-160.webp`), 404);
  });

  test('a replica that goes away is skipped, and used again once it is back: no 5xx meanwhile', async () => {
    const origins = instances.map((p) => p.origin);
    const statuses = new Map<number, number>();
    let reading = true;
    const readers = Array.from({ length: 4 }, async () => {
      for (let i = 0; reading && i < 100_000; i++) {
        const status = await anonymous(pick(origins), publicPath());
        statuses.set(status, (statuses.get(status) ?? 0) + 1);
      }
    });
    const replicaUp = async (origin: string) =>
      /portfolio_db_replica_up\{[^}]*\} 1/.test(await (await fetch(`${origin}/metrics`)).text());
    try {
      await new Promise((resolve) => setTimeout(resolve, 500));
      await standby.stop('immediate');
      await new Promise((resolve) => setTimeout(resolve, 2000));
      assert.equal(await replicaUp(origins[0] as string), false, 'the metrics show the replica down');
      await standby.start();
      const deadline = performance.now() + 30_000;
      while (
        performance.now() < deadline &&
        !((await replicaUp(origins[0] as string)) && (await replicaUp(origins[1] as string)))
      ) {
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      assert.ok(await replicaUp(origins[0] as string), 'the replica is used again');
    } finally {
      reading = false;
      await Promise.all(readers);
    }
    const failed = [...statuses].filter(([status]) => status >= 500);
    assert.deepEqual(failed, [], `reads: ${JSON.stringify([...statuses])}`);
  });

  test(`${loadMs / 1000} s of mixed traffic, then the primary is lost and the standby promoted under load`, async (t) => {
    const origins = instances.map((p) => p.origin);
    const statuses = { read: new Map<number, number>(), change: new Map<number, number>() };
    const count = (kind: 'read' | 'change', status: number) =>
      statuses[kind].set(status, (statuses[kind].get(status) ?? 0) + 1);
    const acknowledged: { id: number; titel: string }[] = [];
    let ownReads = 0;
    const stale: string[] = [];
    let retryAfterMissing = 0;
    const phase = { failoverAt: Infinity, promotedAt: Infinity, firstChangeAfter: Infinity, end: Infinity };
    const replicaReads = async () => {
      let sum = 0;
      for (const origin of origins) {
        const text = await (await fetch(`${origin}/metrics`)).text();
        sum += Number(/portfolio_db_replica_reads_total\{[^}]*\} (\d+)/.exec(text)?.[1] ?? 0);
      }
      return sum;
    };
    const replicaReadsBefore = await replicaReads();
    let replicaReadsBeforeFailover = 0;
    const begun = performance.now();
    phase.end = begun + loadMs + 60_000; // bounded; set to promotion + 5 s below

    const changer = async (n: number) => {
      const who = await librarian(origins[n % 2] as string);
      for (let i = 0; performance.now() < phase.end && i < 100_000; i++) {
        const [writeTo, readFrom] = Math.random() < 0.5 ? origins : [...origins].reverse();
        const titel = `Werk ${n}-${i}`;
        const created = await asLibrarian(who, writeTo as string, 'POST', '/person/max-muster/werke', {
          titel,
          jahr: 2026,
        });
        count('change', created.status);
        if (created.status === 503 && !created.retryAfter) retryAfterMissing++;
        if (created.status !== 201 || !created.location) {
          await new Promise((resolve) => setTimeout(resolve, 100));
          continue;
        }
        if (performance.now() > phase.promotedAt)
          phase.firstChangeAfter = Math.min(phase.firstChangeAfter, performance.now());
        const path = new URL(created.location, writeTo).pathname;
        acknowledged.push({ id: Number(path.split('/').pop()), titel });
        // Read it back at once from the other instance.
        const read = await asLibrarian(who, readFrom as string, 'GET', `${path}.json`);
        count('read', read.status);
        if (read.status >= 500 && failedReads.length < 5)
          failedReads.push(`${read.status} own read ${path}: ${read.body.slice(0, 200)}`);
        if (read.status === 200) {
          ownReads++;
          if (JSON.parse(read.body).titel !== titel) stale.push(`${path}: ${read.body.slice(0, 80)}`);
        } else if (read.status === 404) {
          stale.push(`${path}: 404`);
        }
      }
    };
    const reader = async () => {
      for (let i = 0; performance.now() < phase.end && i < 1_000_000; i++)
        count('read', await anonymous(pick(origins), publicPath()));
    };
    const failover = (async () => {
      // A while with the replica behind (replay paused, within REPLICA_MAX_LAG_MS): own reads must still see every change.
      await new Promise((resolve) => setTimeout(resolve, loadMs * 0.3));
      await ask(standby.url, 'SELECT pg_wal_replay_pause()');
      await new Promise((resolve) => setTimeout(resolve, 2000));
      await ask(standby.url, 'SELECT pg_wal_replay_resume()');
      await new Promise((resolve) => setTimeout(resolve, loadMs * 0.7 - 2000));
      replicaReadsBeforeFailover = await replicaReads();
      phase.failoverAt = performance.now();
      await primary.stop('immediate');
      await new Promise((resolve) => setTimeout(resolve, 1000));
      await standby.promote();
      phase.promotedAt = performance.now();
      // Until the first change succeeds after the promotion, then 5 s more; at most 60 s.
      const deadline = performance.now() + 60_000;
      while (phase.firstChangeAfter === Infinity && performance.now() < deadline)
        await new Promise((resolve) => setTimeout(resolve, 50));
      phase.end = Math.min(phase.end, performance.now() + 5000);
    })();
    await Promise.all([...Array.from({ length: 4 }, (_, n) => changer(n)), reader(), reader(), failover]);

    const show = (m: Map<number, number>) =>
      [...m]
        .sort()
        .map(([s, n]) => `${n} × ${s}`)
        .join(', ');
    const standbyReads = replicaReadsBeforeFailover - replicaReadsBefore;
    t.diagnostic(`reads: ${show(statuses.read)}; changes: ${show(statuses.change)}`);
    t.diagnostic(`own changes read back at once from the other instance: ${ownReads}, stale: ${stale.length}`);
    t.diagnostic(`statements of requests the replica answered before the failover: ${standbyReads}`);
    t.diagnostic(
      `primary lost → promote: ${Math.round(phase.promotedAt - phase.failoverAt)} ms; promote → first change saved: ${Math.round(phase.firstChangeAfter - phase.promotedAt)} ms`,
    );
    for (const failed of failedReads)
      t.diagnostic(`failed read (primary lost at ${Math.round(phase.failoverAt)} ms): ${failed}`);

    assert.deepEqual(stale, [], 'every client reads its own changes at once');
    assert.ok(ownReads > 20, `changes were read back (${ownReads})`);
    assert.ok(standbyReads > 1000, `the replica served reads (${standbyReads} statements)`);
    for (const kind of ['read', 'change'] as const) {
      for (const [status] of statuses[kind]) assert.ok(status < 500 || status === 503, `${kind}: no ${status}`);
    }
    assert.equal(
      statuses.read.get(503) ?? 0,
      0,
      'reads are served throughout, by the replica while there is no primary',
    );
    assert.equal(retryAfterMissing, 0, 'a change refused for want of a primary says when to try again');
    assert.ok(phase.firstChangeAfter < Infinity, 'changes succeed again after the promotion');
    // Every change the instances acknowledged is on the new primary.
    const ids = acknowledged.map((w) => w.id);
    const rows = await ask<{ id: number; titel: string }>(
      standby.url,
      'SELECT id, titel FROM werk WHERE id = ANY($1)',
      [ids],
    );
    const saved = new Map(rows.map((r) => [r.id, r.titel]));
    const lost = acknowledged.filter((w) => saved.get(w.id) !== w.titel);
    t.diagnostic(
      `changes acknowledged: ${acknowledged.length}, on the new primary: ${acknowledged.length - lost.length}`,
    );
    assert.deepEqual(lost, []);
  });

  test('the old primary back on its own does not take over again', async () => {
    // It comes back as a primary of its own timeline, and PgBouncer, first in DATABASE_URL, reaches it again.
    await primary.start();
    // The instances' connections to the new primary are cut: their next statements fail and a search starts.
    await ask(
      standby.url,
      "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'portfolio'",
    );
    const origin = (instances[0] as Program).origin;
    const who = await librarian(origin).catch(async () => librarian(origin));
    const titles: string[] = [];
    for (let i = 0; i < 20; i++) {
      const titel = `Nach der Rückkehr ${i}`;
      const created = await asLibrarian(who, origin, 'POST', '/person/max-muster/werke', { titel, jahr: 2026 });
      if (created.status === 201) titles.push(titel);
      else assert.equal(created.status, 503, created.body);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    assert.ok(titles.length >= 15, `changes succeed (${titles.length} of 20)`);
    const onNew = await ask<{ titel: string }>(standby.url, 'SELECT titel FROM werk WHERE titel = ANY($1)', [titles]);
    const onOld = await ask<{ titel: string }>(primary.url, 'SELECT titel FROM werk WHERE titel = ANY($1)', [titles]);
    assert.equal(onNew.length, titles.length, 'every change went to the promoted standby');
    assert.equal(onOld.length, 0, 'none to the old primary');
  });
});
