// The product as its users run it: TLS ends at nginx (then HAProxy), which spreads the requests
// over two instances with two workers each, on one PostgreSQL. Mixed traffic (reads, searches,
// logins, changes in a session) comes from a different client address per request, named by an
// outer proxy (front.ts); the instances trust only the address nginx and HAProxy reach them from,
// so each access-log line must carry the client's address, also when the client forged headers.
// During the load one instance is reloaded (SIGUSR2) and the other stopped (SIGTERM). What is
// measured is printed as test diagnostics (docs/operations.md, Behind a reverse proxy).
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { after, before, describe, test, type TestContext } from 'node:test';
import type { TestDb } from '../helpers.ts';
import { backend, missingTool, openTestDb, rawRequest, waitFor } from '../helpers.ts';
import { logInAs } from '../login-helpers.ts';
import type { Program } from '../program.ts';
import { startProgram } from '../program.ts';
import type { Front, Outcome } from './front.ts';
import {
  driveTraffic,
  freePort,
  makeCertificate,
  percentile,
  proxyAddress,
  startHaproxy,
  startNginx,
  unexpected,
} from './front.ts';

const skip =
  backend !== 'postgres'
    ? 'two instances on one database need PostgreSQL; run with DATABASE_URL'
    : missingTool('/usr/sbin/nginx', 'nginx') || missingTool('/usr/sbin/haproxy', 'haproxy');

const loadMs = Number(process.env.TOPOLOGY_SECONDS ?? 60) * 1000;
let dir: string;
let tls: ReturnType<typeof makeCertificate>;
let db: TestDb;
const instances: Program[] = [];
const fronts: Front[] = [];

// The fronts' TLS ports, chosen first: the browser's Host names them, and the instances serve them.
const frontPorts = { nginx: 0, haproxy: 0 };

const startInstance = async () => {
  const allowed = `localhost,127.0.0.1,localhost:${frontPorts.nginx},localhost:${frontPorts.haproxy}`;
  const program = await startProgram({
    DATABASE_URL: db.url as string,
    WEB_CONCURRENCY: '2',
    TRUSTED_PROXIES: proxyAddress,
    ALLOWED_HOSTS: allowed,
  });
  instances.push(program);
  return program;
};
const portOf = (program: Program) => Number(new URL(program.origin).port);
const sleepUntil = (at: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, at - performance.now())));

before(async () => {
  if (skip) return;
  dir = mkdtempSync(path.join(os.tmpdir(), 'portfolio-topology-'));
  tls = makeCertificate(dir);
  frontPorts.nginx = await freePort();
  frontPorts.haproxy = await freePort();
  db = await openTestDb();
  await startInstance();
  await startInstance();
});

after(async () => {
  for (const front of fronts) await front.stop();
  for (const program of instances) program.remove();
  await db?.drop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('two instances on one PostgreSQL', { skip }, () => {
  test('a session made on one instance works on the other', async () => {
    const [a, b] = instances as [Program, Program];
    const cookie = await logInAs(a.origin, 'bibliothek');
    const list = await rawRequest(b.origin, '/entlehnte/2.json', { headers: { cookie } });
    assert.equal(list.status, 200, list.body);
    assert.equal((await rawRequest(b.origin, '/entlehnte/2.json')).status, 403);
  });
});

describe('behind nginx with TLS', { skip }, () => {
  test(`${loadMs / 1000} s of mixed traffic: no failure, the claimed address in every log line, a reload that fails nothing, a stop nginx retries`, async (t) => {
    const [a, b] = instances as [Program, Program];
    const nginx = await startNginx(dir, tls, frontPorts.nginx, [portOf(a), portOf(b)]);
    fronts.push(nginx);
    const begun = performance.now();
    const events = { reloadAt: 0, reloadedAt: 0, stopAt: 0, stoppedAt: 0 };
    const happenings = (async () => {
      await sleepUntil(begun + loadMs * 0.25);
      events.reloadAt = performance.now();
      process.kill(a.child.pid as number, 'SIGUSR2');
      await waitFor(
        () => a.readLog('error.log'),
        (text) => text.includes('reloaded: workers'),
        30_000,
      );
      events.reloadedAt = performance.now();
      await sleepUntil(begun + loadMs * 0.6);
      events.stopAt = performance.now();
      b.child.kill('SIGTERM');
      assert.equal(await b.exited, 0);
      events.stoppedAt = performance.now();
    })();
    const { outcomes, sessions } = await driveTraffic(nginx.origin, readFileSync(tls.cert, 'utf8'), {
      clients: 6,
      durationMs: loadMs,
      maxRequests: 60_000,
    });
    await happenings;

    report(t, 'nginx', outcomes, events);
    const failed = outcomes.filter(unexpected);
    const inStop = (o: Outcome) => o.end >= events.stopAt && o.start <= events.stoppedAt;
    // Only what nginx may not send twice (POST), only while the instance stopped.
    assert.deepEqual(
      failed.filter((o) => !(o.method === 'POST' && inStop(o))),
      [],
      nginx.log().slice(-3000),
    );
    assert.ok(
      outcomes.filter((o) => o.start > events.reloadAt && o.end < events.reloadedAt).length > 20,
      'requests during the reload',
    );
    assert.ok(sessions.length > 0 && sessions.every((s) => s.secure), 'sessions made over TLS have Secure cookies');
    assert.ok(
      outcomes.some((o) => o.kind === 'change' && o.status === 201),
      'changes were made',
    );
    checkAccessLogs(outcomes, instances.slice(0, 2));
  });
});

describe('behind HAProxy with TLS and /readyz checks', { skip }, () => {
  test('mixed traffic while one instance stops: every request retried elsewhere, the claimed address in every log line', async (t) => {
    const [a] = instances as [Program];
    const c = await startInstance();
    const haproxy = await startHaproxy(dir, tls, frontPorts.haproxy, [portOf(a), portOf(c)]);
    fronts.push(haproxy);
    const seconds = Math.max(10, loadMs / 4000);
    const begun = performance.now();
    const events = { reloadAt: 0, reloadedAt: 0, stopAt: 0, stoppedAt: 0 };
    const happenings = (async () => {
      await sleepUntil(begun + seconds * 300);
      events.stopAt = performance.now();
      c.child.kill('SIGTERM');
      assert.equal(await c.exited, 0);
      events.stoppedAt = performance.now();
    })();
    const { outcomes } = await driveTraffic(haproxy.origin, readFileSync(tls.cert, 'utf8'), {
      clients: 6,
      durationMs: seconds * 1000,
      maxRequests: 20_000,
    });
    await happenings;
    report(t, 'HAProxy', outcomes, events);
    const inStop = (o: Outcome) => o.end >= events.stopAt && o.start <= events.stoppedAt;
    assert.deepEqual(
      outcomes.filter(unexpected).filter((o) => !(o.method === 'POST' && inStop(o))),
      [],
      haproxy.log().slice(-3000),
    );
    // HAProxy's check saw the instance go (its log says so).
    await waitFor(haproxy.log, (text) => /Server portfolio\/app2 is DOWN/.test(text), 5000);
    checkAccessLogs(outcomes, [a, c]);
  });
});

/** Every access-log line of a generated request names the address it claimed; every answered request has one. */
function checkAccessLogs(outcomes: Outcome[], programs: Program[]): void {
  const claimed = new Map(outcomes.map((o) => [o.id, o.claimed]));
  const seen = new Set<string>();
  const wrong: string[] = [];
  for (const program of programs) {
    for (const line of program.readLog('access.log').split('\n')) {
      const match = /^(\S+) \S+ \S+ \[[^\]]+\] "[^"]*" \d+ \S+ "[^"]*" "topology\/([^"]+)"$/.exec(line);
      if (!match || !claimed.has(match[2] as string)) continue;
      seen.add(match[2] as string);
      if (match[1] !== claimed.get(match[2] as string)) wrong.push(line);
    }
  }
  assert.deepEqual(wrong.slice(0, 5), []);
  // An answer nginx or HAProxy made itself (502, 503, 504) never reached an instance.
  const unlogged = outcomes.filter((o) => typeof o.status === 'number' && o.status < 500 && !seen.has(o.id));
  assert.deepEqual(unlogged.slice(0, 5), []);
  assert.ok(seen.size > 100, `${seen.size} lines`);
}

function report(
  t: TestContext,
  front: string,
  outcomes: Outcome[],
  events: { reloadAt: number; reloadedAt: number; stopAt: number; stoppedAt: number },
): void {
  const seconds = (Math.max(...outcomes.map((o) => o.end)) - Math.min(...outcomes.map((o) => o.start))) / 1000;
  const kinds = ['read', 'search', 'login', 'change']
    .map((k) => `${k} ${outcomes.filter((o) => o.kind === k).length}`)
    .join(', ');
  const failed = outcomes.filter(unexpected);
  const during = (from: number, to: number) => failed.filter((o) => o.end >= from && o.start <= to);
  t.diagnostic(
    `${front}: ${outcomes.length} requests in ${seconds.toFixed(1)} s (${(outcomes.length / seconds).toFixed(0)}/s; ${kinds})`,
  );
  t.diagnostic(
    `${front}: latency p50 ${percentile(outcomes, 50).toFixed(1)} ms, p99 ${percentile(outcomes, 99).toFixed(1)} ms, p99.9 ${percentile(outcomes, 99.9).toFixed(1)} ms`,
  );
  const reads = outcomes.filter((o) => o.kind === 'read' || o.kind === 'search');
  // A login waits for its password check (scrypt, a third of a second, two at a time).
  t.diagnostic(
    `${front}: reads and searches alone: p50 ${percentile(reads, 50).toFixed(1)} ms, p99 ${percentile(reads, 99).toFixed(1)} ms, p99.9 ${percentile(reads, 99.9).toFixed(1)} ms`,
  );
  t.diagnostic(
    `${front}: 5xx ${outcomes.filter((o) => typeof o.status === 'number' && o.status >= 500).length}, socket errors ${outcomes.filter((o) => typeof o.status === 'string').length}, unexpected ${failed.length}`,
  );
  if (events.reloadAt)
    t.diagnostic(
      `${front}: rolling reload took ${(events.reloadedAt - events.reloadAt).toFixed(0)} ms; failed during it: ${during(events.reloadAt, events.reloadedAt).length}`,
    );
  const stop = during(events.stopAt, events.stoppedAt);
  t.diagnostic(
    `${front}: the stop took ${(events.stoppedAt - events.stopAt).toFixed(0)} ms; failed during it: ${stop.length} (${stop.filter((o) => o.method === 'POST').length} POST, ${stop.filter((o) => o.method !== 'POST').length} others)`,
  );
}
