// A librarian's chain of changes through the JSON API for the outage test: create a person, add
// a work, lend it, rename the person, retitle the work, record the return, then delete the work
// or the person or neither. Names and titles are unique per chain, so the rows each change
// leaves are known exactly; the chain stops at its first error. expectedRows() says what the
// database must hold given the answers, and readRows() what it holds.
import type { Db } from '../../lib/db/index.ts';
import { loanBody, personBody, werkBody } from '../change-helpers.ts';
import { demo } from '../login-helpers.ts';

export const steps = [
  'create person',
  'add work',
  'lend',
  'rename person',
  'retitle work',
  'return',
  'delete work',
  'delete person',
] as const;
export type Step = (typeof steps)[number];

export interface Chain {
  n: number;
  personId: number | null;
  werkId: number | null;
  /** The changes answered 200, 201 or 204, in order. */
  acknowledged: Step[];
  /** The change answered with an error or a socket error, which ended the chain. */
  failed: { step: Step; status: number | string } | null;
}

export interface ChangeAttempt {
  step: Step;
  start: number;
  end: number;
  status: number | string;
  retryAfter: string | null;
  body: string;
}

export interface Librarian {
  origin: string;
  cookie: string;
  csrfToken: string;
}

const borrower = demo.mmuster.id;
const names = (n: number) => ({
  slug: `ausfall-kette-${n}`,
  nachname: `Kette ${n}`,
  username: `ausfall-${n}`,
  titel: `Ausfallwerk ${n}`,
});

/** Runs chain n; record() gets every attempt as it ends. */
export async function runChain(
  librarian: Librarian,
  n: number,
  record: (attempt: ChangeAttempt) => void,
): Promise<Chain> {
  const chain: Chain = { n, personId: null, werkId: null, acknowledged: [], failed: null };
  const { nachname, username, titel } = names(n);
  const ending: Step[] = n % 3 === 0 ? ['delete work'] : n % 3 === 1 ? ['delete person'] : [];
  const plan: [Step, () => [method: string, path: string, body?: string]][] = [
    ['create person', () => ['POST', '/personen', personBody('json', { vorname: 'Ausfall', nachname, username })]],
    [
      'add work',
      () => ['POST', `/person/${chain.personId}/werke`, werkBody('json', { titel, jahr: 2020, art: 'Probe' })],
    ],
    [
      'lend',
      () => ['POST', `/entlehnte/${borrower}`, loanBody('json', { url: `${librarian.origin}/werk/${chain.werkId}` })],
    ],
    [
      'rename person',
      () => [
        'PUT',
        `/person/${chain.personId}`,
        personBody('json', { vorname: 'Ausfall', nachname: `${nachname} neu`, image: `/img/ausfall-${n}.svg` }),
      ],
    ],
    [
      'retitle work',
      () => [
        'PUT',
        `/werk/${chain.werkId}`,
        werkBody('json', { titel: `${titel} neu`, jahr: 2021, art: 'Probe', beschreibung: 'geändert' }),
      ],
    ],
    ['return', () => ['DELETE', `/entlehnte/${borrower}/${chain.werkId}`]],
    ...ending.map((step): [Step, () => [string, string]] => [
      step,
      () => (step === 'delete work' ? ['DELETE', `/werk/${chain.werkId}`] : ['DELETE', `/person/${chain.personId}`]),
    ]),
  ];
  for (const [step, request] of plan) {
    const [method, path, body] = request();
    const attempt = await send(librarian, { step, method, path, body });
    record(attempt);
    if (typeof attempt.status !== 'number' || ![200, 201, 204].includes(attempt.status)) {
      chain.failed = { step, status: attempt.status };
      break;
    }
    chain.acknowledged.push(step);
    if (step === 'create person') chain.personId = idOf(attempt, '/person/');
    if (step === 'add work') chain.werkId = idOf(attempt, '/werk/');
  }
  return chain;
}

async function send(
  librarian: Librarian,
  request: { step: Step; method: string; path: string; body: string | undefined },
): Promise<ChangeAttempt & { location: string | null }> {
  const start = performance.now();
  try {
    const res = await fetch(librarian.origin + request.path, {
      method: request.method,
      redirect: 'manual',
      headers: {
        cookie: librarian.cookie,
        'x-csrf-token': librarian.csrfToken,
        accept: 'application/json',
        ...(request.body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: request.body,
      signal: AbortSignal.timeout(30_000),
    });
    const body = await res.text();
    return {
      step: request.step,
      start,
      end: performance.now(),
      status: res.status,
      retryAfter: res.headers.get('retry-after'),
      body,
      location: res.headers.get('location'),
    };
  } catch (err) {
    const status = (err as { cause?: { code?: string } }).cause?.code ?? String(err);
    return { step: request.step, start, end: performance.now(), status, retryAfter: null, body: '', location: null };
  }
}

function idOf(attempt: ChangeAttempt & { location: string | null }, prefix: string): number {
  const match = new RegExp(`${prefix}([0-9]+)$`).exec(attempt.location ?? '');
  if (!match)
    throw new Error(`${attempt.step} answered ${attempt.status} without a Location ${prefix}<id>: ${attempt.location}`);
  return Number(match[1]);
}

export interface Rows {
  persons: { id: number; slug: string; nachname: string; username: string; image: string }[];
  werke: { id: number; personId: number; titel: string; jahr: number; beschreibung: string }[];
  loans: { werkId: number; accountId: number; returned: boolean }[];
  slugHistory: { slug: string; personId: number }[];
  gone: string[];
}

/** The chains' rows: persons, works, loans, old slugs, and every path noted as gone. */
export async function readRows(db: Db): Promise<Rows> {
  const [persons, werke, loans, slugHistory, gone] = await Promise.all([
    db.query<Rows['persons'][number]>(
      `SELECT id, slug, nachname, username, image FROM person WHERE username LIKE 'ausfall-%' ORDER BY id`,
    ),
    db.query<Rows['werke'][number]>(
      `SELECT id, person_id AS "personId", titel, jahr, beschreibung FROM werk WHERE titel LIKE 'Ausfallwerk %' ORDER BY id`,
    ),
    db.query<Rows['loans'][number]>(
      `SELECT l.werk_id AS "werkId", l.account_id AS "accountId", l.returned_at IS NOT NULL AS returned
         FROM loan l JOIN werk w ON w.id = l.werk_id WHERE w.titel LIKE 'Ausfallwerk %' ORDER BY l.werk_id, l.id`,
    ),
    db.query<Rows['slugHistory'][number]>(
      `SELECT slug, person_id AS "personId" FROM person_slug_history WHERE slug LIKE 'ausfall-%'`,
    ),
    db.query<{ path: string }>('SELECT path FROM gone'),
  ]);
  return { persons, werke, loans, slugHistory: slugHistory.sort(bySlug), gone: gone.map((g) => g.path).sort() };
}

/** What the database must hold: every acknowledged change, nothing of a failed one. */
export function expectedRows(chains: Chain[]): Rows {
  const rows: Rows = { persons: [], werke: [], loans: [], slugHistory: [], gone: [] };
  for (const chain of [...chains].sort((a, b) => a.n - b.n)) {
    const { slug, nachname, username, titel } = names(chain.n);
    const done = (step: Step) => chain.acknowledged.includes(step);
    const personId = chain.personId as number;
    const werkId = chain.werkId as number;
    const renamed = done('rename person');
    if (done('delete person')) {
      rows.gone.push(`/person/${personId}`, `/person/${slug}`, `/person/${slug}-neu`, `/werk/${werkId}`);
      continue;
    }
    if (!done('create person')) continue;
    rows.persons.push({
      id: personId,
      slug: renamed ? `${slug}-neu` : slug,
      nachname: renamed ? `${nachname} neu` : nachname,
      username,
      image: renamed ? `/img/ausfall-${chain.n}.svg` : '/img/person.svg',
    });
    if (renamed) rows.slugHistory.push({ slug, personId });
    if (done('delete work')) rows.gone.push(`/werk/${werkId}`);
    else if (done('add work')) {
      const retitled = done('retitle work');
      rows.werke.push({
        id: werkId,
        personId,
        titel: retitled ? `${titel} neu` : titel,
        jahr: retitled ? 2021 : 2020,
        beschreibung: retitled ? 'geändert' : '',
      });
      if (done('lend')) rows.loans.push({ werkId, accountId: borrower, returned: done('return') });
    }
  }
  rows.persons.sort((a, b) => a.id - b.id);
  rows.werke.sort((a, b) => a.id - b.id);
  rows.loans.sort((a, b) => a.werkId - b.werkId);
  rows.slugHistory.sort(bySlug);
  rows.gone.sort();
  return rows;
}

function bySlug(a: { slug: string }, b: { slug: string }): number {
  return a.slug < b.slug ? -1 : a.slug > b.slug ? 1 : 0;
}
