// The person list: /personen and personen.php, 50 a page, with the total and the
// neighbouring pages (offset, 0-based). A librarian POSTs here to create a person.
import type { ApiFragment, Document, LinkFn, Outcome, ScriptRequest, View } from '../lib/page/index.ts';
import {
  change,
  formAgain,
  formDocument,
  insertPerson,
  librariansOnly,
  newPersonPage,
  pageLinks,
  pagingOf,
  personsKey,
  personView,
  pictureIn,
  readNonNegativeInteger,
  readPerson,
  rejectInvalid,
  touched,
} from '../lib/page/index.ts';

export interface PersonList {
  total: number;
  offset: number;
  size: number;
  previous: number | null;
  next: number | null;
  /** image: the small picture the list shows (an uploaded one in its 160 px width). */
  personen: { slug: string; vorname: string; nachname: string; image: string; werke: number }[];
}

const pageSize = 50;

/** Where a page begins: its first person's place in the list order. */
interface PageStart {
  nachname: string;
  vorname: string;
  id: number;
}

// Each page depends on its offset and the data alone: kept rendered until persons or works change.
export const cacheable = true;

export async function GET({ query, db, remember }: ScriptRequest): Promise<Document<PersonList>> {
  const offset = readNonNegativeInteger(query, 'offset', 0);

  // The first person of every page, remembered until the data changes: a page is read from its
  // first person on (a keyset), not counted out from the start of the list, so a deep page costs
  // what the first does (docs/interface.md, Person list).
  const [[count], starts] = await Promise.all([
    remember('personen:total', () => db.query<{ total: number }>('SELECT count(*)::int AS total FROM person')),
    remember('personen:starts', () =>
      db.query<PageStart>(
        `SELECT nachname, vorname, id
         FROM (SELECT nachname, vorname, id, row_number() OVER (ORDER BY nachname, vorname, id) AS n FROM person) AS ranked
        WHERE n % $1 = 1
        ORDER BY n`,
        [pageSize],
      ),
    ),
  ]);
  const start = starts[Math.floor(offset / pageSize)];
  // Works are counted for the page's persons only, once the page is taken.
  const rows =
    start === undefined
      ? []
      : await db.query<PersonList['personen'][number]>(
          `SELECT p.slug, p.vorname, p.nachname, p.image,
            (SELECT count(*)::int FROM werk w WHERE w.person_id = p.id) AS werke
       FROM (SELECT id, slug, vorname, nachname, image FROM person
              WHERE (nachname, vorname, id) >= ($1, $2, $3)
              ORDER BY nachname, vorname, id
              LIMIT $4 OFFSET $5) AS p
      ORDER BY p.nachname, p.vorname, p.id`,
          [start.nachname, start.vorname, start.id, pageSize, offset % pageSize],
          { name: 'personen-page' },
        );
  const total = count?.total ?? 0;

  return {
    path: pagePath(offset),
    title: offset === 0 ? 'Persons' : `Persons from ${offset + 1}`,
    keys: [personsKey],
    description:
      (offset === 0 && total <= pageSize) || offset >= total
        ? `The ${total} persons of the portfolio by last name, each with the number of their works.`
        : `Persons ${offset + 1} to ${Math.min(offset + pageSize, total)} of the ${total} of the portfolio by last name, each with the number of their works.`,
    data: {
      total,
      offset,
      size: pageSize,
      ...pageLinks(offset, pageSize, total),
      personen: rows.map((p) => ({ ...p, image: pictureIn(p.image, 160) })),
    },
    pages: pagingOf(offset, pageSize, total, pagePath),
  };
}

/** Creates a person: 201 with Location /person/<id> (the new resource's path ends in its id). */
export async function POST(req: ScriptRequest): Promise<Outcome> {
  return change(
    req,
    { back: '/personen/neu' },
    async ({ requester, body }) => {
      if (requester.role !== 'librarian') throw librariansOnly('create persons');
      const { input, errors } = readPerson(body, { creating: true, site: req.link('') });
      rejectInvalid(errors, 'The person was not created');
      const person = await insertPerson(req.db, { ...input, username: input.username as string });
      const path = `/person/${person.slug}`;
      return {
        then: path,
        document: {
          path,
          title: `${person.vorname} ${person.nachname}`,
          data: person,
          status: 201,
          location: `/person/${person.id}`,
          view: personView,
        },
        touched: touched.newPerson(),
      };
    },
    (failure) =>
      formDocument(
        newPersonPage(formAgain(failure, Object.fromEntries(failure.fields))),
        '/personen/neu',
        failure.status,
      ),
  );
}

export function pagePath(offset: number): string {
  return offset === 0 ? '/personen' : `/personen?offset=${offset}`;
}

function pageLink(offset: number | null, link: LinkFn): string | null {
  return offset === null ? null : link(pagePath(offset));
}

function toJson(list: PersonList, link: LinkFn) {
  return {
    total: list.total,
    offset: list.offset,
    limit: list.size,
    url: link(pagePath(list.offset)),
    previous: pageLink(list.previous, link),
    next: pageLink(list.next, link),
    person: list.personen.map((p) => ({
      vorname: p.vorname,
      nachname: p.nachname,
      werke: p.werke,
      url: link(`/person/${p.slug}`),
    })),
  };
}

function toXml(list: PersonList, link: LinkFn) {
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
        '@_ref': link(`/person/${p.slug}`),
        '@_werke': p.werke,
        vorname: p.vorname,
        nachname: p.nachname,
      })),
    },
  };
}

/** Its addresses in /openapi.json (lib/page/api-description.ts). */
export const api: ApiFragment = ({ params, ok, notModified, problems, body, changing, created, seeOther, formOf }) => [
  {
    path: '/personen',
    query: [params.offset],
    operations: {
      get: {
        summary: 'The persons, 50 a page, by name.',
        responses: { 200: ok('A page of the person list.', 'personen'), 304: notModified },
      },
      post: {
        summary: 'Creates a person (librarians).',
        ...changing,
        requestBody: body('NewPersonInput', formOf('NewPersonInput')),
        responses: { 201: created('person', 'person'), 303: seeOther, ...problems('400', '403', '415', '422') },
      },
    },
  },
];

export const view: View = { template: 'personen', toJson, toXml };
