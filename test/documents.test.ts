// The start page, the person list and the work: their shapes in all three
// representations, their links, and paging with totals; a deep page of the list costs what the first does.
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { generateData } from '../bin/lib/fill-database.ts';
import type { Db } from '../lib/db/index.ts';
import { migrate } from '../lib/db/index.ts';
import type { TestDb, TestServer } from './helpers.ts';
import { openTestDb, readJson, root, startTestServer } from './helpers.ts';

let server: TestServer;

before(async () => {
  server = await startTestServer();
});
after(() => server.close());

const fetchText = async (path: string) => (await fetch(server.origin + path)).text();
const fetchJson = async (path: string) => readJson(await fetch(server.origin + path));

describe('the work', () => {
  test('JSON carries title, year, kind, description and links to its person and the person list', async () => {
    const [werk] = await server.db.query<{
      id: number;
      titel: string;
      jahr: number;
      art: string;
      beschreibung: string;
    }>(
      `SELECT w.id, w.titel, w.jahr, w.art, w.beschreibung FROM werk w JOIN person p ON p.id = w.person_id WHERE p.slug = 'max-muster' ORDER BY w.id LIMIT 1`,
    );
    assert.ok(werk);
    assert.deepEqual(await fetchJson(`/werk/${werk.id}.json`), {
      titel: werk.titel,
      url: `${server.origin}/werk/${werk.id}`,
      jahr: werk.jahr,
      art: werk.art,
      beschreibung: werk.beschreibung,
      person: { vorname: 'Max', nachname: 'Muster', url: `${server.origin}/person/max-muster` },
      personen: `${server.origin}/personen`,
    });
  });

  test('XML has root werk with ref and the person link', async () => {
    const xml = await fetchText('/werk/1.xml');
    assert.match(
      xml,
      new RegExp(`^<\\?xml version="1.0" encoding="UTF-8"\\?>\\n<werk ref="${server.origin}/werk/1">\\n  <titel>`),
    );
    assert.match(xml, new RegExp(`<person ref="${server.origin}/person/max-muster">\\n    <vorname>Max</vorname>`));
    assert.match(xml, new RegExp(`<personen ref="${server.origin}/personen"/>`));
  });

  test('HTML links the person with a relative link', async () => {
    const html = await fetchText('/werk/1');
    assert.match(html, /<p class="by">by <a href="person\/max-muster">Max Muster<\/a><\/p>/);
  });

  test('werk.php without an id is 400, an unknown id 404', async () => {
    assert.equal((await fetch(`${server.origin}/werk.php`)).status, 400);
    assert.equal((await fetch(`${server.origin}/werk.php?id=0`)).status, 400);
    assert.equal((await fetch(`${server.origin}/werk/99999`)).status, 404);
  });

  test('a title with markup and quotes comes back escaped and intact in every representation', async () => {
    const titel = `<script>alert(1)</script> & "Zitat" 'x'`;
    const [row] = await server.db.query<{ id: number }>(
      'INSERT INTO werk (person_id, titel) VALUES (1, $1) RETURNING id',
      [titel],
    );
    const id = row?.id as number;
    assert.equal((await fetchJson(`/werk/${id}.json`)).titel, titel);
    assert.match(
      await fetchText(`/werk/${id}.xml`),
      /<titel>&lt;script&gt;alert\(1\)&lt;\/script&gt; &amp; &quot;Zitat&quot; &apos;x&apos;<\/titel>/,
    );
    const html = await fetchText(`/werk/${id}`);
    assert.match(html, /<h1>&lt;script&gt;alert\(1\)&lt;\/script&gt; &amp; &#34;Zitat&#34; &#39;x&#39;<\/h1>/);
    assert.doesNotMatch(html, /<script>/);
    await server.db.query('DELETE FROM werk WHERE id = $1', [id]);
  });
});

describe('the person list', () => {
  test('lists every demo person with total and links, ordered by last name', async () => {
    const list = await fetchJson('/personen.json');
    const [count] = await server.db.query<{ n: number }>('SELECT count(*)::int AS n FROM person');
    assert.equal(list.total, count?.n);
    assert.ok(list.total >= 12);
    assert.equal(list.person.length, list.total);
    assert.equal(list.previous, null);
    assert.equal(list.next, null);
    // In the database's collation, whatever the server's locale is.
    const ordered = await server.db.query<{ nachname: string }>(
      'SELECT nachname FROM person ORDER BY nachname, vorname, id',
    );
    assert.deepEqual(
      list.person.map((p: { nachname: string }) => p.nachname),
      ordered.map((p) => p.nachname),
    );
    const max = list.person.find((p: { vorname: string }) => p.vorname === 'Max');
    assert.equal(max.url, `${server.origin}/person/max-muster`);
    assert.ok(list.person.some((p: { nachname: string }) => /[äöüß]/i.test(p.nachname)));
  });

  test('pages by 50 with next and previous links', async () => {
    await server.db.exec(`INSERT INTO person (slug, vorname, nachname, username, image)
      SELECT 'zz-' || g, 'Test', 'Zz' || lpad(g::text, 3, '0'), 'zz' || g, '/img/max-muster.svg' FROM generate_series(1, 60) AS g`);
    try {
      const first = await fetchJson('/personen.json');
      assert.equal(first.person.length, 50);
      assert.equal(first.next, `${server.origin}/personen?offset=50`);
      const second = await fetchJson('/personen.json?offset=50');
      assert.equal(second.person.length, first.total - 50);
      assert.equal(second.previous, `${server.origin}/personen`);
      assert.equal(second.next, null);
      const xml = await fetchText('/personen.xml?offset=50');
      assert.match(
        xml,
        new RegExp(
          `<personen ref="${server.origin}/personen\\?offset=50" total="${first.total}" offset="50" limit="50">\\n  <previous ref="${server.origin}/personen"/>\\n  <person ref=`,
        ),
      );
      const html = await fetchText('/personen?offset=50');
      assert.match(html, /<a rel="prev" href="personen">/);
    } finally {
      await server.db.exec(`DELETE FROM person WHERE slug LIKE 'zz-%'`);
    }
  });

  test('a bad offset is 400', async () => {
    assert.equal((await fetch(`${server.origin}/personen?offset=-5`)).status, 400);
  });
});

describe('a page of the person list, however deep', () => {
  // 400 persons with 3 works each; a name given twice and once three times, so that pages also
  // begin between persons of one name. Not production: each request runs the script.
  let deep: TestServer;
  let testDb: TestDb;
  const statements: { sql: string; params: readonly unknown[] }[] = [];
  before(async () => {
    testDb = await openTestDb();
    await migrate(testDb.db, path.join(root, 'sql'));
    await generateData(testDb.db, { persons: 400, works: 3, seed: 11, replace: true });
    await testDb.db.query(
      `UPDATE person SET nachname = 'Gleich', vorname = 'Anna' WHERE id IN (SELECT id FROM person ORDER BY nachname, vorname, id OFFSET 48 LIMIT 3)`,
    );
    await testDb.db.query(
      `UPDATE person SET nachname = 'Gleich', vorname = 'Bert' WHERE id IN (SELECT id FROM person ORDER BY nachname, vorname, id OFFSET 98 LIMIT 2)`,
    );
    const recording: Db = {
      ...testDb.db,
      query: (sql, params, options) => {
        statements.push({ sql, params: params ?? [] });
        return testDb.db.query(sql, params, options);
      },
    };
    deep = await startTestServer({ DEMO_DATA: '0' }, { db: { ...testDb, db: recording, drop: async () => {} } });
  });
  after(async () => {
    await deep?.close();
    await testDb?.drop();
  });

  const page = async (offset: number) => readJson(await fetch(`${deep.origin}/personen.json?offset=${offset}`));

  test('is the list from its offset on, in the order of name and id', async () => {
    const all = await testDb.db.query<{ slug: string }>('SELECT slug FROM person ORDER BY nachname, vorname, id');
    for (const offset of [0, 1, 49, 50, 51, 99, 100, 101, 350, 375, 399, 400, 401, 5000]) {
      const list = await page(offset);
      const expected = all.slice(offset, offset + 50).map((p) => `${deep.origin}/person/${p.slug}`);
      assert.deepEqual(
        list.person.map((p: { url: string }) => p.url),
        expected,
        `offset ${offset}`,
      );
      assert.equal(list.total, 400);
    }
  });

  test('reads its own persons and their works only: a deep page costs what the first does', async () => {
    for (const [offset, persons] of [
      [0, 50],
      [200, 50],
      [350, 50],
      [375, 25],
    ] as const) {
      // Once to remember the total and where each page begins, then measured.
      await page(offset);
      statements.length = 0;
      assert.equal((await page(offset)).person.length, persons);
      const read = await rowsRead(testDb.db, statements, ['person', 'werk']);
      // A page that does not begin at a multiple of 50 passes over the persons before it on its 50.
      assert.deepEqual(read, { person: persons + (offset % 50), werk: persons * 3 }, `offset ${offset}`);
    }
  });
});

/** The rows the tables gave to the statements sent, summed over their plans (EXPLAIN ANALYZE, run again). */
async function rowsRead(
  db: Db,
  sent: { sql: string; params: readonly unknown[] }[],
  tables: string[],
): Promise<Record<string, number>> {
  const read: Record<string, number> = Object.fromEntries(tables.map((table) => [table, 0]));
  const walk = (node: Plan) => {
    const table = node['Relation Name'];
    if (table !== undefined && table in read)
      read[table] = (read[table] as number) + node['Actual Rows'] * node['Actual Loops'];
    for (const child of node.Plans ?? []) walk(child);
  };
  for (const { sql, params } of sent) {
    if (!/^\s*SELECT\b/i.test(sql)) continue;
    const [row] = await db.query<{ 'QUERY PLAN': { Plan: Plan }[] }>(`EXPLAIN (ANALYZE, FORMAT JSON) ${sql}`, params);
    walk((row?.['QUERY PLAN'][0] as { Plan: Plan }).Plan);
  }
  return read;
}

interface Plan {
  'Relation Name'?: string;
  'Actual Rows': number;
  'Actual Loops': number;
  Plans?: Plan[];
}

describe('the start page', () => {
  test('JSON counts persons and works and links the list, the search and the newest works', async () => {
    const start = await fetchJson('/index.json');
    const [counts] = await server.db.query<{ p: number; w: number }>(
      'SELECT (SELECT count(*)::int FROM person) AS p, (SELECT count(*)::int FROM werk) AS w',
    );
    assert.equal(start.url, `${server.origin}/`);
    assert.deepEqual(start.personen, { anzahl: counts?.p, url: `${server.origin}/personen` });
    assert.deepEqual(start.werke, { anzahl: counts?.w });
    assert.equal(start.suche, `${server.origin}/search`);
    assert.equal(start.neueste.length, 5);
    assert.match(start.neueste[0].url, /\/werk\/\d+$/);
  });

  test('HTML has the navigation, the search form and the newest works', async () => {
    const html = await fetchText('/');
    assert.match(html, /<nav aria-label="Main">\s*<a href="personen">Persons<\/a>\s*<a href="search">Search<\/a>/);
    assert.match(html, /<form class="search" action="search" method="get" role="search">/);
    assert.match(html, /<h2>Newest works<\/h2>/);
  });

  test('the start page at / links its alternates as /index.<suffix>', async () => {
    const res = await fetch(`${server.origin}/`);
    assert.match(
      res.headers.get('link') as string,
      new RegExp(`<${server.origin}/>; rel="canonical", <${server.origin}/index.html>; rel="alternate"`),
    );
  });
});
