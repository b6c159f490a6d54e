// What harvesters, feed readers and search engines read: paging links in Link headers, the Atom
// feeds, the sitemap with robots.txt, and the schema.org JSON-LD in the HTML pages
// (docs/interface.md, Feeds, sitemap and links).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import path from 'node:path';
import { generateData } from '../bin/lib/fill-database.ts';
import type { Db } from '../lib/db/index.ts';
import { migrate } from '../lib/db/index.ts';
import { personBody, werkBody, asUser } from './change-helpers.ts';
import type { TestServer } from './helpers.ts';
import { missingTool, openTestDb, rawBytes, root, startTestServer, xmllint } from './helpers.ts';

/** The sitemap protocol's urlset and index as XML Schema, with xhtml:link. */
const sitemapSchema = path.join(root, 'test/fixtures/sitemap/sitemap.xsd');
const noXmllint = missingTool('/usr/bin/xmllint', 'libxml2-utils');

const parser = new XMLParser({
  ignoreAttributes: false,
  attributeNamePrefix: '@',
  parseTagValue: false,
  isArray: (name) => ['entry', 'link', 'url', 'sitemap', 'xhtml:link'].includes(name),
});

let server: TestServer;
before(async () => {
  server = await startTestServer();
});
after(async () => {
  await server?.close();
});

async function get(path: string, headers: Record<string, string> = {}) {
  const res = await fetch(server.origin + path, { headers, redirect: 'manual' });
  return {
    status: res.status,
    type: res.headers.get('content-type'),
    link: res.headers.get('link') ?? '',
    body: await res.text(),
  };
}

/** The Link header's relations, as rel → URL. */
function relations(link: string): Map<string, string> {
  const found = new Map<string, string>();
  for (const [, url, rel] of link.matchAll(/<([^>]+)>; rel="([^"]+)"/g))
    if (rel !== 'alternate') found.set(rel as string, url as string);
  return found;
}

describe('paging links', () => {
  test('a search page names the first, previous, next and last pages in its own representation', async () => {
    await server.db.query(
      `INSERT INTO werk (person_id, titel) SELECT 1, 'Linkstudie ' || g FROM generate_series(1, 35) AS g`,
    );
    const q = 'query=any,contains,linkstudie&tab=default_tab&search_scope=default_scope&vid=portfolio';
    const page = await get(`/search.json?${q}&offset=10`);
    assert.equal(page.status, 200);
    const total = JSON.parse(page.body).total as number;
    assert.ok(total > 30, `enough hits for several pages (${total})`);
    const rels = relations(page.link);
    // Commas in Link's URLs are %2C (docs/interface.md, Feeds, sitemap and links).
    const at = (offset: number) =>
      `${server.origin}/search.json?${q}${offset === 0 ? '' : `&offset=${offset}`}`.replaceAll(',', '%2C');
    assert.equal(rels.get('first'), at(0));
    assert.equal(rels.get('prev'), at(0));
    assert.equal(rels.get('next'), at(20));
    assert.equal(rels.get('last'), at(Math.floor((total - 1) / 10) * 10));
    // The last page has no next; the first no prev. Without a suffix, the links have none either.
    const last = relations(
      (await get(new URL(rels.get('last') as string).pathname + new URL(rels.get('last') as string).search)).link,
    );
    assert.equal(last.has('next'), false);
    const first = relations((await get(`/search?${q}`, { accept: 'application/json' })).link);
    assert.equal(first.has('prev'), false);
    assert.equal(first.get('next'), `${server.origin}/search?${q}&offset=10`.replaceAll(',', '%2C'));
    await server.db.query(`DELETE FROM werk WHERE titel LIKE 'Linkstudie %'`);
  });

  test('the person list and a loan list have them; a single document has none', async () => {
    const list = relations((await get('/personen.xml')).link);
    assert.equal(list.get('first'), `${server.origin}/personen.xml`);
    assert.equal(list.get('last'), `${server.origin}/personen.xml`);
    const loans = await asUser(server.origin, 'bibliothek', {
      method: 'GET',
      path: '/entlehnte/2.json',
      format: 'json',
    });
    assert.equal(relations(loans.headers.get('link') ?? '').get('first'), `${server.origin}/entlehnte/2.json`);
    const person = relations((await get('/person/max-muster.json')).link);
    assert.deepEqual([...person.keys()], ['canonical']);
  });
});

describe('Atom feeds', () => {
  test('the site feed: valid Atom, the newest works first, each with its links and author', async () => {
    const feed = await get('/feed');
    assert.equal(feed.status, 200);
    assert.equal(feed.type, 'application/atom+xml; charset=utf-8');
    assert.equal(XMLValidator.validate(feed.body), true);
    const doc = parser.parse(feed.body).feed;
    assert.equal(doc['@xmlns'], 'http://www.w3.org/2005/Atom');
    assert.equal(doc.id, `${server.origin}/feed`);
    assert.match(doc.updated, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    assert.ok(doc.title && doc.author.name);
    assert.deepEqual(
      doc.link.map((l: Record<string, string>) => l['@rel']),
      ['self', 'alternate'],
    );
    assert.equal(doc.entry.length, 50);
    const ids = doc.entry.map((e: { id: string }) => Number(e.id.split('/').pop()));
    assert.deepEqual(
      ids,
      [...ids].sort((a, b) => b - a),
      'newest first',
    );
    assert.equal(ids[0], 70);
    for (const entry of doc.entry) {
      // RFC 4287: id, title and updated in every entry; an author here or in the feed.
      assert.ok(
        entry.id && entry.title && entry.updated && entry.author.name && entry.author.uri,
        JSON.stringify(entry),
      );
      assert.equal(entry.link[0]['@href'], entry.id);
    }
    const work = JSON.parse((await get('/werk/70.json')).body);
    assert.equal(doc.entry[0].title, work.titel);
    assert.equal(doc.entry[0].author.name, work.person.vorname + ' ' + work.person.nachname);
  });

  test("a person's feed has their works only; old slugs redirect, unknown persons are 404", async () => {
    const feed = parser.parse((await get('/person/juergen-mueller/feed')).body).feed;
    const person = JSON.parse((await get('/person/juergen-mueller.json')).body);
    assert.deepEqual(
      new Set(feed.entry.map((e: { id: string }) => e.id)),
      new Set(person.werk.map((w: { url: string }) => w.url)),
    );
    assert.ok(feed.entry.every((e: { author: { name: string } }) => e.author.name === 'Jürgen Müller'));
    assert.equal((await get('/feed.php?pid=2')).status, 200);
    assert.equal((await get('/person/niemand-hier/feed')).status, 404);
    assert.equal((await get('/feed.json')).status, 406);
  });

  test('the HTML pages link the feeds', async () => {
    const home = (await get('/')).body;
    assert.match(home, /<link rel="alternate" type="application\/atom\+xml" title="Newest works" href="feed">/);
    const person = (await get('/person/max-muster')).body;
    assert.match(
      person,
      /<link rel="alternate" type="application\/atom\+xml" title="Newest works of Max Muster" href="person\/max-muster\/feed">/,
    );
  });
});

describe('sitemap and robots.txt', () => {
  test('robots.txt names the sitemap by its absolute address', async () => {
    const robots = await get('/robots.txt');
    assert.equal(robots.type, 'text/plain; charset=utf-8');
    assert.match(robots.body, new RegExp(`^Sitemap: ${server.origin}/sitemap\\.xml$`, 'm'));
    assert.match(robots.body, /^Disallow: \/entlehnte\/$/m);
  });

  test('one sitemap lists every person and work with its XML and JSON alternates', async () => {
    const sitemap = await get('/sitemap.xml');
    assert.equal(sitemap.status, 200);
    assert.equal(XMLValidator.validate(sitemap.body), true);
    const urls = parser.parse(sitemap.body).urlset.url as {
      loc: string;
      lastmod: string;
      'xhtml:link': Record<string, string>[];
    }[];
    const counts = JSON.parse((await get('/index.json')).body);
    assert.equal(urls.length, counts.personen.anzahl + counts.werke.anzahl);
    assert.ok(urls.some((u) => u.loc === `${server.origin}/person/max-muster`));
    assert.ok(urls.some((u) => u.loc === `${server.origin}/werk/7`));
    for (const url of urls) {
      assert.deepEqual(
        url['xhtml:link'].map((l) => l['@href']),
        [`${url.loc}.xml`, `${url.loc}.json`],
      );
      assert.match(url.lastmod, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    }
    assert.equal((await get('/sitemap.xml?werke=1')).status, 200);
    assert.equal((await get('/sitemap.xml?werke=2')).status, 404);
    assert.equal((await get('/sitemap.xml?werke=1&personen=1')).status, 400);
  });

  test('is valid against the sitemap schema', { skip: noXmllint }, async () => {
    const { code, messages } = await xmllint(sitemapSchema, (await get('/sitemap.xml')).body);
    assert.equal(code, 0, messages);
  });

  for (const path of ['/sitemap.xml', '/robots.txt']) {
    test(`${path} has an ETag, and If-None-Match answers 304 without a body`, async () => {
      const first = await rawBytes(server.origin, path);
      const etag = first.headers.etag as string;
      assert.match(etag, /^"[A-Za-z0-9_-]{27}"$/);
      assert.deepEqual(
        [first.headers['cache-control'], first.headers['content-length']],
        ['public, max-age=0, s-maxage=86400', String(first.body.length)],
      );
      const again = await rawBytes(server.origin, path, { headers: { 'if-none-match': etag } });
      assert.deepEqual([again.status, again.headers.etag, again.body.length], [304, etag, 0]);
    });
  }
});

describe('a sitemap beyond 10,000 addresses', () => {
  // 210 persons and 10,500 works: 10,710 addresses, in the parts personen=1, werke=1 and werke=2.
  // Production, where each file is kept until the data changes.
  let big: TestServer;
  let db: Awaited<ReturnType<typeof openTestDb>>;
  const statements: string[] = [];
  before(async () => {
    db = await openTestDb();
    await migrate(db.db, path.join(root, 'sql'));
    await generateData(db.db, { persons: 210, works: 1, seed: 3, replace: true });
    // The other works in statements of 1,000, each well within the test database's time-out.
    for (let first = 211; first <= 10_500; first += 1_000) {
      await db.db.query(
        `INSERT INTO werk (person_id, titel) SELECT 1 + g % 210, 'Werk ' || g FROM generate_series($1::int, $2::int) AS g`,
        [first, Math.min(first + 999, 10_500)],
      );
    }
    const recording: Db = {
      ...db.db,
      query: (sql, params, options) => {
        statements.push(sql);
        return db.db.query(sql, params, options);
      },
    };
    big = await startTestServer(
      { DEMO_DATA: '0', NODE_ENV: 'production' },
      { db: { ...db, db: recording, drop: async () => {} } },
    );
  });
  after(async () => {
    await big?.close();
    await db?.drop();
  });

  const part = (n: number, headers: Record<string, string> = {}) =>
    rawBytes(big.origin, `/sitemap.xml?werke=${n}`, { headers });

  test('is an index of parts of at most 10,000 addresses, together listing every address once', async () => {
    const index = parser.parse(await (await fetch(`${big.origin}/sitemap.xml`)).text()).sitemapindex;
    const parts = index.sitemap.map((s: { loc: string }) => s.loc);
    assert.deepEqual(parts, [
      `${big.origin}/sitemap.xml?personen=1`,
      `${big.origin}/sitemap.xml?werke=1`,
      `${big.origin}/sitemap.xml?werke=2`,
    ]);
    const seen = new Set<string>();
    for (const address of parts) {
      const text = await (await fetch(address)).text();
      assert.equal(XMLValidator.validate(text), true);
      const urls = parser.parse(text).urlset.url as { loc: string }[];
      assert.ok(urls.length <= 10_000, `${address}: ${urls.length} addresses`);
      for (const url of urls) seen.add(url.loc);
    }
    assert.equal(seen.size, 210 + 10_500);
  });

  test('the index and its parts are valid against the sitemap schema', { skip: noXmllint }, async () => {
    for (const address of ['/sitemap.xml', '/sitemap.xml?personen=1', '/sitemap.xml?werke=1']) {
      const { code, messages } = await xmllint(sitemapSchema, await (await fetch(big.origin + address)).text());
      assert.equal(code, 0, `${address}: ${messages}`);
    }
  });

  test('a part goes compressed to a client that accepts it, with an ETag per encoding that answers 304', async () => {
    const plain = await part(1);
    assert.deepEqual(
      [plain.status, plain.headers['content-encoding'], plain.headers.vary],
      [200, undefined, 'Accept-Encoding'],
    );
    for (const [encoding, accept, decode, suffix] of [
      ['br', 'br, gzip', brotliDecompressSync, '-br'],
      ['gzip', 'gzip', gunzipSync, '-gz'],
    ] as const) {
      const compressed = await part(1, { 'accept-encoding': accept });
      assert.deepEqual(
        [compressed.headers['content-encoding'], compressed.headers.etag],
        [encoding, (plain.headers.etag as string).replace(/"$/, `${suffix}"`)],
      );
      assert.deepEqual(decode(compressed.body), plain.body);
      assert.equal(Number(compressed.headers['content-length']), compressed.body.length);
      // Ten thousand addresses that differ in a few digits.
      assert.ok(
        compressed.body.length * 10 < plain.body.length,
        `${encoding}: ${compressed.body.length} of ${plain.body.length} bytes`,
      );
      const again = await part(1, { 'accept-encoding': accept, 'if-none-match': compressed.headers.etag as string });
      assert.deepEqual([again.status, again.body.length], [304, 0]);
    }
  });

  test('a part is made once and kept until the data changes', async () => {
    const readsWerk = () => statements.filter((sql) => /\bwerk\b/.test(sql)).length;
    const first = await part(2, { 'accept-encoding': 'br' });
    let before = readsWerk();
    const kept = await part(2, { 'accept-encoding': 'br' });
    assert.deepEqual([kept.body, kept.headers.etag, readsWerk()], [first.body, first.headers.etag, before]);
    assert.deepEqual((await part(2)).body, brotliDecompressSync(first.body));
    assert.equal(readsWerk(), before);
    // A change to a work of the part: made again, once, with the work's new time.
    await db.db.query(`UPDATE werk SET updated_at = '2030-01-02T03:04:05Z' WHERE id = 10001`);
    before = readsWerk();
    const changed = await part(2, { 'accept-encoding': 'br' });
    assert.notEqual(changed.headers.etag, first.headers.etag);
    assert.match(
      brotliDecompressSync(changed.body).toString(),
      /<loc>[^<]+\/werk\/10001<\/loc><lastmod>2030-01-02T03:04:05Z<\/lastmod>/,
    );
    await part(2, { 'accept-encoding': 'br' });
    // The largest ids and the part's rows, once.
    assert.equal(readsWerk(), before + 2);
  });
});

describe('JSON-LD', () => {
  const ldOf = (html: string) => {
    const found = [...html.matchAll(/<script type="application\/ld\+json">([^<]*)<\/script>/g)];
    assert.equal(found.length, 1, 'one JSON-LD block');
    return JSON.parse((found[0] as RegExpMatchArray)[1] as string);
  };

  test('a person is a schema.org Person, the creator of their works', async () => {
    const ld = ldOf((await get('/person/juergen-mueller')).body);
    assert.equal(ld['@context'], 'https://schema.org');
    assert.equal(ld['@type'], 'Person');
    assert.equal(ld.url, `${server.origin}/person/juergen-mueller`);
    assert.equal(ld.name, 'Jürgen Müller');
    assert.equal(ld.image, `${server.origin}/img/juergen-mueller.svg`);
    const works = JSON.parse((await get('/person/juergen-mueller.json')).body).werk;
    assert.deepEqual(
      ld['@reverse'].creator.map((w: { '@id': string; name: string }) => [w['@id'], w.name]),
      works.map((w: { url: string; titel: string }) => [w.url, w.titel]),
    );
  });

  test('a work is a CreativeWork with its creator', async () => {
    const ld = ldOf((await get('/werk/7')).body);
    assert.equal(ld['@type'], 'CreativeWork');
    assert.equal(ld.name, 'Über "das" Meer');
    assert.equal(ld.dateCreated, '1986');
    assert.equal(ld.genre, 'Fotografie');
    assert.deepEqual(ld.creator, {
      '@type': 'Person',
      '@id': `${server.origin}/person/juergen-mueller`,
      name: 'Jürgen Müller',
    });
  });

  test('a name that tries to end the script element stays inside it', async () => {
    const hostile = '</script><script>alert(1)</script><!--';
    const created = await asUser(server.origin, 'bibliothek', {
      method: 'POST',
      path: '/personen',
      format: 'json',
      body: personBody('json', { vorname: hostile, nachname: 'Probe', username: 'ld-probe' }),
    });
    assert.equal(created.status, 201, await created.text());
    const slug = new URL(created.headers.get('location') as string).pathname;
    const added = await asUser(server.origin, 'bibliothek', {
      method: 'POST',
      path: `${slug}/werke`,
      format: 'json',
      body: werkBody('json', { titel: hostile, jahr: 2026 }),
    });
    assert.equal(added.status, 201, await added.text());
    const html = (await get(slug)).body;
    assert.equal(html.includes('<script>alert(1)'), false);
    assert.equal(ldOf(html).givenName, hostile);
    const werk = new URL(added.headers.get('location') as string).pathname;
    assert.equal(ldOf((await get(werk)).body).name, hostile);
  });
});
