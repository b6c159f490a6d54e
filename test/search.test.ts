// The search result list (docs/interface.md, Search): parsing, validation, results, order, paging,
// and the indexes that keep "contains" fast on large tables.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Db } from '../lib/db/index.ts';
import { DataVersion } from '../lib/db/index.ts';
import type { TestServer } from './helpers.ts';
import { readJson, startTestServer } from './helpers.ts';

let server: TestServer;

before(async () => {
  // Production, where search pages are kept rendered until the data changes (scripts/search.ts).
  server = await startTestServer({ NODE_ENV: 'production' });
});
after(() => server.close());

const json = async (path: string) => {
  const res = await fetch(server.origin + path, { headers: { accept: 'application/json' }, redirect: 'manual' });
  return { status: res.status, body: await readJson(res), headers: res.headers };
};

describe('search validation', () => {
  const bad: [string, RegExp][] = [
    ['query=name,contains,x', /field "name".*any, title, creator/],
    ['query=any,like,x', /match type "like".*contains, exact, begins_with/],
    ['query=any,contains', /<field>,<match>,<term>/],
    ['query=any,contains,', /empty/],
    ['query=any,contains,' + 'x'.repeat(201), /longer than 200/],
    ['query=any,contains,x&search_scope=alles', /search_scope must be one of default_scope, personen, werke/],
    ['query=any,contains,x&tab=other', /tab must be one of default_tab/],
    ['query=any,contains,x&vid=nope', /vid must be one of portfolio, druck/],
    ['query=any,contains,x&offset=-1', /offset must be a non-negative integer/],
    ['query=any,contains,x&offset=1.5', /offset must be a non-negative integer/],
    ['query=any,contains,x&offset=abc', /offset must be a non-negative integer/],
  ];
  for (const [query, message] of bad) {
    test(`${query.slice(0, 60)} is 400 naming the parameter and the allowed values`, async () => {
      const { status, body, headers } = await json(`/search?${query}`);
      assert.equal(status, 400);
      assert.equal(headers.get('content-type'), 'application/problem+json; charset=utf-8');
      assert.match(body.detail, message);
    });
  }

  test('a term of exactly 200 characters is accepted', async () => {
    assert.equal((await json(`/search?query=any,contains,${'x'.repeat(200)}`)).status, 200);
  });

  test('no query at all is the empty search page', async () => {
    const { status, body } = await json('/search');
    assert.equal(status, 200);
    assert.equal(body.total, 0);
    assert.deepEqual(body.treffer, []);
    const html = await (await fetch(server.origin + '/search')).text();
    assert.match(html, /<form class="search" action="search" method="get"/);
  });
});

describe('search results', () => {
  test('splits on the first two commas: the rest of the term keeps its commas', async () => {
    const { body } = await json('/search?query=title,contains,a,b');
    assert.deepEqual(body.query, ['title,contains,a,b']);
  });

  test('creator finds the person and their works, persons first', async () => {
    const { body } = await json('/search?query=creator,exact,max%20muster');
    const [first, ...rest] = body.treffer;
    assert.deepEqual(first, { typ: 'person', titel: 'Max Muster', url: `${server.origin}/person/max-muster` });
    const [count] = await server.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM werk w JOIN person p ON p.id = w.person_id WHERE p.slug = 'max-muster'`);
    assert.equal(body.total, 1 + (count?.n ?? 0));
    assert.ok(rest.every((hit: { typ: string; person: { name: string } }) => hit.typ === 'werk' && hit.person.name === 'Max Muster'));
  });

  test('matching is case-insensitive, umlauts included', async () => {
    const lower = await json('/search?query=creator,contains,m%C3%BCller');
    const upper = await json('/search?query=creator,contains,M%C3%9CLLER');
    assert.ok(lower.body.total > 0);
    assert.deepEqual(upper.body.treffer, lower.body.treffer);
  });

  test('begins_with matches the start only', async () => {
    const { body } = await json('/search?query=creator,begins_with,j%C3%BCrgen&search_scope=personen');
    assert.deepEqual(body.treffer.map((h: { titel: string }) => h.titel), ['Jürgen Müller']);
    const none = await json('/search?query=creator,begins_with,m%C3%BCller&search_scope=personen');
    assert.equal(none.body.total, 0);
  });

  test('repeated query parameters are ANDed', async () => {
    const one = await json('/search?query=any,contains,e');
    const both = await json('/search?query=any,contains,e&query=creator,contains,max');
    assert.ok(both.body.total > 0);
    assert.ok(both.body.total < one.body.total);
  });

  test('search_scope restricts the kind of result', async () => {
    const personen = await json('/search?query=any,contains,e&search_scope=personen');
    const werke = await json('/search?query=any,contains,e&search_scope=werke');
    const all = await json('/search?query=any,contains,e');
    assert.ok(personen.body.treffer.every((h: { typ: string }) => h.typ === 'person'));
    assert.ok(werke.body.treffer.every((h: { typ: string }) => h.typ === 'werk'));
    assert.equal(all.body.total, personen.body.total + werke.body.total);
  });

  test('LIKE wildcards in the term are matched literally', async () => {
    assert.equal((await json('/search?query=any,contains,%25')).body.total, 0);
    assert.equal((await json('/search?query=any,contains,_')).body.total, 0);
  });

  test('pages of 10 with total, next and previous; the same URL gives the same order', async () => {
    const first = await json('/search?query=any,contains,e');
    assert.ok(first.body.total > 20);
    assert.equal(first.body.treffer.length, 10);
    assert.equal(first.body.previous, null);
    assert.equal(first.body.next, `${server.origin}/search?query=any,contains,e&tab=default_tab&search_scope=default_scope&vid=portfolio&offset=10`);
    const second = await json('/search?query=any,contains,e&offset=10');
    assert.equal(second.body.previous, `${server.origin}/search?query=any,contains,e&tab=default_tab&search_scope=default_scope&vid=portfolio`);
    const urls = new Set([...first.body.treffer, ...second.body.treffer].map((h: { url: string }) => h.url));
    assert.equal(urls.size, 20);
    const again = await json('/search?query=any,contains,e&offset=10');
    assert.deepEqual(again.body, second.body);
  });

  test('an offset past the end gives an empty page with the total and a way back', async () => {
    const { status, body } = await json('/search?query=any,contains,e&offset=100000');
    assert.equal(status, 200);
    assert.deepEqual(body.treffer, []);
    assert.ok(body.total > 0);
    assert.match(body.previous, /offset=\d+$/);
  });

  test('the form redirects to the canonical search URL', async () => {
    const res = await fetch(`${server.origin}/search?field=creator&match=contains&term=M%C3%BCller&search_scope=personen&tab=default_tab&vid=portfolio`, { redirect: 'manual' });
    assert.equal(res.status, 303);
    assert.equal(res.headers.get('location'), `${server.origin}/search?query=creator,contains,M%C3%BCller&tab=default_tab&search_scope=personen&vid=portfolio`);
  });

  test('the XML lists the query, the hits and their links', async () => {
    const xml = await (await fetch(`${server.origin}/search.xml?query=creator,exact,max%20muster&search_scope=personen`)).text();
    const self = `${server.origin}/search?query=creator,exact,max%20muster&amp;tab=default_tab&amp;search_scope=personen&amp;vid=portfolio`;
    assert.equal(xml, [
      '<?xml version="1.0" encoding="UTF-8"?>',
      `<suche ref="${self}" tab="default_tab" search_scope="personen" vid="portfolio" total="1" offset="0" limit="10">`,
      '  <query field="creator" match="exact">max muster</query>',
      `  <treffer typ="person" ref="${server.origin}/person/max-muster">`,
      '    <titel>Max Muster</titel>',
      '  </treffer>',
      '</suche>',
      '',
    ].join('\n'));
  });

  test('vid selects the HTML title and stylesheet, and links keep tab and vid', async () => {
    const html = await (await fetch(`${server.origin}/search?query=any,contains,e&vid=druck`)).text();
    assert.match(html, /<title>Search \(print\): any contains &#34;e&#34; · Portfolio<\/title>/);
    assert.match(html, /<link rel="stylesheet" href="css\/druck\.css">/);
    assert.match(html, /<a rel="next" href="search\?query=any,contains,e&amp;tab=default_tab&amp;search_scope=default_scope&amp;vid=druck&amp;offset=10">/);
  });
});

describe('remembered results', () => {
  test('a change to the works shows in the next search at once', async () => {
    const url = '/search?query=title,contains,Quellwasserstudie';
    assert.equal((await json(url)).body.total, 0);
    const [row] = await server.db.query<{ id: number }>(`INSERT INTO werk (person_id, titel) VALUES (1, 'Quellwasserstudie') RETURNING id`);
    const after = await json(url);
    assert.equal(after.body.total, 1);
    assert.equal(after.body.treffer[0].url, `${server.origin}/werk/${row?.id}`);
    await server.db.query('UPDATE werk SET titel = $1 WHERE id = $2', ['Quellwasserstudie II', row?.id]);
    assert.equal((await json(url)).body.treffer[0].titel, 'Quellwasserstudie II');
    await server.db.query('DELETE FROM werk WHERE id = $1', [row?.id]);
    assert.equal((await json(url)).body.total, 0);
  });

  test('a change to a person shows in creator searches and in the start page counts at once', async () => {
    const before = (await json('/index.json')).body.personen.anzahl;
    const url = '/search?query=creator,exact,Quirin%20Quellenberg';
    assert.equal((await json(url)).body.total, 0);
    await server.db.query(`INSERT INTO person (slug, vorname, nachname, username, image) VALUES ('quirin-quellenberg', 'Quirin', 'Quellenberg', 'qq', '/img/x.svg')`);
    assert.equal((await json(url)).body.total, 1);
    assert.equal((await json('/index.json')).body.personen.anzahl, before + 1);
    await server.db.query(`DELETE FROM person WHERE slug = 'quirin-quellenberg'`);
    assert.equal((await json(url)).body.total, 0);
  });

  test('kept documents: every representation shows a change at once, and an unchanged page keeps its ETag', async () => {
    const url = '/search?query=title,contains,Brunnenstudie';
    const get = async (format: string, etag?: string) => {
      const res = await fetch(`${server.origin}${url.replace('/search', `/search.${format}`)}`, etag ? { headers: { 'if-none-match': etag } } : {});
      return { status: res.status, etag: res.headers.get('etag'), text: await res.text() };
    };
    const before = { json: await get('json'), xml: await get('xml'), html: await get('html') };
    for (const format of ['json', 'xml', 'html'] as const) {
      assert.doesNotMatch(before[format].text, /Brunnenstudie am Hang/);
      // Asked again, the kept document answers with the same ETag: 304.
      assert.equal((await get(format, before[format].etag ?? '')).status, 304);
    }
    const [row] = await server.db.query<{ id: number }>(`INSERT INTO werk (person_id, titel) VALUES (1, 'Brunnenstudie am Hang') RETURNING id`);
    for (const format of ['json', 'xml', 'html'] as const) {
      const after = await get(format, before[format].etag ?? '');
      assert.equal(after.status, 200, format);
      assert.match(after.text, /Brunnenstudie am Hang/);
      assert.match(after.text, new RegExp(`werk/${row?.id}\\b`));
      assert.notEqual(after.etag, before[format].etag);
    }
    await server.db.query('DELETE FROM werk WHERE id = $1', [row?.id]);
    assert.doesNotMatch((await get('xml')).text, /Brunnenstudie am Hang/);
  });

  test('a person list page and the start page show a new person at once', async () => {
    const [first, start] = [(await json('/personen')).body, (await json('/')).body];
    await server.db.query(`INSERT INTO person (slug, vorname, nachname, username, image) VALUES ('aaron-aal', 'Aaron', 'Aal', 'aaal', '/img/x.svg')`);
    const [list, counts] = [(await json('/personen')).body, (await json('/')).body];
    assert.equal(list.total, first.total + 1);
    assert.equal(counts.personen.anzahl, start.personen.anzahl + 1);
    assert.ok(JSON.stringify(list).includes('/person/aaron-aal'));
    await server.db.query(`DELETE FROM person WHERE slug = 'aaron-aal'`);
    assert.equal((await json('/personen')).body.total, first.total);
  });

  test('requests that arrive together share data version reads, and each sees every change made before it came', async () => {
    let reads = 0;
    const counted: Db = { ...server.db, query: (sql, params, options) => {
      if (options?.name === 'data-version') reads += 1;
      return server.db.query(sql, params, options);
    } };
    const version = new DataVersion(counted);
    const together = await Promise.all(Array.from({ length: 64 }, () => version.current()));
    assert.ok(reads <= 2, `64 requests at once made ${reads} reads`);
    assert.equal(new Set(together).size, 1);
    // A read under way when the change commits may miss it; one asked for after the commit may not.
    const underWay = version.current();
    await server.db.query(`UPDATE werk SET jahr = jahr WHERE person_id = 1`);
    const after = await version.current();
    assert.ok(after > (together[0] as bigint));
    assert.ok(after >= (await underWay));
  });

  test('the data version moves once per changing statement, in the same transaction', async () => {
    const version = async () => Number((await server.db.query<{ n: string }>('SELECT n::text AS n FROM data_version'))[0]?.n);
    const start = await version();
    await server.db.query(`UPDATE werk SET jahr = jahr WHERE person_id = 1`);
    assert.equal(await version(), start + 1);
    await assert.rejects(server.db.transaction(async (tx) => {
      await tx.query(`UPDATE werk SET jahr = jahr WHERE person_id = 1`);
      throw new Error('rolled back');
    }));
    assert.equal(await version(), start + 1);
  });
});

describe('search indexes', () => {
  test('contains, begins_with and exact on titles and names use their indexes, and a page of a frequent term walks the title order (EXPLAIN)', async () => {
    // Enough rows that a sequential scan is no longer the cheapest plan.
    await server.db.exec(`
      INSERT INTO werk (person_id, titel)
        SELECT 1, 'Studie ' || md5(g::text) FROM generate_series(1, 20000) AS g;
      INSERT INTO person (slug, vorname, nachname, username, image)
        SELECT 'p-' || g, 'Vorname', 'N' || md5(g::text), 'u' || g, '/img/x.svg' FROM generate_series(1, 20000) AS g;
      ANALYZE werk; ANALYZE person;`);
    const plans: Record<string, string> = {};
    // The shapes scripts/search.ts sends, with the patterns as it builds them.
    for (const [name, sql] of Object.entries({
      titleContains: `SELECT id FROM werk w WHERE w.titel ILIKE '%abcd%'`,
      titleBegins: `SELECT id FROM werk w WHERE lower(w.titel) COLLATE "C" LIKE lower('Studie 12%') ORDER BY lower(w.titel) COLLATE "C", w.id LIMIT 10`,
      titleExact: `SELECT id FROM werk w WHERE lower(w.titel) COLLATE "C" = lower('Studie x')`,
      frequentContainsPage: `SELECT id FROM werk w WHERE w.titel ILIKE '%studie%' ORDER BY lower(w.titel) COLLATE "C", w.id LIMIT 10`,
      nameContains: `SELECT id FROM person p WHERE (p.vorname || ' ' || p.nachname) ILIKE '%üll%'`,
      nameExact: `SELECT id FROM person p WHERE lower(p.vorname || ' ' || p.nachname) = lower('Max Muster')`,
    })) {
      const rows = await server.db.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${sql}`);
      plans[name] = rows.map((r) => r['QUERY PLAN']).join('\n');
    }
    assert.match(plans.titleContains as string, /Bitmap Index Scan on werk_titel_trgm/);
    assert.match(plans.titleBegins as string, /(Index (Only )?Scan using|Bitmap Index Scan on) werk_titel_sort/);
    assert.match(plans.titleExact as string, /(Index (Only )?Scan using|Bitmap Index Scan on) werk_titel_sort/);
    // A term in every title: walk the title order and stop after ten, no sort of all matches.
    assert.match(plans.frequentContainsPage as string, /Index (Only )?Scan using werk_titel_sort/);
    assert.doesNotMatch(plans.frequentContainsPage as string, /Sort/);
    assert.match(plans.nameContains as string, /Bitmap Index Scan on person_name_trgm/);
    assert.match(plans.nameExact as string, /(Index (Only )?Scan using|Bitmap Index Scan on) person_name_lower/);
  });
});
