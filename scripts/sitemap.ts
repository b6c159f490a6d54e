// The sitemap (sitemaps.org): every person and every work at its HTML address, with its XML and
// JSON twins as xhtml:link alternates and its last change. Up to 50,000 addresses in one file at
// /sitemap.xml; beyond, /sitemap.xml is an index of parts (?personen=N, ?werke=N), each the
// persons or works of one range of 50,000 ids. Each file is written as it is read, 5,000 rows
// at a time, so neither the server nor the database holds a whole part.
import type { LinkFn, ScriptRequest } from '../lib/page/index.ts';
import { HttpError, readNonNegativeInteger, Streamed } from '../lib/page/index.ts';

/** The protocol's limit of addresses per file; a part covers this many ids. */
const perFile = 50_000;
const batch = 5_000;
const xmlType = 'application/xml; charset=utf-8';

/** /sitemap.xml: XML only. */
export const only = { format: 'xml', type: xmlType } as const;

type Kind = 'personen' | 'werke';

export async function GET({ query, db, link }: ScriptRequest): Promise<Streamed> {
  const part = (['personen', 'werke'] as const).filter((kind) => query.has(kind));
  if (part.length > 1) throw new HttpError(400, 'A sitemap part is either personen=N or werke=N.');
  const [row] = await db.query<{ personen: number | null; werke: number | null }>(
    'SELECT (SELECT max(id) FROM person) AS personen, (SELECT max(id) FROM werk) AS werke',
  );
  const last = { personen: row?.personen ?? 0, werke: row?.werke ?? 0 };
  const kind = part[0];
  if (kind) {
    const n = readNonNegativeInteger(query, kind, 0);
    if (n < 1 || (n - 1) * perFile >= Math.max(last[kind], 1)) throw new HttpError(404, `There is no sitemap part ${kind}=${n}.`);
    return new Streamed(xmlType, () => urlSet(db, link, [[kind, (n - 1) * perFile, n * perFile]]));
  }
  // Ids are handed out one after the other: at most as many rows as the largest id.
  if (last.personen + last.werke <= perFile) {
    return new Streamed(xmlType, () => urlSet(db, link, [['personen', 0, last.personen], ['werke', 0, last.werke]]));
  }
  return new Streamed(xmlType, () => sitemapIndex(link, last));
}

async function* sitemapIndex(link: LinkFn, last: Record<Kind, number>): AsyncIterable<string> {
  yield '<?xml version="1.0" encoding="UTF-8"?>\n<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n';
  for (const kind of ['personen', 'werke'] as const) {
    for (let n = 1; (n - 1) * perFile < last[kind]; n++) yield `  <sitemap><loc>${link(`/sitemap.xml?${kind}=${n}`)}</loc></sitemap>\n`;
  }
  yield '</sitemapindex>\n';
}

/** The addresses of the persons or works with ids in (from, to], for each range, read in batches by id. */
async function* urlSet(db: ScriptRequest['db'], link: LinkFn, ranges: [Kind, number, number][]): AsyncIterable<string> {
  yield '<?xml version="1.0" encoding="UTF-8"?>\n' +
    '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:xhtml="http://www.w3.org/1999/xhtml">\n';
  for (const [kind, from, to] of ranges) {
    const sql = kind === 'personen'
      ? `SELECT id, slug AS key, to_char(updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS changed
           FROM person WHERE id > $1 AND id <= $2 ORDER BY id LIMIT $3`
      : `SELECT id, id::text AS key, to_char(updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS changed
           FROM werk WHERE id > $1 AND id <= $2 ORDER BY id LIMIT $3`;
    const prefix = kind === 'personen' ? '/person/' : '/werk/';
    for (let after = from; after < to;) {
      const rows = await db.query<{ id: number; key: string; changed: string }>(sql, [after, to, batch]);
      if (rows.length === 0) break;
      let chunk = '';
      // Slugs are [a-z0-9-] and ids digits: nothing in an address needs escaping.
      for (const { key, changed } of rows) {
        const html = link(prefix + key);
        chunk += `  <url><loc>${html}</loc><lastmod>${changed}</lastmod>` +
          `<xhtml:link rel="alternate" type="application/xml" href="${html}.xml"/>` +
          `<xhtml:link rel="alternate" type="application/json" href="${html}.json"/></url>\n`;
      }
      yield chunk;
      after = (rows[rows.length - 1] as { id: number }).id;
    }
  }
  yield '</urlset>\n';
}
