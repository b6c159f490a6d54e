// Database outages under load, on a PostgreSQL server of the test's own: stopped, crashed and
// frozen while clients read every kind of page, log in and out, and a librarian creates, changes
// and deletes persons, works and loans. Requests that need the database answer 503 with
// Retry-After within the time-outs, pages that do not keep working, the service recovers on its
// own within 2 s of the restart, every acknowledged change is in the database and no refused
// one is, not even in part.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { after, before, test } from 'node:test';
import { openPostgres } from '../../lib/db/index.ts';
import type { TestServer } from '../helpers.ts';
import { startTestServer, waitFor } from '../helpers.ts';
import { csrfTokenOf } from '../change-helpers.ts';
import { cookieOf, demo, logInAs, tokenOf } from '../login-helpers.ts';
import type { Chain, Librarian } from './change-chain.ts';
import { expectedRows, readRows, runChain } from './change-chain.ts';
import type { PostgresCluster } from './postgres-cluster.ts';
import { createCluster } from './postgres-cluster.ts';

const connectTimeoutMs = 1000;
const statementTimeoutMs = 2000;
// pg gives up on a query the server does not answer one second after the statement time-out.
const queryTimeoutMs = statementTimeoutMs + 1000;
const recoveryMs = 2000;
// A change whose COMMIT got no answer asks for this long whether it committed: longer than an
// outage here lasts, so every change gets a definite answer.
const outcomeTimeoutMs = 8000;
// Time between outages: recovery, then a second of normal service to check it held.
const upMs = 3500;

let cluster: PostgresCluster;
let server: TestServer;
let librarian: Librarian;
/** COMMITs that got no answer and were found committed (lib/db/postgres.ts). */
const committedAfterNoAnswer: string[] = [];

before(async () => {
  cluster = await createCluster();
  const db = openPostgres({
    connectionString: cluster.url,
    statementTimeoutMs,
    connectTimeoutMs,
    outcomeTimeoutMs,
    onWarning: (message) => committedAfterNoAnswer.push(message),
  });
  server = await startTestServer({ NODE_ENV: 'production' }, { db: { db, url: cluster.url, drop: () => db.close() } });
  const cookie = await logInAs(server.origin, 'bibliothek');
  acknowledged.loggedIn.add(tokenOf(cookie));
  librarian = { origin: server.origin, cookie, csrfToken: await csrfTokenOf(server.origin, cookie, '/personen/neu') };
});
after(async () => {
  await server?.close();
  await cluster?.remove();
});

interface Outcome {
  kind: 'read' | 'static' | 'login' | 'change';
  target: string;
  start: number;
  end: number;
  status: number | string;
  retryAfter: string | null;
  body: string;
}

const reads = [
  '/',
  '/personen.xml',
  '/person/max-muster.json',
  '/person.php?pid=2',
  '/werk/7.json',
  '/search.json?query=any,contains,m%C3%BCller',
];
const statics = ['/css/site.css', '/img/max-muster.svg'];

async function get(
  kind: Outcome['kind'],
  target: string,
  init: RequestInit = {},
): Promise<Outcome & { res: Response | null }> {
  const start = performance.now();
  try {
    const res = await fetch(server.origin + target, {
      redirect: 'manual',
      signal: AbortSignal.timeout(15_000),
      ...init,
    });
    const body = await res.text();
    return {
      kind,
      target,
      start,
      end: performance.now(),
      status: res.status,
      retryAfter: res.headers.get('retry-after'),
      body,
      res,
    };
  } catch (err) {
    return {
      kind,
      target,
      start,
      end: performance.now(),
      status: (err as { cause?: { code?: string } }).cause?.code ?? String(err),
      retryAfter: null,
      body: '',
      res: null,
    };
  }
}

/** What the login clients were told, to compare with the database afterwards. */
const acknowledged = { loggedIn: new Set<string>(), loggedOut: new Set<string>() };

/** A user who logs in through the form, reads their loan list and logs out, over and over. */
async function loginFlow(record: (o: Outcome) => void, user: 'mmuster' | 'jmueller'): Promise<void> {
  const form = await get('login', '/login');
  record(form);
  const csrfToken = /name="csrf_token" value="([^"]+)"/.exec(form.body)?.[1];
  const anonymous = form.res ? cookieOf(form.res) : null;
  if (form.status !== 200 || !csrfToken || !anonymous) return;
  const login = await get(
    'login',
    '/login',
    postInit({ username: user, password: demo[user].password, csrf_token: csrfToken }, anonymous),
  );
  record(login);
  const session = login.res ? cookieOf(login.res) : null;
  if (login.status !== 303 || !session) return;
  acknowledged.loggedIn.add(tokenOf(session));
  const page = await get('login', `/entlehnte/${demo[user].id}`, { headers: { cookie: session } });
  record(page);
  const logoutToken = /name="csrf_token" value="([^"]+)"/.exec(page.body)?.[1];
  if (page.status !== 200 || !logoutToken) return;
  const logout = await get('login', '/logout', postInit({ csrf_token: logoutToken }, session));
  record(logout);
  if (logout.status === 303) acknowledged.loggedOut.add(tokenOf(session));
}

function postInit(fields: Record<string, string>, cookie: string): RequestInit {
  return {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie },
    body: new URLSearchParams(fields).toString(),
  };
}

/** Clients that read, fetch static files, log in and out and change data until stop() is called. */
function startLoad(): { outcomes: Outcome[]; chains: Chain[]; stop: () => Promise<void> } {
  const outcomes: Outcome[] = [];
  const chains: Chain[] = [];
  let nextChain = 1;
  let running = true;
  const record = (o: Outcome) => {
    outcomes.push({ ...o, body: o.body.slice(0, 2000) });
  };
  const loop = async (step: (i: number) => Promise<void>) => {
    for (let i = 0; running && i < 100_000; i++) await step(i);
  };
  const clients = [
    ...Array.from({ length: 4 }, (_, c) =>
      loop(async (i) => record(await get('read', reads[(i + c) % reads.length] as string))),
    ),
    loop(async (i) => record(await get('static', statics[i % statics.length] as string))),
    loop(() => loginFlow(record, 'mmuster')),
    loop(() => loginFlow(record, 'jmueller')),
    ...Array.from({ length: 2 }, () =>
      loop(async () => {
        chains.push(
          await runChain(librarian, nextChain++, (attempt) =>
            record({ kind: 'change', target: attempt.step, ...attempt }),
          ),
        );
      }),
    ),
  ];
  return {
    outcomes,
    chains,
    stop: async () => {
      running = false;
      await Promise.all(clients);
    },
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Phase {
  name: string;
  from: number;
  to: number;
  restartedAt: number;
}

test('stopped, crashed and frozen database: 503 with Retry-After in time, static pages served, recovery within 2 s, every acknowledged change kept, no refused one', async () => {
  const load = startLoad();
  const phases: Phase[] = [];
  const outage = async (name: string, down: () => Promise<void>, up: () => Promise<void>, downMs: number) => {
    const from = performance.now();
    await down();
    await sleep(downMs);
    await up();
    const restartedAt = performance.now();
    phases.push({ name, from, to: restartedAt, restartedAt });
    await sleep(upMs);
  };
  try {
    await sleep(1500);
    await outage(
      'stopped (pg_ctl stop -m fast)',
      () => cluster.stop('fast'),
      () => cluster.start(),
      2500,
    );
    await outage(
      'crashed (pg_ctl stop -m immediate)',
      () => cluster.stop('immediate'),
      () => cluster.start(),
      2500,
    );
    await outage(
      'frozen (SIGSTOP)',
      async () => cluster.freeze(true),
      async () => cluster.freeze(false),
      4000,
    );
  } finally {
    await load.stop();
  }
  const { outcomes, chains } = load;
  const errorLog = server.errorLog();
  const report = {
    phases: summarize(outcomes, phases),
    chains: {
      completed: chains.filter((c) => c.failed === null).length,
      endedByError: countBy(chains.flatMap((c) => (c.failed ? [c.failed.step] : []))),
    },
    changes: countBy(outcomes.filter((o) => o.kind === 'change').map((o) => String(o.status))),
    commitsWithoutAnswer: {
      committed: committedAfterNoAnswer.length,
      notCommitted: (errorLog.match(/; it did not commit, as pg_xact_status showed/g) ?? []).length,
    },
  };
  console.log(JSON.stringify(report, null, 2));
  // Nothing but the expected statuses; no socket error, no 500, no hang.
  const statuses = new Set(outcomes.map((o) => o.status));
  // A 500 tells what the error log says of it: the lines that are not an outage's 503.
  const otherErrors = errorLog
    .split('\n')
    .filter((line) => /\[app:error\]/.test(line) && !/DbUnavailableError/.test(line))
    .slice(0, 5);
  for (const status of statuses) {
    assert.ok(
      [200, 201, 204, 303, 503].includes(status as number),
      `status ${status}: ${JSON.stringify(outcomes.find((o) => o.status === status))}\n${otherErrors.join('\n')}`,
    );
  }
  // Every 503 says when to come back and came within the time-outs.
  const unavailable = outcomes.filter((o) => o.status === 503);
  assert.ok(unavailable.length >= 20, `${unavailable.length} answers 503`);
  for (const o of unavailable) {
    assert.equal(o.retryAfter, '5', o.target);
    // A read waits for one query at most. A login also computes its scrypt (a third of a second
    // on an idle machine, several under load), so it is only held to "no hang"; a change whose
    // COMMIT got no answer then asks for up to outcomeTimeoutMs whether it was saved.
    const allowedMs = o.kind === 'read' ? queryTimeoutMs + 500 : queryTimeoutMs + outcomeTimeoutMs + 2000;
    assert.ok(o.end - o.start < allowedMs, `${o.target} took ${(o.end - o.start).toFixed(0)} ms`);
    assert.doesNotMatch(o.body, /ECONNREFUSED|at [\w.]+ \(|\.ts:\d+/, 'a 503 shows nothing of the internals');
  }
  // Pages that do not need the database never failed.
  assert.deepEqual(
    outcomes.filter((o) => o.kind === 'static' && o.status !== 200),
    [],
  );
  assert.ok(
    outcomes.filter((o) => o.kind === 'static' && phases.some((p) => o.start > p.from && o.end < p.to)).length >= 20,
  );
  // Recovery: a database request begun 2 s after the restart no longer fails.
  for (const phase of phases) {
    const late = outcomes.filter(
      (o) => o.kind !== 'static' && o.start > phase.restartedAt + recoveryMs && o.end < phase.restartedAt + upMs,
    );
    assert.ok(late.length > 0, phase.name);
    assert.deepEqual(
      late.filter((o) => o.status === 503).map((o) => o.target),
      [],
      phase.name,
    );
  }
  // The error log says why, for every 503, without a line for each: the first of a kind, then one
  // line per interval with the count (summed up every 10 s); no change was left with its outcome unknown.
  assert.match(
    errorLog,
    /\[app:error\] \[pid \d+\] \[client 127\.0\.0\.1:\d+\] DbUnavailableError: database unavailable: connect ECONNREFUSED 127\.0\.0\.1:\d+/,
  );
  assert.match(
    errorLog,
    /DbUnavailableError: database unavailable: (Query read timeout|timeout exceeded when trying to connect)/,
  );
  // A first line stands for one answer, a summed-up line for as many as it says.
  const accounted = (log: string) =>
    log
      .split('\n')
      .filter((line) => line.includes('DbUnavailableError'))
      .reduce(
        (sum, line) =>
          sum + Number(/\(repeated ([0-9,]+) times in the last \d+ s\)$/.exec(line)?.[1]?.replace(/,/g, '') ?? 1),
        0,
      );
  const summed = await waitFor(server.errorLog, (log) => accounted(log) >= unavailable.length, 15_000);
  const outageLines = summed.split('\n').filter((line) => line.includes('DbUnavailableError')).length;
  console.log(`error log: ${outageLines} lines for ${unavailable.length} answers 503`);
  assert.equal(accounted(summed), unavailable.length);
  assert.ok(outageLines < unavailable.length, `${outageLines} lines for ${unavailable.length} answers 503`);
  assert.doesNotMatch(errorLog, /outcome is unknown/);

  // Every change answered 200, 201 or 204 is in the tables, and nothing of one answered with an
  // error: no person without the work added to it, no half-renamed person, no deleted person's
  // paths noted as gone while the person is still there.
  assert.deepEqual(await readRows(server.db), expectedRows(chains));
  const acknowledgedChanges = chains.reduce((sum, c) => sum + c.acknowledged.length, 0);
  assert.ok(acknowledgedChanges >= 20, `${acknowledgedChanges} changes acknowledged`);
  assert.ok(
    chains.filter((c) => c.failed !== null).length >= 3,
    `${chains.filter((c) => c.failed !== null).length} chains ended by an outage`,
  );

  // Every acknowledged login is in the database unless its logout was acknowledged too; nothing else.
  const rows = await server.db.query<{ id: string }>('SELECT id FROM session WHERE account_id IS NOT NULL');
  const expected = [...acknowledged.loggedIn]
    .filter((t) => !acknowledged.loggedOut.has(t))
    .map(sha256)
    .sort();
  assert.deepEqual(rows.map((r) => r.id).sort(), expected);
  assert.ok(acknowledged.loggedIn.size >= 5, `${acknowledged.loggedIn.size} logins acknowledged`);
});

function sha256(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

/** The figures docs/robustness.md reports. */
function summarize(outcomes: Outcome[], phases: Phase[]) {
  return phases.map((phase, i) => {
    const next = phases[i + 1]?.from ?? Infinity;
    const during = outcomes.filter((o) => o.start >= phase.from && o.start < phase.to);
    const firstOk = outcomes.find((o) => o.kind !== 'static' && o.start >= phase.restartedAt && o.status !== 503);
    // Requests cut by the next outage do not count against this recovery.
    const lastFailure = outcomes.filter((o) => o.status === 503 && o.start >= phase.restartedAt && o.end < next).at(-1);
    const latencies = during
      .filter((o) => o.status === 503)
      .map((o) => o.end - o.start)
      .sort((a, b) => a - b);
    return {
      phase: phase.name,
      downMs: Math.round(phase.to - phase.from),
      statuses: countBy(during.map((o) => `${o.kind} ${o.status}`)),
      slowest503Ms: Math.round(latencies.at(-1) ?? 0),
      firstSuccessAfterRestartMs: firstOk ? Math.round(firstOk.end - phase.restartedAt) : null,
      last503BegunAfterRestartMs: lastFailure ? Math.round(lastFailure.start - phase.restartedAt) : null,
    };
  });
}

function countBy(items: string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const item of items.sort()) counts[item] = (counts[item] ?? 0) + 1;
  return counts;
}
