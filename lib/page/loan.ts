// One loan: /entlehnte/<user_id>/<work_id>, the URL a lending answers with (201 Location). It
// shows the latest loan of that work to that user, so the link keeps working after the return,
// which it then states (zurueck). A lending as a librarian's request states it, and its form.
// Writing is loan-store.ts.
import type { Identity } from '../auth/index.ts';
import type { Queryable } from '../db/index.ts';
import type { Body, FieldError } from '../http/index.ts';
import type { FormField, FormState } from './form.ts';
import { fieldOf } from './form.ts';
import type { Shape } from './input.ts';
import { readFields } from './input.ts';
import type { LinkFn, View } from './script-request.ts';

/**
 * A loan as every page that shows one reads it: the entries of a loan list and the loan's own
 * page. The interface calls it entlehnung (docs/development.md, Names).
 */
export interface Loan {
  account: { id: number; username: string };
  werk: { id: number; titel: string };
  person: { slug: string; vorname: string; nachname: string };
  /** YYYY-MM-DD */
  seit: string;
  /** The due date, YYYY-MM-DD. */
  bis: string;
  /** The day it came back, or null while it is out. */
  zurueck: string | null;
  ueberfaellig: boolean;
}

// A Loan's columns, from loanTables.
const loanColumns = `json_build_object('id', a.id, 'username', a.username) AS account,
            json_build_object('id', w.id, 'titel', w.titel) AS werk,
            json_build_object('slug', p.slug, 'vorname', p.vorname, 'nachname', p.nachname) AS person,
            to_char(l.since, 'YYYY-MM-DD') AS seit, to_char(l.until, 'YYYY-MM-DD') AS bis,
            to_char(l.returned_at, 'YYYY-MM-DD') AS zurueck,
            l.returned_at IS NULL AND l.until < current_date AS ueberfaellig`;
const loanTables =
  'loan l JOIN account a ON a.id = l.account_id JOIN werk w ON w.id = l.werk_id JOIN person p ON p.id = w.person_id';

/** A user's loans are read by that user and by librarians, nobody else. */
export function mayReadLoans(requester: Identity, accountId: number): boolean {
  return requester.role === 'librarian' || requester.id === accountId;
}

/** The latest loan of the work to the account, returned or not. */
export async function findLoan(db: Queryable, accountId: number, werkId: number): Promise<Loan | null> {
  const [loan] = await db.query<Loan>(
    `SELECT ${loanColumns}
       FROM ${loanTables}
      WHERE l.account_id = $1 AND l.werk_id = $2
      ORDER BY l.returned_at IS NULL DESC, l.since DESC, l.id DESC
      LIMIT 1`,
    [accountId, werkId],
  );
  return loan ?? null;
}

/** One page of the account's open loans, the soonest due first, and how many there are. */
export async function findOpenLoans(
  db: Queryable,
  accountId: number,
  page: { offset: number; limit: number },
): Promise<{ loans: Loan[]; total: number }> {
  const rows = await db.query<Loan & { total: number }>(
    `SELECT ${loanColumns}, count(*) OVER ()::integer AS total
       FROM ${loanTables}
      WHERE l.account_id = $1 AND l.returned_at IS NULL
      ORDER BY l.until, w.titel, w.id
      LIMIT $2 OFFSET $3`,
    [accountId, page.limit, page.offset],
  );
  // A page past the end has no rows to carry the count.
  let total = rows[0]?.total ?? 0;
  if (rows.length === 0 && page.offset > 0) {
    const [row] = await db.query<{ total: number }>(
      'SELECT count(*)::integer AS total FROM loan WHERE account_id = $1 AND returned_at IS NULL',
      [accountId],
    );
    total = row?.total ?? 0;
  }
  return { loans: rows.map(({ total: _total, ...loan }) => loan), total };
}

function loanPath(loan: { account: { id: number }; werk: { id: number } }): string {
  return `/entlehnte/${loan.account.id}/${loan.werk.id}`;
}

export function loanJson(loan: Loan, link: LinkFn) {
  return {
    url: link(loanPath(loan)),
    benutzer: { name: loan.account.username, entlehnte: link(`/entlehnte/${loan.account.id}`) },
    werk: { titel: loan.werk.titel, url: link(`/werk/${loan.werk.id}`) },
    person: { name: `${loan.person.vorname} ${loan.person.nachname}`, url: link(`/person/${loan.person.slug}`) },
    seit: loan.seit,
    bis: loan.bis,
    zurueck: loan.zurueck,
    ueberfaellig: loan.ueberfaellig,
  };
}

export function loanXml(loan: Loan, link: LinkFn) {
  return {
    entlehnung: {
      '@_ref': link(loanPath(loan)),
      '@_seit': loan.seit,
      '@_bis': loan.bis,
      ...(loan.zurueck ? { '@_zurueck': loan.zurueck } : {}),
      '@_ueberfaellig': String(loan.ueberfaellig),
      benutzer: { '@_name': loan.account.username, '@_ref': link(`/entlehnte/${loan.account.id}`) },
      werk: { '@_ref': link(`/werk/${loan.werk.id}`), '#text': loan.werk.titel },
      person: {
        '@_ref': link(`/person/${loan.person.slug}`),
        '#text': `${loan.person.vorname} ${loan.person.nachname}`,
      },
    },
  };
}

export const loanView: View = { template: 'entlehnung', toJson: loanJson, toXml: loanXml };

export interface LoanInput {
  werkId: number;
  /** The due date, YYYY-MM-DD; null: four weeks from today. */
  bis: string | null;
}

// As JSON like an entry of the loan list ({ "url", "bis" }), as XML <werk ref="…" bis="…"/>.
const loanShape: Shape = {
  root: 'werk',
  fields: [
    { name: 'werk', json: 'url', xml: { element: '', attribute: 'ref' } },
    { name: 'bis', xml: { element: '', attribute: 'bis' } },
  ],
};

/** `site` is the absolute URL of the site root without the slash: the work's URL must be on it. */
export function readLoan(body: Body, site: string): { input: LoanInput; errors: FieldError[] } {
  const { raw, errors } = readFields(body, loanShape);
  const werk = (raw.werk ?? '').trim();
  const path = werk.startsWith(`${site}/`) ? werk.slice(site.length) : werk;
  const id = /^[0-9]{1,9}$/.exec(path)?.[0] ?? /^\/werk\/([0-9]{1,9})$/.exec(path)?.[1];
  if (werk === '') errors.push({ field: 'werk', message: 'Required: the id or the URL of the work to lend.' });
  else if (id === undefined || Number(id) < 1)
    errors.push({ field: 'werk', message: 'Give the work as its id (14) or its URL on this site (…/werk/14).' });
  const bis = (raw.bis ?? '').trim();
  if (bis !== '' && !isDate(bis))
    errors.push({ field: 'bis', message: 'A date as YYYY-MM-DD, for example 2026-12-24.' });
  return { input: { werkId: Number(id ?? 0), bis: bis === '' ? null : bis }, errors };
}

function isDate(text: string): boolean {
  if (!/^[0-9]{4}-[0-9]{2}-[0-9]{2}$/.test(text)) return false;
  const date = new Date(`${text}T00:00:00Z`);
  return !Number.isNaN(date.getTime()) && date.toISOString().slice(0, 10) === text;
}

/** A work the lend form's search step offers, with its open loan if it is out. */
export interface LendCandidate {
  id: number;
  titel: string;
  person: string;
  /** Who has it and until when, while it is on loan. */
  holder: string | null;
  bis: string | null;
}

/**
 * Works whose title or creator contains `term`, for lending by title without JavaScript: each
 * half through its trigram index (sql/002_search.sql), the first 20 by title.
 */
export async function findWorksToLend(db: Queryable, term: string): Promise<LendCandidate[]> {
  const pattern = `%${term.replace(/[\\%_]/g, '\\$&')}%`;
  return db.query<LendCandidate>(
    `WITH hits AS (
       SELECT w.id FROM werk w WHERE w.titel ILIKE $1
       UNION
       SELECT w.id FROM werk w JOIN person p ON p.id = w.person_id WHERE p.vorname || ' ' || p.nachname ILIKE $1
     )
     SELECT w.id, w.titel, p.vorname || ' ' || p.nachname AS person, a.username AS holder, to_char(l.until, 'YYYY-MM-DD') AS bis
       FROM hits JOIN werk w ON w.id = hits.id JOIN person p ON p.id = w.person_id
       LEFT JOIN loan l ON l.werk_id = w.id AND l.returned_at IS NULL
       LEFT JOIN account a ON a.id = l.account_id
      ORDER BY w.titel, w.id
      LIMIT 20`,
    [pattern],
  );
}

/** The lend form's fields on the loan list. */
export function loanFields(state: Pick<FormState, 'values' | 'errors'>): FormField[] {
  return [
    fieldOf(state, {
      name: 'werk',
      label: 'Work',
      type: 'text',
      maxlength: 2000,
      required: true,
      suggest: 'werk',
      hint: "Type part of a title or creator and pick a suggestion, or give the work's id or URL.",
    }),
    fieldOf(state, {
      name: 'bis',
      label: 'Due',
      type: 'date',
      maxlength: 10,
      required: false,
      hint: 'Empty: in four weeks.',
    }),
  ];
}
