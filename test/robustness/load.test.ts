// Sustained load on the product as operators run it: LOAD_SECONDS (default 60) of mixed traffic
// at 128 connections (reads of every resource, searches, static files, a logged-in user's loan
// list, users logging in and out, a librarian creating, changing, lending and deleting, users
// editing their own person and works) with zero 5xx, zero socket errors, and the resident memory
// at the end within 10% of its value after the first 10 seconds.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import autocannon from 'autocannon';
import { readMemoryKb } from '../../bench/load.ts';
import { csrfTokenOf, loanBody, personBody, werkBody } from '../change-helpers.ts';
import type { ApiFormat } from '../change-helpers.ts';
import { demo, logInAs } from '../login-helpers.ts';
import type { PostgresCluster } from './postgres-cluster.ts';
import { createCluster } from './postgres-cluster.ts';
import type { Program } from '../program.ts';
import { startProgram } from '../program.ts';

const seconds = Number(process.env.LOAD_SECONDS ?? 60);
// Two 10 s rests of the login rounds and time for logins between them.
if (!(seconds >= 40)) throw new Error(`LOAD_SECONDS must be at least 40, not ${process.env.LOAD_SECONDS}`);
const connections = 128;
const flowConnections = 4;
// Two librarians' rounds of changes and one round of each user's own edits.
const changeConnections = 4;

let cluster: PostgresCluster;
let program: Program;

before(async () => {
  cluster = await createCluster();
  program = await startProgram({ DATABASE_URL: cluster.url });
});
after(async () => {
  program?.remove();
  await cluster?.remove();
});

const csrfOf = (body: string | Buffer) => /name="csrf_token" value="([^"]+)"/.exec(String(body))?.[1] ?? '';
const cookieOf = (headers: unknown) =>
  String((headers as Record<string, string> | undefined)?.['set-cookie'] ?? '').split(';')[0] as string;
/** What a connection remembers between the requests of its round (autocannon's context). */
type Context = Record<string, string>;
const remembered = (context: object, key: string) => (context as Context)[key] ?? '';
const remember = (context: object, values: Context) => Object.assign(context, values);
const form = (fields: Record<string, string>, cookie: string) => ({
  headers: { 'content-type': 'application/x-www-form-urlencoded', cookie },
  body: new URLSearchParams(fields).toString(),
});

/** One user's round: the login form, the login, their loan list in HTML and JSON, the log-out. */
function loginFlow(user: 'mmuster' | 'jmueller'): autocannon.Request[] {
  const id = demo[user].id;
  return [
    {
      method: 'GET',
      path: '/login',
      onResponse: (_s, body, context, headers) =>
        remember(context, { anonymous: cookieOf(headers), csrf: csrfOf(body) }),
    },
    {
      method: 'POST',
      path: '/login',
      setupRequest: (req, context) => ({
        ...req,
        ...form(
          { username: user, password: demo[user].password, csrf_token: remembered(context, 'csrf') },
          remembered(context, 'anonymous'),
        ),
      }),
      onResponse: (_s, _body, context, headers) => remember(context, { session: cookieOf(headers) }),
    },
    {
      method: 'GET',
      path: `/entlehnte/${id}`,
      setupRequest: (req, context) => ({ ...req, headers: { cookie: remembered(context, 'session') } }),
      onResponse: (_s, body, context) => remember(context, { logout: csrfOf(body) }),
    },
    {
      method: 'GET',
      path: `/entlehnte/${id}.json`,
      setupRequest: (req, context) => ({ ...req, headers: { cookie: remembered(context, 'session') } }),
    },
    {
      method: 'POST',
      path: '/logout',
      setupRequest: (req, context) => ({
        ...req,
        ...form({ csrf_token: remembered(context, 'logout') }, remembered(context, 'session')),
      }),
    },
  ];
}

function readRequests(sessionCookie: string): autocannon.Request[] {
  const paths = [
    '/',
    '/index.json',
    '/index.xml',
    '/personen',
    '/personen.json',
    '/personen.xml?offset=0',
    '/person/max-muster',
    '/person/juergen-mueller.json',
    '/person/anna-lena-schaefer.xml',
    '/person.php?pid=4',
    '/werk/7',
    '/werk/10.json',
    '/werk.php?id=14',
    '/search?query=any,contains,m%C3%BCller',
    '/search.json?query=title,begins_with,nacht',
    '/search.xml?query=creator,exact,max&search_scope=personen',
    '/css/site.css',
    '/img/max-muster.svg',
    '/login.json',
  ];
  return [
    ...paths.map((path) => ({ method: 'GET' as const, path })),
    { method: 'GET', path: '/entlehnte/2.json', headers: { cookie: sessionCookie } },
    { method: 'GET', path: '/entlehnte/3', headers: { cookie: sessionCookie } },
  ];
}

/** A logged-in session for changes: its cookie and CSRF token, sent as X-CSRF-Token. */
interface Editor {
  cookie: string;
  csrfToken: string;
}

let nextRound = 1;
const idFrom = (headers: unknown) =>
  /\/([0-9]+)$/.exec(String((headers as Record<string, string> | undefined)?.location ?? ''))?.[1] ?? '';
/** Method, path, headers and body of a change by editor in format; autocannon's request adds host and port. */
function changesBy(editor: Editor, format: ApiFormat) {
  return (method: 'POST' | 'PUT' | 'DELETE', path: string, body?: string) => ({
    method,
    path,
    headers: {
      cookie: editor.cookie,
      'x-csrf-token': editor.csrfToken,
      accept: `application/${format}`,
      ...(body === undefined ? {} : { 'content-type': `application/${format}` }),
    },
    ...(body === undefined ? {} : { body }),
  });
}

/**
 * A librarian's round in JSON: a new person with a work, both renamed, the work lent to
 * jmueller, the loan read, returned, and the person deleted with the work. Every round has its
 * own names; each connection lends only its own works, so no two lend the same one (no 409).
 */
function librarianRound(editor: Editor, origin: string): autocannon.Request[] {
  const edit = changesBy(editor, 'json');
  const at = (context: object) => ({
    n: remembered(context, 'n'),
    person: remembered(context, 'person'),
    werk: remembered(context, 'werk'),
  });
  const borrower = demo.jmueller.id;
  return [
    {
      method: 'POST',
      path: '/personen',
      setupRequest: (req, context) => {
        const n = String(nextRound++);
        remember(context, { n });
        return {
          ...req,
          ...edit(
            'POST',
            '/personen',
            personBody('json', { vorname: 'Last', nachname: `Probe ${n}`, username: `last-${n}` }),
          ),
        };
      },
      onResponse: (_s, _body, context, headers) => remember(context, { person: idFrom(headers) }),
    },
    {
      method: 'POST',
      path: '/person/0/werke',
      setupRequest: (req, context) => ({
        ...req,
        ...edit(
          'POST',
          `/person/${at(context).person}/werke`,
          werkBody('json', { titel: `Lastwerk ${at(context).n}`, jahr: 2024 }),
        ),
      }),
      onResponse: (_s, _body, context, headers) => remember(context, { werk: idFrom(headers) }),
    },
    {
      method: 'PUT',
      path: '/person/0',
      setupRequest: (req, context) => ({
        ...req,
        ...edit(
          'PUT',
          `/person/${at(context).person}`,
          personBody('json', { vorname: 'Last', nachname: `Probe ${at(context).n} neu` }),
        ),
      }),
    },
    {
      method: 'PUT',
      path: '/werk/0',
      setupRequest: (req, context) => ({
        ...req,
        ...edit(
          'PUT',
          `/werk/${at(context).werk}`,
          werkBody('json', { titel: `Lastwerk ${at(context).n} neu`, art: 'Probe' }),
        ),
      }),
    },
    {
      method: 'POST',
      path: `/entlehnte/${borrower}`,
      setupRequest: (req, context) => ({
        ...req,
        ...edit('POST', `/entlehnte/${borrower}`, loanBody('json', { url: `${origin}/werk/${at(context).werk}` })),
      }),
    },
    {
      method: 'GET',
      path: '/entlehnte/0/0.json',
      setupRequest: (req, context) => ({
        ...req,
        path: `/entlehnte/${borrower}/${at(context).werk}.json`,
        headers: { cookie: editor.cookie },
      }),
    },
    {
      method: 'DELETE',
      path: '/entlehnte/0/0',
      setupRequest: (req, context) => ({ ...req, ...edit('DELETE', `/entlehnte/${borrower}/${at(context).werk}`) }),
    },
    {
      method: 'DELETE',
      path: '/person/0',
      setupRequest: (req, context) => ({ ...req, ...edit('DELETE', `/person/${at(context).person}`) }),
    },
  ];
}

/** A user's round in XML on their own person: its picture replaced, a work added, retitled and deleted. */
function ownEditsRound(
  editor: Editor,
  person: { slug: string; vorname: string; nachname: string },
): autocannon.Request[] {
  const edit = changesBy(editor, 'xml');
  return [
    {
      method: 'PUT',
      path: `/person/${person.slug}`,
      setupRequest: (req, context) => {
        const n = String(nextRound++);
        remember(context, { n });
        const image = Number(n) % 2 === 0 ? `/img/${person.slug}.svg` : `https://example.org/${person.slug}-${n}.jpg`;
        return {
          ...req,
          ...edit(
            'PUT',
            `/person/${person.slug}`,
            personBody('xml', { vorname: person.vorname, nachname: person.nachname, image }),
          ),
        };
      },
    },
    {
      method: 'POST',
      path: `/person/${person.slug}/werke`,
      setupRequest: (req, context) => ({
        ...req,
        ...edit(
          'POST',
          `/person/${person.slug}/werke`,
          werkBody('xml', { titel: `Eigenes Werk ${remembered(context, 'n')}`, jahr: 2025 }),
        ),
      }),
      onResponse: (_s, _body, context, headers) => remember(context, { werk: idFrom(headers) }),
    },
    {
      method: 'PUT',
      path: '/werk/0',
      setupRequest: (req, context) => ({
        ...req,
        ...edit(
          'PUT',
          `/werk/${remembered(context, 'werk')}`,
          werkBody('xml', { titel: `Eigenes Werk ${remembered(context, 'n')} (2. Fassung)`, jahr: 2025 }),
        ),
      }),
    },
    {
      method: 'DELETE',
      path: '/werk/0',
      setupRequest: (req, context) => ({ ...req, ...edit('DELETE', `/werk/${remembered(context, 'werk')}`) }),
    },
  ];
}

async function editorOf(origin: string, user: 'bibliothek' | 'mmuster' | 'jmueller'): Promise<Editor> {
  const cookie = await logInAs(origin, user);
  return { cookie, csrfToken: await csrfTokenOf(origin, cookie, `/entlehnte/${demo[user].id}`) };
}

test(`${seconds} s at ${connections} connections: no 5xx, no socket error, memory steady`, {
  timeout: (seconds + 120) * 1000,
}, async () => {
  const pid = program.child.pid as number;
  const [librarian, mmuster, jmueller] = await Promise.all([
    editorOf(program.origin, 'bibliothek'),
    editorOf(program.origin, 'mmuster'),
    editorOf(program.origin, 'jmueller'),
  ]);
  const samples: Sample[] = [];
  const started = Date.now();
  const sampler = setInterval(() => {
    const kb = readMemoryKb(pid);
    samples.push({
      at: (Date.now() - started) / 1000,
      rssMb: kb.rss / 1024,
      anonMb: kb.anon / 1024,
      fileMb: kb.file / 1024,
    });
  }, 250);
  const run = (options: { connections: number; requests: autocannon.Request[]; duration?: number }) =>
    autocannon({ url: program.origin, duration: seconds, timeout: 10, ...options });
  let results: autocannon.Result[];
  let changes: autocannon.Result[];
  try {
    const reading = readRequests(librarian.cookie);
    // The login rounds rest (their connections read instead) from 10 to 20 s and in the last
    // 10 s, so no scrypt runs when the memory is compared (see rssAt10 below).
    const rounds = async () => {
      const done: autocannon.Result[] = [];
      for (const [duration, requests] of [
        [10, null],
        [10, reading],
        [seconds - 30, null],
        [10, reading],
      ] as const) {
        if (requests) done.push(await run({ connections: flowConnections, requests: [...requests], duration }));
        else
          done.push(
            ...(await Promise.all(
              (['mmuster', 'jmueller'] as const).map((user) =>
                run({ connections: flowConnections / 2, requests: loginFlow(user), duration }),
              ),
            )),
          );
      }
      return done;
    };
    // The changes run all the time, each round on its own connection.
    const changing = () =>
      Promise.all([
        run({ connections: 2, requests: librarianRound(librarian, program.origin) }),
        run({
          connections: 1,
          requests: ownEditsRound(mmuster, { slug: 'max-muster', vorname: 'Max', nachname: 'Muster' }),
        }),
        run({
          connections: 1,
          requests: ownEditsRound(jmueller, { slug: 'juergen-mueller', vorname: 'Jürgen', nachname: 'Müller' }),
        }),
      ]);
    const [readResult, roundResults, changeResults] = await Promise.all([
      run({ connections: connections - flowConnections - changeConnections, requests: reading }),
      rounds(),
      changing(),
    ]);
    results = [readResult, ...roundResults, ...changeResults];
    changes = changeResults;
  } finally {
    clearInterval(sampler);
  }
  const [reads] = results;
  const flows = results.filter((r) => r.statusCodeStats?.['303']);
  const total = (key: '2xx' | '3xx' | '4xx' | '5xx' | 'errors' | 'timeouts' | 'resets') =>
    results.reduce((sum, r) => sum + (r[key] as number), 0);
  // Each login's scrypt holds 128 MiB while it runs (two at a time), so samples taken during the
  // login rounds swing by up to 256 MiB; the memory the process keeps is compared while they rest.
  // Logins still queued for their scrypt finish within about two seconds of a rest's start, and
  // over three when the changes and other work on the machine take the processor (seen at load
  // average 6). So both values are medians of the same part of a 10 s rest, from 5.5 to 9.5 s
  // into it: the value after the first 10 s from the rest at 10 to 20 s, the end's from the last.
  const early = medianOf(samples, 15.5, 19.5);
  const late = medianOf(samples, seconds - 4.5, seconds - 0.5);
  const rssAt10 = early.rssMb;
  const rssAtEnd = late.rssMb;
  const figures = {
    seconds,
    connections,
    requests: total('2xx') + total('3xx') + total('4xx') + total('5xx'),
    requestsPerSecond: Math.round(results.reduce((sum, r) => sum + r.requests.total, 0) / seconds),
    readLatencyMs: { p50: reads?.latency.p50, p99: reads?.latency.p99, max: reads?.latency.max },
    // Each round answers 303 twice: the login and the log-out.
    logins: flows.reduce((sum, r) => sum + (r.statusCodeStats?.['303']?.count ?? 0), 0) / 2,
    statuses: countStatuses(results),
    changes: {
      statuses: countStatuses(changes),
      // A librarian's round answers 201 three times, a user's round once.
      librarianRounds: (changes[0]?.statusCodeStats?.['201']?.count ?? 0) / 3,
      ownEditRounds: changes.slice(1).reduce((sum, r) => sum + (r.statusCodeStats?.['201']?.count ?? 0), 0),
      latencyMs: changes.map((r) => ({ p50: r.latency.p50, p99: r.latency.p99, max: r.latency.max })),
    },
    errors: total('errors'),
    timeouts: total('timeouts'),
    resets: total('resets'),
    rssMb: {
      after10s: Math.round(rssAt10),
      end: Math.round(rssAtEnd),
      // Of which anonymous (heap, buffers) and file-backed (the node binary and libraries).
      anonAfter10s: Math.round(early.anonMb),
      anonEnd: Math.round(late.anonMb),
      fileAfter10s: Math.round(early.fileMb),
      fileEnd: Math.round(late.fileMb),
      lowest: Math.round(Math.min(...samples.map((s) => s.rssMb))),
      peak: Math.round(Math.max(...samples.map((s) => s.rssMb))),
    },
  };
  console.log(JSON.stringify(figures, null, 2));

  assert.equal(total('5xx'), 0);
  assert.equal(total('errors'), 0);
  assert.equal(total('timeouts'), 0);
  // Only the answers the traffic asks for: pages and files, login redirects, changes made (201,
  // 200, 204); no 4xx at all, not even 409, as no two connections lend the same work.
  assert.deepEqual(Object.keys(figures.statuses).sort(), ['200', '201', '204', '303']);
  assert.ok(figures.logins >= seconds / 5, `${figures.logins} logins`);
  assert.ok(
    figures.changes.librarianRounds >= seconds / 10 && figures.changes.ownEditRounds >= seconds / 10,
    JSON.stringify(figures.changes),
  );
  // No growth: at most 10% above the value after 10 s. Below it is memory given back, not a leak
  // (measured with the build: about 125 MiB after 10 s and 120 MiB at the end; see docs/robustness.md).
  assert.ok(
    rssAtEnd <= rssAt10 * 1.1,
    `RSS ${rssAt10.toFixed(1)} MiB after 10 s, ${rssAtEnd.toFixed(1)} MiB at the end: ${JSON.stringify(figures.rssMb)}`,
  );
  // Two scrypts (2 x 128 MiB) on top of the kept memory, and no more.
  assert.ok(figures.rssMb.peak < rssAt10 + 400, `peak RSS ${figures.rssMb.peak} MiB`);
  assert.doesNotMatch(program.readLog('error.log'), /\[app:error\]/);
});

function countStatuses(results: autocannon.Result[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const result of results) {
    for (const [code, stats] of Object.entries(result.statusCodeStats ?? {}))
      counts[code] = (counts[code] ?? 0) + (stats.count ?? 0);
  }
  return counts;
}

interface Sample {
  at: number;
  rssMb: number;
  anonMb: number;
  fileMb: number;
}

/** The median of each memory figure over the samples taken from `from` to `to` seconds. */
function medianOf(samples: Sample[], from: number, to: number): Omit<Sample, 'at'> {
  const within = samples.filter((s) => s.at >= from && s.at <= to);
  const median = (values: number[]) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? NaN;
  return {
    rssMb: median(within.map((s) => s.rssMb)),
    anonMb: median(within.map((s) => s.anonMb)),
    fileMb: median(within.map((s) => s.fileMb)),
  };
}
