// The person list: /personen and personen.php, 50 a page, with the total and the
// neighbouring pages (offset, 0-based). A librarian POSTs here to create a person.
import { beginChange, librariansOnly } from '../lib/change.ts';
import { formDocument, orFormAgain, rejectInvalid } from '../lib/form-page.ts';
import { Redirect } from '../lib/http-error.ts';
import { newPersonPage } from '../lib/person-forms.ts';
import { readPerson } from '../lib/person-input.ts';
import { insertPerson } from '../lib/person-store.ts';
import { personView } from '../lib/person-view.ts';
import type { Document, LinkFn, Outcome, ScriptRequest } from '../lib/script.ts';
import { pageLinks, readNonNegativeInteger } from '../lib/script.ts';

export interface PersonList {
  total: number;
  offset: number;
  size: number;
  previous: number | null;
  next: number | null;
  personen: { slug: string; vorname: string; nachname: string; image: string; werke: number }[];
}

const pageSize = 50;

// Each page depends on its offset and the data alone: kept rendered until persons or works change.
export const cacheable = true;

export async function GET({ query, db, remember }: ScriptRequest): Promise<Document<PersonList>> {
  const offset = readNonNegativeInteger(query, 'offset', 0);

  const [[count], personen] = await Promise.all([
    remember('personen:total', () => db.query<{ total: number }>('SELECT count(*)::int AS total FROM person')),
    db.query<PersonList['personen'][number]>(
      `SELECT p.slug, p.vorname, p.nachname, p.image,
              (SELECT count(*)::int FROM werk w WHERE w.person_id = p.id) AS werke
         FROM person p
        ORDER BY p.nachname, p.vorname, p.id
        LIMIT $1 OFFSET $2`,
      [pageSize, offset],
      { name: 'personen-page' },
    ),
  ]);
  const total = count?.total ?? 0;

  return {
    path: pagePath(offset),
    title: offset === 0 ? 'Persons' : `Persons from ${offset + 1}`,
    data: { total, offset, size: pageSize, ...pageLinks(offset, pageSize, total), personen },
  };
}

/** Creates a person: 201 with Location /person/<id> (SEED.md: the new path ends in an id). */
export async function POST(req: ScriptRequest): Promise<Outcome> {
  return orFormAgain(req, async () => {
    const { requester, body } = await beginChange(req, { back: '/personen/neu', bodyRequired: true });
    if (requester.role !== 'librarian') throw librariansOnly('create persons', '/personen/neu');
    const { input, errors } = readPerson(body!, { creating: true, site: req.link('') });
    rejectInvalid(errors, 'The person was not created');
    const person = await insertPerson(req.db, { ...input, username: input.username as string });
    if (body?.type === 'form') return new Redirect(`/person/${person.slug}`, 303);
    return {
      path: `/person/${person.slug}`, title: `${person.vorname} ${person.nachname}`, data: person,
      status: 201, location: `/person/${person.id}`, view: personView, cacheControl: 'private, no-store',
    };
  }, (failure) => {
    const page = newPersonPage({ ...failure, values: Object.fromEntries(failure.fields) });
    return formDocument(page, { path: '/personen/neu', title: page.heading, template: 'person-neu', status: failure.status });
  });
}

export function pagePath(offset: number): string {
  return offset === 0 ? '/personen' : `/personen?offset=${offset}`;
}

function pageLink(offset: number | null, link: LinkFn): string | null {
  return offset === null ? null : link(pagePath(offset));
}

export function toJson(list: PersonList, link: LinkFn) {
  return {
    total: list.total,
    offset: list.offset,
    limit: list.size,
    url: link(pagePath(list.offset)),
    previous: pageLink(list.previous, link),
    next: pageLink(list.next, link),
    person: list.personen.map((p) => ({ vorname: p.vorname, nachname: p.nachname, werke: p.werke, url: link(`/person/${p.slug}`) })),
  };
}

export function toXml(list: PersonList, link: LinkFn) {
  const previous = pageLink(list.previous, link);
  const next = pageLink(list.next, link);
  return {
    personen: {
      '@_ref': link(pagePath(list.offset)),
      '@_total': list.total,
      '@_offset': list.offset,
      '@_limit': list.size,
      ...(previous ? { previous: { '@_ref': previous } } : {}),
      ...(next ? { next: { '@_ref': next } } : {}),
      person: list.personen.map((p) => ({
        '@_ref': link(`/person/${p.slug}`), '@_werke': p.werke, vorname: p.vorname, nachname: p.nachname,
      })),
    },
  };
}
