// The start page: / and index.php. Says what the site holds and links the person list,
// the search and the newest works.
import type { ApiFragment, Document, LinkFn, ScriptRequest, View } from '../lib/page/index.ts';
import { personsKey, worksKey } from '../lib/page/index.ts';

export interface StartPage {
  personen: number;
  werke: number;
  neueste: { id: number; titel: string; person: string; slug: string }[];
}

// The page depends on the data alone: kept rendered until persons or works change.
export const cacheable = true;

export async function GET({ db, remember }: ScriptRequest): Promise<Document<StartPage>> {
  // Counting a million works takes a while; the counts hold until the data changes.
  const [[counts], neueste] = await Promise.all([
    remember('index:counts', () =>
      db.query<{ personen: number; werke: number }>(
        'SELECT (SELECT count(*)::int FROM person) AS personen, (SELECT count(*)::int FROM werk) AS werke',
      ),
    ),
    db.query<StartPage['neueste'][number]>(
      `SELECT w.id, w.titel, p.vorname || ' ' || p.nachname AS person, p.slug
         FROM werk w JOIN person p ON p.id = w.person_id
        ORDER BY w.id DESC LIMIT 5`,
    ),
  ]);
  const data = { personen: counts?.personen ?? 0, werke: counts?.werke ?? 0, neueste };
  const description = `Persons and their works: ${data.personen} persons with ${data.werke} works, each in HTML, XML and JSON. Search names and titles, or see the newest works.`;
  return { path: '/', title: 'Portfolio', description, data, keys: [personsKey, worksKey] };
}

function toJson(start: StartPage, link: LinkFn) {
  return {
    titel: 'Portfolio',
    url: link('/'),
    personen: { anzahl: start.personen, url: link('/personen') },
    werke: { anzahl: start.werke },
    suche: link('/search'),
    neueste: start.neueste.map((w) => ({
      titel: w.titel,
      url: link(`/werk/${w.id}`),
      person: { name: w.person, url: link(`/person/${w.slug}`) },
    })),
  };
}

function toXml(start: StartPage, link: LinkFn) {
  return {
    portfolio: {
      '@_ref': link('/'),
      personen: { '@_ref': link('/personen'), '@_anzahl': start.personen },
      werke: { '@_anzahl': start.werke },
      suche: { '@_ref': link('/search') },
      neueste: {
        werk: start.neueste.map((w) => ({
          '@_ref': link(`/werk/${w.id}`),
          titel: w.titel,
          person: { '@_ref': link(`/person/${w.slug}`), '#text': w.person },
        })),
      },
    },
  };
}

/** Its addresses in /openapi.json (lib/page/api-description.ts); /index is the same page. */
export const api: ApiFragment = ({ ok, notModified }) => {
  const operations = {
    get: {
      summary: 'The start page: counts, the newest works, where to search.',
      responses: { 200: ok('The start page.', 'index'), 304: notModified },
    },
  };
  return [
    { path: '/', operations },
    { path: '/index', operations },
  ];
};

export const view: View = { template: 'index', toJson, toXml };
