// The newest works as an Atom feed (RFC 4287): the site's at /feed, a person's at
// /person/<slug>/feed (feed.php?slug=… or ?pid=…). Each entry is a work, newest first.
import type { ApiFragment, Document, LinkFn, ScriptRequest, View } from '../lib/page/index.ts';
import { personKey, readPersonKey, resolvePerson, worksKey } from '../lib/page/index.ts';

interface Entry {
  id: number;
  titel: string;
  jahr: number | null;
  art: string;
  beschreibung: string;
  created: string;
  updated: string;
  slug: string;
  name: string;
}

interface Feed {
  /** The feed's own path, and the page it is the feed of. */
  path: string;
  page: string;
  title: string;
  entries: Entry[];
}

const size = 50;

/** The feed is XML only, as Atom. */
export const only = { format: 'xml', type: 'application/atom+xml; charset=utf-8' } as const;

// It depends on the data alone: kept rendered until persons or works change.
export const cacheable = true;

export async function GET({ query, db }: ScriptRequest): Promise<Document<Feed>> {
  const columns = `w.id, w.titel, w.jahr, w.art, w.beschreibung,
    to_char(w.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS created,
    to_char(w.updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS updated,
    p.slug, p.vorname || ' ' || p.nachname AS name`;
  if (!query.has('slug') && !query.has('pid')) {
    // Newest by id, which follows creation: the primary key's index, however many works there are.
    const entries = await db.query<Entry>(
      `SELECT ${columns} FROM werk w JOIN person p ON p.id = w.person_id ORDER BY w.id DESC LIMIT $1`,
      [size],
    );
    return {
      path: '/feed',
      title: 'Newest works',
      data: { path: '/feed', page: '/', title: 'Portfolio: newest works', entries },
      keys: [worksKey],
    };
  }
  const person = await resolvePerson(db, readPersonKey(query, 'feed.php'), { method: 'GET', rest: '/feed' });
  const entries = await db.query<Entry>(
    `SELECT ${columns} FROM werk w JOIN person p ON p.id = w.person_id WHERE w.person_id = $1 ORDER BY w.id DESC LIMIT $2`,
    [person.id, size],
  );
  const path = `/person/${person.slug}/feed`;
  const name = `${person.vorname} ${person.nachname}`;
  return {
    path,
    title: `Works of ${name}`,
    data: { path, page: `/person/${person.slug}`, title: `Portfolio: works of ${name}`, entries },
    keys: [personKey(person.id)],
  };
}

function toXml(feed: Feed, link: LinkFn) {
  // The newest change of an entry; an empty feed has not changed since the epoch.
  const updated = feed.entries.reduce((newest, e) => (e.updated > newest ? e.updated : newest), '1970-01-01T00:00:00Z');
  return {
    feed: {
      '@_xmlns': 'http://www.w3.org/2005/Atom',
      id: link(feed.path),
      title: feed.title,
      updated,
      link: [
        { '@_rel': 'self', '@_type': 'application/atom+xml', '@_href': link(feed.path) },
        { '@_rel': 'alternate', '@_type': 'text/html', '@_href': link(feed.page) },
      ],
      author: { name: 'Portfolio', uri: link('/') },
      generator: { '@_uri': link('/'), '#text': 'Portfolio' },
      entry: feed.entries.map((e) => ({
        id: link(`/werk/${e.id}`),
        title: e.titel,
        updated: e.updated,
        published: e.created,
        link: [
          { '@_rel': 'alternate', '@_type': 'text/html', '@_href': link(`/werk/${e.id}`) },
          { '@_rel': 'alternate', '@_type': 'application/json', '@_href': link(`/werk/${e.id}.json`) },
          { '@_rel': 'alternate', '@_type': 'application/xml', '@_href': link(`/werk/${e.id}.xml`) },
        ],
        author: { name: e.name, uri: link(`/person/${e.slug}`) },
        category: e.art ? { '@_term': e.art } : undefined,
        summary:
          [e.jahr === null ? null : String(e.jahr), e.art || null, e.beschreibung || null]
            .filter(Boolean)
            .join(' · ') || undefined,
      })),
    },
  };
}

/** Its addresses in /openapi.json (lib/page/api-description.ts). */
export const api: ApiFragment = ({ params, notModified, problems, movedPermanently, atom }) => [
  {
    path: '/feed',
    operations: { get: { summary: 'The 50 newest works.', responses: { 200: atom, 304: notModified } } },
  },
  {
    path: '/person/{person}/feed',
    pathParams: [params.person],
    operations: {
      get: {
        summary: "A person's 50 newest works.",
        responses: { 200: atom, 301: movedPermanently, 304: notModified, ...problems('404', '410') },
      },
    },
  },
];

export const view: View = { template: 'feed', toXml };
