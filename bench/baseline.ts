// The benchmark's yardsticks: a person server written by hand with node:http and pg and string
// templates, giving the same person documents as the product in JSON, XML and HTML, plus the
// person list and single-term search in JSON. No rewrite table, no negotiation, no logs: what the
// product's runtime costs is measured against this.
//
// Two styles (BASELINE_STYLE): `strong` (the default) is what a skilled developer would write for
// speed, one prepared statement per person page (the person and their works in one join);
// `reference` is the first yardstick, two unprepared statements per page, kept so that figures
// measured against it can still be compared. BASELINE_WORKERS=2 runs it as a plain node:cluster
// (the primary hands connections to the workers in turn), against the product's WEB_CONCURRENCY=2.
import cluster from 'node:cluster';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';

/** A statement; with a name it is prepared once per connection (node-postgres named statements). */
export type QueryFn = <R>(sql: string, params: unknown[], name?: string) => Promise<R[]>;

export type BaselineStyle = 'strong' | 'reference';

interface Person {
  id: number;
  slug: string;
  vorname: string;
  nachname: string;
  username: string;
  image: string;
}
interface Werk {
  id: number;
  titel: string;
}

const personRoute = /^\/person\/([a-z0-9-]*[a-z][a-z0-9-]*)\.(json|xml|html)$/;
const types = {
  json: 'application/json; charset=utf-8',
  xml: 'application/xml; charset=utf-8',
  html: 'text/html; charset=utf-8',
};

export function createBaseline(query: QueryFn, style: BaselineStyle = 'strong'): http.RequestListener {
  return (req, res) => {
    route(query, req, style).then(
      ([status, type, body]) => {
        res.writeHead(status, { 'content-type': type, 'content-length': Buffer.byteLength(body) });
        res.end(body);
      },
      (err: Error) => {
        res.writeHead(500, { 'content-type': 'text/plain' });
        res.end(err.message);
      },
    );
  };
}

/** The person of a slug and their works by title, or null. */
async function findPerson(query: QueryFn, slug: string, style: BaselineStyle): Promise<[Person, Werk[]] | null> {
  if (style === 'reference') {
    const [row] = await query<Person>(
      'SELECT id, slug, vorname, nachname, username, image FROM person WHERE slug = $1',
      [slug],
    );
    if (!row) return null;
    return [row, await query<Werk>('SELECT id, titel FROM werk WHERE person_id = $1 ORDER BY titel, id', [row.id])];
  }
  const rows = await query<Person & { wid: number | null; titel: string | null }>(
    `SELECT p.id, p.slug, p.vorname, p.nachname, p.username, p.image, w.id AS wid, w.titel
       FROM person p LEFT JOIN werk w ON w.person_id = p.id
      WHERE p.slug = $1 ORDER BY w.titel, w.id`,
    [slug],
    'baseline-person',
  );
  const first = rows[0];
  if (!first) return null;
  const { wid: _wid, titel: _titel, ...row } = first;
  return [row, rows.flatMap((r) => (r.wid === null ? [] : [{ id: r.wid, titel: r.titel as string }]))];
}

async function route(
  query: QueryFn,
  req: http.IncomingMessage,
  style: BaselineStyle,
): Promise<[number, string, string]> {
  const url = new URL(req.url ?? '/', `http://${req.headers.host}`);
  const origin = url.origin;
  const person = personRoute.exec(url.pathname);
  if (person) {
    const format = person[2] as keyof typeof types;
    const found = await findPerson(query, person[1] as string, style);
    if (!found) return [404, 'text/plain', 'not found'];
    const [row, werke] = found;
    const body =
      format === 'json'
        ? personJson(row, werke, origin)
        : format === 'xml'
          ? personXml(row, werke, origin)
          : personHtml(row, werke, origin);
    return [200, types[format], body];
  }
  if (url.pathname === '/personen.json')
    return [200, types.json, await listJson(query, Number(url.searchParams.get('offset') ?? 0), origin)];
  if (url.pathname === '/search.json') {
    const condition = url.searchParams.get('query') ?? '';
    return [
      200,
      types.json,
      await (process.env.BASELINE_SEARCH === 'fts'
        ? ftsSearchJson(query, condition, origin)
        : searchJson(query, condition, origin)),
    ];
  }
  return [404, 'text/plain', 'not found'];
}

const imageUrl = (p: Person, origin: string) => (p.image.startsWith('/') ? origin + p.image : p.image);

function personJson(p: Person, werke: Werk[], origin: string): string {
  const werk = werke.map(
    (w) => `    {\n      "titel": ${JSON.stringify(w.titel)},\n      "url": "${origin}/werk/${w.id}"\n    }`,
  );
  return (
    `{\n  "image": ${JSON.stringify(imageUrl(p, origin))},\n  "vorname": ${JSON.stringify(p.vorname)},\n  "nachname": ${JSON.stringify(p.nachname)},\n` +
    `  "werk": ${werk.length ? `[\n${werk.join(',\n')}\n  ]` : '[]'}\n}\n`
  );
}

const xmlEntities: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' };
const xml = (s: string) => s.replace(/[&<>"']/g, (c) => xmlEntities[c] as string);

function personXml(p: Person, werke: Werk[], origin: string): string {
  const werk = werke.map((w) => `    <werk ref="${origin}/werk/${w.id}">${xml(w.titel)}</werk>\n`).join('');
  return (
    `<?xml version="1.0" encoding="UTF-8"?>\n<person>\n  <image ref="${xml(imageUrl(p, origin))}"/>\n` +
    `  <vorname>${xml(p.vorname)}</vorname>\n  <nachname>${xml(p.nachname)}</nachname>\n  <username>${xml(p.username)}</username>\n` +
    (werke.length ? `  <werke>\n${werk}  </werke>\n` : '  <werke/>\n') +
    '</person>\n'
  );
}

const htmlEntities: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&#34;', "'": '&#39;' };
const html = (s: string) => s.replace(/[&<>"']/g, (c) => htmlEntities[c] as string);

function personHtml(p: Person, werke: Werk[], origin: string): string {
  const name = `${html(p.vorname)} ${html(p.nachname)}`;
  const self = `${origin}/person/${p.slug}`;
  const items = werke.map((w) => `  <li><a href="werk/${w.id}">${html(w.titel)}</a></li>\n`).join('');
  const ld = JSON.stringify({
    '@context': 'https://schema.org',
    '@type': 'Person',
    '@id': self,
    url: self,
    name: `${p.vorname} ${p.nachname}`,
    givenName: p.vorname,
    familyName: p.nachname,
    image: new URL(p.image, `${origin}/`).href,
    '@reverse': {
      creator: werke.map((w) => ({ '@type': 'CreativeWork', '@id': `${origin}/werk/${w.id}`, name: w.titel })),
    },
  }).replace(/</g, '\\u003c');
  // The meta description: the name, the number of works and the first three titles, on one line, at most 160 characters.
  const titles =
    werke.length === 0
      ? ''
      : `: ${werke
          .slice(0, 3)
          .map((w) => w.titel)
          .join(' · ')}${werke.length > 3 ? ' · …' : ''}`;
  const summary =
    `${p.vorname} ${p.nachname} has ${werke.length === 1 ? '1 work' : `${werke.length} works`} in the portfolio${titles}.`
      .replace(/\s+/g, ' ')
      .trim();
  const description = html(summary.length <= 160 ? summary : `${summary.slice(0, 160)}…`);
  return (
    `<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n<meta name="viewport" content="width=device-width, initial-scale=1">\n` +
    `<title>${name} · Portfolio</title>\n<meta name="description" content="${description}">\n<base href="/">\n<link rel="stylesheet" href="css/site.css">\n` +
    `<link rel="icon" href="favicon.ico" sizes="16x16 32x32">\n<script src="js/site.js" defer></script>\n<link rel="canonical" href="${self}">\n` +
    `<link rel="alternate" type="application/xml" href="${self}.xml">\n<link rel="alternate" type="application/json" href="${self}.json">\n` +
    `<link rel="alternate" type="application/atom+xml" title="Newest works" href="feed">\n` +
    `<link rel="alternate" type="application/atom+xml" title="Newest works of ${name}" href="person/${p.slug}/feed">\n</head>\n<body>\n` +
    `<a class="skip" href="${self}#main">Skip to content</a>\n` +
    `<header class="site">\n  <a class="brand" href="./">Portfolio</a>\n  <nav aria-label="Main">\n    <a href="personen">Persons</a>\n    <a href="search">Search</a>\n  </nav>\n` +
    `  <details class="account" hidden>\n    <summary><span class="who"><span class="as">Logged in as </span><strong data-me="name"></strong></span></summary>\n` +
    `    <div class="menu">\n      <a data-me="loans" rel="nofollow" href="login">My loans</a>\n      <form method="post" action="logout" data-me="logout" hidden>\n` +
    `        <input type="hidden" name="csrf_token" value="">\n        <button type="submit">Log out</button>\n      </form>\n    </div>\n  </details>\n` +
    `  <a class="login" rel="nofollow" href="login">Log in</a>\n</header>\n<main id="main" tabindex="-1">\n\n\n` +
    `<article class="person">\n<h1>details of a person</h1>\n<h2 class="name">${name}</h2>\n<img class="portrait" src="${html(p.image)}" alt="Picture of ${name}" width="240" height="240">\n` +
    `<p>${name} has ${werke.length} ${werke.length === 1 ? 'work' : 'works'} in the database; user name ${html(p.username)}.</p>\n<ul class="werke">\n${items}</ul>\n` +
    `<p class="edit" data-may="person/${p.slug}" hidden><a rel="nofollow" href="person/${p.slug}/bearbeiten">Edit</a> · <a rel="nofollow" href="person/${p.slug}/bild">Change the picture</a> · <a rel="nofollow" href="person/${p.slug}/werke/neu">Add a work</a> · <a rel="nofollow" href="person/${p.slug}/loeschen">Delete</a></p>\n` +
    `<p class="back"><a href="personen">All persons</a></p>\n</article>\n<script type="application/ld+json">${ld}</script>\n</main>\n<footer class="site">\n` +
    `  <p>This page as <a href="${self}.html" type="text/html">HTML</a> · <a href="${self}.xml" type="application/xml">XML</a> · <a href="${self}.json" type="application/json">JSON</a></p>\n` +
    '</footer>\n</body>\n</html>\n\n'
  );
}

async function listJson(query: QueryFn, offset: number, origin: string): Promise<string> {
  const [[count], rows] = await Promise.all([
    query<{ total: number }>('SELECT count(*)::int AS total FROM person', []),
    query<{ slug: string; vorname: string; nachname: string; werke: number }>(
      `SELECT p.slug, p.vorname, p.nachname, (SELECT count(*)::int FROM werk w WHERE w.person_id = p.id) AS werke
         FROM person p ORDER BY p.nachname, p.vorname, p.id LIMIT 50 OFFSET $1`,
      [offset],
    ),
  ]);
  const total = count?.total ?? 0;
  const page = (at: number) => `${origin}/personen${at === 0 ? '' : `?offset=${at}`}`;
  return (
    JSON.stringify(
      {
        total,
        offset,
        limit: 50,
        url: page(offset),
        previous: offset === 0 ? null : page(Math.max(0, Math.min(offset - 50, Math.floor((total - 1) / 50) * 50))),
        next: offset + 50 < total ? page(offset + 50) : null,
        person: rows.map((r) => ({
          vorname: r.vorname,
          nachname: r.nachname,
          werke: r.werke,
          url: `${origin}/person/${r.slug}`,
        })),
      },
      null,
      2,
    ) + '\n'
  );
}

/**
 * The peer of the product's search that a user would pick instead: PostgreSQL's full-text search
 * done well (BASELINE_SEARCH=fts). Tables of their own (bench/search.ts makes them: ftsSetup):
 * a tsvector per work of its title (weight A), creator (B), type and description (C), and per
 * person of the name, in a configuration with German stemming and unaccent, each under a GIN
 * index. A search of one any,contains line takes the first 1,000 hits of each kind as the product
 * does (SEARCH_MAX_HITS), ranks them with ts_rank_cd, counts the type, decade and creator facets
 * over them, and gives the first page of ten with their rows, in one statement.
 */
export const ftsSetup = [
  'CREATE EXTENSION IF NOT EXISTS unaccent',
  `DO $$ BEGIN
     IF NOT EXISTS (SELECT 1 FROM pg_ts_config WHERE cfgname = 'bench_de') THEN
       CREATE TEXT SEARCH CONFIGURATION bench_de (COPY = german);
       ALTER TEXT SEARCH CONFIGURATION bench_de ALTER MAPPING FOR hword, hword_part, word WITH unaccent, german_stem;
     END IF;
   END $$`,
  `CREATE TABLE IF NOT EXISTS bench_fts_werk AS
     SELECT w.id, w.person_id, w.art, w.jahr,
            setweight(to_tsvector('bench_de', w.titel), 'A') || setweight(to_tsvector('bench_de', coalesce(w.urheber, '')), 'B') ||
            setweight(to_tsvector('bench_de', coalesce(w.art, '') || ' ' || coalesce(w.beschreibung, '')), 'C') AS fts
       FROM werk w`,
  'CREATE INDEX IF NOT EXISTS bench_fts_werk_fts ON bench_fts_werk USING gin (fts) WITH (fastupdate = off)',
  `CREATE TABLE IF NOT EXISTS bench_fts_person AS
     SELECT p.id, to_tsvector('bench_de', p.vorname || ' ' || p.nachname) AS fts FROM person p`,
  'CREATE INDEX IF NOT EXISTS bench_fts_person_fts ON bench_fts_person USING gin (fts) WITH (fastupdate = off)',
  'VACUUM (ANALYZE) bench_fts_werk',
  'VACUUM (ANALYZE) bench_fts_person',
];

async function ftsSearchJson(query: QueryFn, condition: string, origin: string): Promise<string> {
  const [field = '', match = '', ...rest] = condition.split(',');
  const term = rest.join(',');
  if (field !== 'any' || match !== 'contains')
    return JSON.stringify({ error: 'the full-text peer answers any,contains,<words> only' });
  const [found] = await query<{
    total: number;
    hits: Hit[] | null;
    rtype: Facet[] | null;
    decade: Facet[] | null;
    creator: Facet[] | null;
  }>(
    `WITH q AS (SELECT plainto_tsquery('bench_de', $1) AS q),
     werke AS (SELECT f.id, f.person_id, f.art, f.jahr, ts_rank_cd(f.fts, q.q) AS rank
                 FROM bench_fts_werk f, q WHERE f.fts @@ q.q LIMIT 1000),
     personen AS (SELECT f.id, ts_rank_cd(f.fts, q.q) AS rank FROM bench_fts_person f, q WHERE f.fts @@ q.q LIMIT 1000),
     top AS (SELECT * FROM (SELECT 'person' AS typ, id, rank FROM personen UNION ALL SELECT 'werk', id, rank FROM werke) h
              ORDER BY rank DESC, typ, id LIMIT 10)
     SELECT (SELECT count(*) FROM personen)::int + (SELECT count(*) FROM werke)::int AS total,
            (SELECT json_agg(json_build_object('typ', t.typ, 'id', t.id, 'rank', t.rank,
                       'titel', coalesce(w.titel, p.vorname || ' ' || p.nachname), 'slug', coalesce(wp.slug, p.slug), 'person', w.urheber)
                     ORDER BY t.rank DESC, t.typ, t.id)
               FROM top t LEFT JOIN werk w ON t.typ = 'werk' AND w.id = t.id LEFT JOIN person wp ON wp.id = w.person_id
                          LEFT JOIN person p ON t.typ = 'person' AND p.id = t.id) AS hits,
            (SELECT json_agg(f) FROM (SELECT art AS value, count(*)::int AS count FROM werke WHERE art IS NOT NULL GROUP BY art ORDER BY count DESC, art LIMIT 20) f) AS rtype,
            (SELECT json_agg(f) FROM (SELECT (jahr / 10 * 10)::text AS value, count(*)::int AS count FROM werke WHERE jahr IS NOT NULL GROUP BY 1 ORDER BY count DESC, 1 LIMIT 20) f) AS decade,
            (SELECT json_agg(f) FROM (SELECT p.vorname || ' ' || p.nachname AS value, count(*)::int AS count FROM werke w JOIN person p ON p.id = w.person_id
                                        GROUP BY p.id ORDER BY count DESC, value LIMIT 20) f) AS creator`,
    [term],
    'fts-search',
  );
  return (
    JSON.stringify(
      {
        query: [condition],
        total: found?.total ?? 0,
        offset: 0,
        limit: 10,
        treffer: (found?.hits ?? []).map((h) => ({
          typ: h.typ,
          titel: h.titel,
          url: h.typ === 'person' ? `${origin}/person/${h.slug}` : `${origin}/werk/${h.id}`,
          rank: h.rank,
        })),
        facets: { rtype: found?.rtype ?? [], decade: found?.decade ?? [], creator: found?.creator ?? [] },
      },
      null,
      2,
    ) + '\n'
  );
}

interface Hit {
  typ: string;
  id: number;
  rank: number;
  titel: string;
  slug: string;
  person: string | null;
}
interface Facet {
  value: string;
  count: number;
}

// The site's former search (substrings of names and titles) for one any|title condition in the
// default scope, first page: the baseline of the search cases, and what old links found.
async function searchJson(query: QueryFn, condition: string, origin: string): Promise<string> {
  const [field = '', match = '', ...rest] = condition.split(',');
  const term = rest.join(',');
  if (!['any', 'title'].includes(field) || !['contains', 'begins_with'].includes(match)) {
    return JSON.stringify({ error: 'the baseline answers any|title,contains|begins_with,<term> only' });
  }
  const like = term.replace(/[\\%_]/g, '\\$&');
  const name = `(p.vorname || ' ' || p.nachname)`;
  const test = (column: string) =>
    match === 'begins_with' ? `${column} ILIKE $1 || '%'` : `${column} ILIKE '%' || $1 || '%'`;
  const byCreator = `w.person_id = ANY (ARRAY(SELECT p.id FROM person p WHERE ${test(name)}))`;
  const rows = await query<{
    typ: string;
    id: number;
    titel: string;
    slug: string;
    person: string | null;
    total: number;
  }>(
    `SELECT typ, id, titel, slug, person, count(*) OVER ()::int AS total FROM (
       SELECT 'person' AS typ, 0 AS rank, p.id, ${name} AS titel, p.slug, NULL AS person, p.nachname AS sort1, p.vorname AS sort2
         FROM person p WHERE ${field === 'title' ? 'false' : test(name)}
       UNION ALL
       SELECT 'werk' AS typ, 1 AS rank, w.id, w.titel, p.slug, ${name} AS person, w.titel AS sort1, '' AS sort2
         FROM werk w JOIN person p ON p.id = w.person_id WHERE ${field === 'title' ? test('w.titel') : `(${test('w.titel')} OR ${byCreator})`}
     ) AS hits ORDER BY rank, sort1, sort2, id LIMIT 10 OFFSET 0`,
    [like],
  );
  const total = rows[0]?.total ?? 0;
  const self = (offset: number) =>
    `${origin}/search?query=${encodeURIComponent(`${field},${match},${term}`).replace(/%2C/g, ',')}` +
    `&tab=default_tab&search_scope=default_scope&vid=portfolio${offset ? `&offset=${offset}` : ''}`;
  return (
    JSON.stringify(
      {
        query: [`${field},${match},${term}`],
        tab: 'default_tab',
        search_scope: 'default_scope',
        vid: 'portfolio',
        total,
        offset: 0,
        limit: 10,
        url: self(0),
        previous: null,
        next: total > 10 ? self(10) : null,
        treffer: rows.map((h) => ({
          typ: h.typ,
          titel: h.titel,
          url: h.typ === 'person' ? `${origin}/person/${h.slug}` : `${origin}/werk/${h.id}`,
          ...(h.typ === 'werk' ? { person: { name: h.person, url: `${origin}/person/${h.slug}` } } : {}),
        })),
      },
      null,
      2,
    ) + '\n'
  );
}

const workers = Number(process.env.BASELINE_WORKERS ?? 1);
if (
  process.argv[1] &&
  path.resolve(process.argv[1]) === fileURLToPath(import.meta.url) &&
  workers > 1 &&
  cluster.isPrimary
) {
  cluster.schedulingPolicy = cluster.SCHED_RR;
  for (let i = 0; i < workers; i++) cluster.fork();
  process.on('SIGTERM', () => {
    for (const worker of Object.values(cluster.workers ?? {})) worker?.kill('SIGTERM');
    process.exit(0);
  });
} else if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const style = process.env.BASELINE_STYLE === 'reference' ? 'reference' : 'strong';
  const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
  const query: QueryFn = async (sql, params, name) =>
    (await pool.query(name ? { name, text: sql, values: params } : { text: sql, values: params })).rows;
  const server = http.createServer({ keepAliveTimeout: 5_000 }, createBaseline(query, style));
  server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
    console.log(`baseline (${style}): listening on http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
  });
}
