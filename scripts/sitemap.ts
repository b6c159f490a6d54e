// The sitemap (sitemaps.org): every person and every work at its HTML address, with its XML and
// JSON twins as xhtml:link alternates and its last change. Up to 10,000 addresses in one file at
// /sitemap.xml; beyond, /sitemap.xml is an index of parts (?personen=N, ?werke=N), each the
// persons or works of one range of 10,000 ids: a few MB, written whole, then compressed and kept
// until the data changes as documents are (docs/interface.md, Feeds, sitemap and links).
import type { ApiFragment, LinkFn, ScriptRequest } from '../lib/page/index.ts';
import { HttpError, personsKey, readNonNegativeInteger, Verbatim, worksKey } from '../lib/page/index.ts';

/**
 * The ids a part covers: a fifth of the protocol's 50,000 addresses, so that making one costs
 * tens of milliseconds and keeping it about 3 MB (docs/performance.md, The sitemap).
 */
const perFile = 10_000;
const xmlType = 'application/xml; charset=utf-8';

/** /sitemap.xml: XML only. */
export const only = { format: 'xml', type: xmlType } as const;

// Each file depends on its part and the data alone: kept until persons or works change.
export const cacheable = true;

type Kind = 'personen' | 'werke';

/** Every part names persons and works, and their times of change. */
const keys = [personsKey, worksKey];

export async function GET({ query, db, link }: ScriptRequest): Promise<Verbatim> {
  const part = (['personen', 'werke'] as const).filter((kind) => query.has(kind));
  if (part.length > 1) throw new HttpError(400, 'A sitemap part is either personen=N or werke=N.');
  const [row] = await db.query<{ personen: number | null; werke: number | null }>(
    'SELECT (SELECT max(id) FROM person) AS personen, (SELECT max(id) FROM werk) AS werke',
  );
  const last = { personen: row?.personen ?? 0, werke: row?.werke ?? 0 };
  const kind = part[0];
  if (kind) {
    const n = readNonNegativeInteger(query, kind, 0);
    if (n < 1 || (n - 1) * perFile >= Math.max(last[kind], 1))
      throw new HttpError(404, `There is no sitemap part ${kind}=${n}.`);
    return new Verbatim(xmlType, await urlSet(db, link, [[kind, (n - 1) * perFile, n * perFile]]), keys);
  }
  // Ids are handed out one after the other: at most as many rows as the largest id.
  if (last.personen + last.werke <= perFile) {
    return new Verbatim(
      xmlType,
      await urlSet(db, link, [
        ['personen', 0, last.personen],
        ['werke', 0, last.werke],
      ]),
      keys,
    );
  }
  return new Verbatim(xmlType, sitemapIndex(link, last), keys);
}

function sitemapIndex(link: LinkFn, last: Record<Kind, number>): string {
  let text =
    '<?xml version="1.0" encoding="UTF-8"?>\n<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n';
  for (const kind of ['personen', 'werke'] as const) {
    for (let n = 1; (n - 1) * perFile < last[kind]; n++)
      text += `  <sitemap><loc>${link(`/sitemap.xml?${kind}=${n}`)}</loc></sitemap>\n`;
  }
  return text + '</sitemapindex>\n';
}

/** The addresses of the persons or works with ids in (from, to], for each range. */
async function urlSet(db: ScriptRequest['db'], link: LinkFn, ranges: [Kind, number, number][]): Promise<string> {
  const lines = [
    '<?xml version="1.0" encoding="UTF-8"?>\n' +
      '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:xhtml="http://www.w3.org/1999/xhtml">\n',
  ];
  for (const [kind, from, to] of ranges) {
    const sql =
      kind === 'personen'
        ? `SELECT slug AS key, to_char(updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS changed
           FROM person WHERE id > $1 AND id <= $2 ORDER BY id`
        : `SELECT id::text AS key, to_char(updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS changed
           FROM werk WHERE id > $1 AND id <= $2 ORDER BY id`;
    const prefix = kind === 'personen' ? '/person/' : '/werk/';
    // Slugs are [a-z0-9-] and ids digits: nothing in an address needs escaping.
    for (const { key, changed } of await db.query<{ key: string; changed: string }>(sql, [from, to])) {
      const html = link(prefix + key);
      lines.push(
        `  <url><loc>${html}</loc><lastmod>${changed}</lastmod>` +
          `<xhtml:link rel="alternate" type="application/xml" href="${html}.xml"/>` +
          `<xhtml:link rel="alternate" type="application/json" href="${html}.json"/></url>\n`,
      );
    }
  }
  lines.push('</urlset>\n');
  return lines.join('');
}

/** Its addresses in /openapi.json (lib/page/api-description.ts). */
export const api: ApiFragment = ({ params, notModified, problems }) => [
  {
    path: '/sitemap',
    query: [params.personen, params.werke],
    operations: {
      get: {
        summary:
          'The sitemap (sitemaps.org), or its index of parts beyond 10,000 addresses; usually asked for as /sitemap.xml.',
        responses: {
          200: {
            description: 'A urlset or a sitemapindex.',
            headers: { ETag: { $ref: '#/components/headers/ETag' } },
            content: { 'application/xml': { schema: { type: 'string' } } },
          },
          304: notModified,
          ...problems('400', '404'),
        },
      },
    },
  },
];
