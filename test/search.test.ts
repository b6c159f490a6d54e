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
    ['query=name,contains,x', /field "name".*any, title, creator, desc, rtype, cdate/],
    ['query=any,like,x', /match type "like".*contains, exact, begins_with/],
    ['query=any,contains', /<field>,<match>,<term>/],
    ['query=any,contains,', /empty/],
    ['query=any,contains,' + 'x'.repeat(201), /longer than 200/],
    ['query=any,contains,x&offset=-1', /offset must be a non-negative integer/],
    ['query=any,contains,x&offset=1.5', /offset must be a non-negative integer/],
    ['query=any,contains,x&offset=abc', /offset must be a non-negative integer/],
    ['query=any,contains,x&sortby=relevance', /sortby must be one of rank, title, author, date_d, date_a/],
    ['query=any,contains,x&facet=colour,include,red', /facet must read <name>,include,<value>/],
    ['query=any,contains,x&facet=decade,include,1995', /decade's first year/],
    ['query=any,contains,*haus', /begins the word/],
    ['query=any,contains,h*', /at least 2 letters before its first wildcard/],
    ['query=any,contains,' + encodeURIComponent('ha* ne* st* mo* wi*'), /5 words with \* or \?; at most 4/],
    ['query=any,contains,NOT%20haus', /no word that must be there/],
    [
      'query=any,contains,' + encodeURIComponent('haus OR NOT nacht'),
      /no word that must be there.*do not OR a NOT with a word/,
    ],
    ['query=any,contains,haus,OR&query=any,contains,' + encodeURIComponent('NOT nacht'), /no word that must be there/],
    ['query=any,contains,x%00y', /NUL byte/],
    ['query=any,contains,a%01b%7Fc', /contains a control character/],
    ['query=any,contains,x&facet=rtype,include,a%01b', /facet must read/],
    ['query=title,exact,' + 'w'.repeat(101), /more than 100 letters/],
    ['query=any,contains,m%FCller', /percent-encoded bytes that are not UTF-8/],
    [
      'query=any,contains,' + Array.from({ length: 13 }, (_, i) => `w${i}`).join('%20'),
      /13 words and phrases; at most 12/,
    ],
  ];
  for (const [query, message] of bad) {
    test(`${query.slice(0, 60)} is 400 saying what to change`, async () => {
      const { status, body, headers } = await json(`/search?${query}`);
      assert.equal(status, 400);
      assert.equal(headers.get('content-type'), 'application/problem+json; charset=utf-8');
      assert.match(body.detail, message);
    });
  }

  test('a % without two hex digits is the text it is, in the search and in parameters the site does not read', async () => {
    const stray = await json('/search?query=any,contains,nebel&utm_content=50%off');
    assert.equal(stray.status, 200);
    assert.ok(stray.body.total > 0);
    assert.equal((await json('/search?query=any,contains,100%')).status, 200);
    assert.equal((await fetch(`${server.origin}/person.php?pid=1&x=%`)).status, 200);
  });

  test('a term of exactly 200 characters is accepted', async () => {
    assert.equal((await json(`/search?query=any,contains,${'x'.repeat(100)}%20${'y'.repeat(99)}`)).status, 200);
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

const titles = (body: { treffer: { titel: string }[] }) => body.treffer.map((h) => h.titel);

describe('search results', () => {
  test('splits on the first two commas: the rest of the term keeps its commas', async () => {
    const { body } = await json('/search?query=title,contains,a,b');
    assert.deepEqual(body.query, ['title,contains,a,b']);
  });

  test('creator finds the person and their works, persons first', async () => {
    const { body } = await json('/search?query=creator,exact,max%20muster');
    const [first, ...rest] = body.treffer;
    assert.deepEqual(
      { typ: first.typ, titel: first.titel, url: first.url },
      { typ: 'person', titel: 'Max Muster', url: `${server.origin}/person/max-muster` },
    );
    const [count] = await server.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM werk w JOIN person p ON p.id = w.person_id WHERE p.slug = 'max-muster'`,
    );
    assert.equal(body.total, 1 + (count?.n ?? 0));
    assert.ok(
      rest.every(
        (hit: { typ: string; person: { name: string } }) => hit.typ === 'werk' && hit.person.name === 'Max Muster',
      ),
    );
  });

  test('matching is case-insensitive, umlauts included', async () => {
    const lower = await json('/search?query=creator,contains,m%C3%BCller');
    const upper = await json('/search?query=creator,contains,M%C3%9CLLER');
    assert.ok(lower.body.total > 0);
    assert.deepEqual(upper.body.treffer, lower.body.treffer);
  });

  test('begins_with matches the start only', async () => {
    const { body } = await json('/search?query=creator,begins_with,j%C3%BCrgen&search_scope=personen');
    assert.deepEqual(titles(body), ['Jürgen Müller']);
    const none = await json('/search?query=creator,begins_with,m%C3%BCller&search_scope=personen');
    assert.equal(none.body.total, 0);
  });

  test('repeated query parameters are ANDed', async () => {
    const one = await json('/search?query=creator,contains,m%C3%BCller');
    const both = await json('/search?query=creator,contains,m%C3%BCller&query=title,contains,schicht');
    assert.ok(both.body.total > 0);
    assert.ok(both.body.total < one.body.total);
  });

  test('search_scope restricts the kind of result', async () => {
    const personen = await json('/search?query=any,contains,m%C3%BCller&search_scope=personen');
    const werke = await json('/search?query=any,contains,m%C3%BCller&search_scope=werke');
    const all = await json('/search?query=any,contains,m%C3%BCller');
    assert.ok(personen.body.total > 0 && werke.body.total > 0);
    assert.ok(personen.body.treffer.every((h: { typ: string }) => h.typ === 'person'));
    assert.ok(werke.body.treffer.every((h: { typ: string }) => h.typ === 'werk'));
    assert.equal(all.body.total, personen.body.total + werke.body.total);
  });

  test("SQL's LIKE wildcards are no wildcards: an underscore or percent sign is no letter", async () => {
    assert.equal((await json('/search?query=any,contains,m_ller')).body.total, 0);
    // A term without letters or digits finds nothing.
    assert.deepEqual(
      [
        (await json('/search?query=any,contains,_')).body.total,
        (await json('/search?query=any,contains,%25')).body.total,
      ],
      [0, 0],
    );
  });

  test('pages of 10 with total, next and previous; the same URL gives the same order', async () => {
    await server.db.query(
      `INSERT INTO werk (person_id, titel) SELECT 1, 'Paginastudie ' || g FROM generate_series(1, 25) AS g`,
    );
    try {
      const first = await json('/search?query=any,contains,paginastudie');
      assert.equal(first.body.total, 25);
      assert.equal(first.body.treffer.length, 10);
      assert.equal(first.body.previous, null);
      assert.equal(
        first.body.next,
        `${server.origin}/search?query=any,contains,paginastudie&tab=default_tab&search_scope=default_scope&vid=portfolio&offset=10`,
      );
      const second = await json('/search?query=any,contains,paginastudie&offset=10');
      assert.equal(
        second.body.previous,
        `${server.origin}/search?query=any,contains,paginastudie&tab=default_tab&search_scope=default_scope&vid=portfolio`,
      );
      const third = await json('/search?query=any,contains,paginastudie&offset=20');
      const urls = new Set(
        [...first.body.treffer, ...second.body.treffer, ...third.body.treffer].map((h: { url: string }) => h.url),
      );
      assert.equal(urls.size, 25);
      const again = await json('/search?query=any,contains,paginastudie&offset=10');
      assert.deepEqual(again.body, second.body);
      // Past the end, within the pages a search has: an empty page with the total and a way back.
      const past = await json('/search?query=any,contains,paginastudie&offset=500');
      assert.equal(past.status, 200);
      assert.deepEqual(past.body.treffer, []);
      assert.equal(past.body.total, 25);
      assert.match(past.body.previous, /offset=20$/);
    } finally {
      await server.db.query(`DELETE FROM werk WHERE titel LIKE 'Paginastudie %'`);
    }
  });

  test('the form redirects to the canonical search URL', async () => {
    const res = await fetch(
      `${server.origin}/search?field=creator&match=contains&term=M%C3%BCller&search_scope=personen&tab=default_tab&vid=portfolio`,
      { redirect: 'manual' },
    );
    assert.equal(res.status, 303);
    assert.equal(
      res.headers.get('location'),
      `${server.origin}/search?query=creator,contains,M%C3%BCller&tab=default_tab&search_scope=personen&vid=portfolio`,
    );
  });

  test('the XML lists the query, the hits with their rank, the facets and their links', async () => {
    const xml = await (
      await fetch(`${server.origin}/search.xml?query=creator,exact,max%20muster&search_scope=personen`)
    ).text();
    const self = `${server.origin}/search?query=creator,exact,max%20muster&amp;tab=default_tab&amp;search_scope=personen&amp;vid=portfolio`;
    assert.equal(
      xml,
      [
        '<?xml version="1.0" encoding="UTF-8"?>',
        `<suche ref="${self}" tab="default_tab" search_scope="personen" vid="portfolio" sortby="rank" total="1" total_is_exact="true" offset="0" limit="10">`,
        '  <query field="creator" match="exact">max muster</query>',
        `  <treffer typ="person" ref="${server.origin}/person/max-muster" rank="26">`,
        '    <titel>Max Muster</titel>',
        '  </treffer>',
        '  <facets>',
        '    <facet name="rtype"/>',
        '    <facet name="creator">',
        `      <wert count="1" ref="${self}&amp;facet=creator,include,Max%20Muster">Max Muster</wert>`,
        '    </facet>',
        '    <facet name="decade"/>',
        '  </facets>',
        '</suche>',
        '',
      ].join('\n'),
    );
  });

  test('vid selects the HTML title and stylesheet, and links keep tab and vid', async () => {
    await server.db.query(
      `INSERT INTO werk (person_id, titel) SELECT 1, 'Druckstudie ' || g FROM generate_series(1, 12) AS g`,
    );
    try {
      const html = await (await fetch(`${server.origin}/search?query=any,contains,druckstudie&vid=druck`)).text();
      assert.match(html, /<title>Search \(print\): any contains &#34;druckstudie&#34; · Portfolio<\/title>/);
      assert.match(html, /<link rel="stylesheet" href="css\/druck\.css">/);
      assert.match(
        html,
        /<a rel="next" href="search\?query=any,contains,druckstudie&amp;tab=default_tab&amp;search_scope=default_scope&amp;vid=druck&amp;offset=10">/,
      );
    } finally {
      await server.db.query(`DELETE FROM werk WHERE titel LIKE 'Druckstudie %'`);
    }
  });
});

describe('remembered results', () => {
  test('a change to the works shows in the next search at once', async () => {
    const url = '/search?query=title,contains,Quellwasserstudie';
    assert.equal((await json(url)).body.total, 0);
    const [row] = await server.db.query<{ id: number }>(
      `INSERT INTO werk (person_id, titel) VALUES (1, 'Quellwasserstudie') RETURNING id`,
    );
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
    await server.db.query(
      `INSERT INTO person (slug, vorname, nachname, username, image) VALUES ('quirin-quellenberg', 'Quirin', 'Quellenberg', 'qq', '/img/x.svg')`,
    );
    assert.equal((await json(url)).body.total, 1);
    assert.equal((await json('/index.json')).body.personen.anzahl, before + 1);
    await server.db.query(`DELETE FROM person WHERE slug = 'quirin-quellenberg'`);
    assert.equal((await json(url)).body.total, 0);
  });

  test("a renamed person's works count under the new name in the creator facet, and its link finds them", async () => {
    const [person] = await server.db.query<{ id: number }>(
      `INSERT INTO person (slug, vorname, nachname, username, image) VALUES ('rike-rabenfeld', 'Rike', 'Rabenfeld', 'rr', '/img/x.svg') RETURNING id`,
    );
    try {
      await server.db.query(
        `INSERT INTO werk (person_id, titel, beschreibung, art, jahr) VALUES ($1, 'Quarzlicht I', '', 'Zeichnung', 2001), ($1, 'Quarzlicht II', '', 'Zeichnung', 2002)`,
        [person?.id],
      );
      const creators = async () =>
        (await json('/search?query=title,contains,quarzlicht')).body.facets.creator as {
          value: string;
          count: number;
          url: string;
        }[];
      assert.deepEqual(
        (await creators()).map((f) => [f.value, f.count]),
        [['Rike Rabenfeld', 2]],
      );
      await server.db.query(`UPDATE person SET nachname = 'Rabenstein' WHERE id = $1`, [person?.id]);
      await server.db.query(
        `INSERT INTO werk (person_id, titel, beschreibung, art, jahr) VALUES ($1, 'Quarzlicht III', '', 'Zeichnung', 2003)`,
        [person?.id],
      );
      const [facet] = await creators();
      assert.deepEqual([facet?.value, facet?.count], ['Rike Rabenstein', 3]);
      const applied = await json(new URL(facet?.url as string).pathname + new URL(facet?.url as string).search);
      assert.equal(applied.body.total, 3);
      assert.ok(applied.body.treffer.every((h: { person: { name: string } }) => h.person.name === 'Rike Rabenstein'));
    } finally {
      await server.db.query(`DELETE FROM person WHERE slug = 'rike-rabenfeld'`);
    }
  });

  test('two persons of one name are one creator value; excluding it leaves out the works of both', async () => {
    await server.db.query(`INSERT INTO person (slug, vorname, nachname, username, image) VALUES
      ('uta-ulmental', 'Uta', 'Ulmental', 'uu1', '/img/x.svg'), ('uta-ulmental-2', 'Uta', 'Ulmental', 'uu2', '/img/x.svg'),
      ('vera-vogelsang', 'Vera', 'Vogelsang', 'vv', '/img/x.svg')`);
    try {
      await server.db.query(`INSERT INTO werk (person_id, titel, art) SELECT p.id, 'Zinnoberstudie ' || p.slug, 'Zeichnung' FROM person p
                              WHERE p.slug IN ('uta-ulmental', 'uta-ulmental-2', 'vera-vogelsang')`);
      const url = '/search?query=title,contains,zinnoberstudie';
      const creators = (await json(url)).body.facets.creator as { value: string; count: number }[];
      assert.deepEqual(
        creators.map((f) => [f.value, f.count]),
        [
          ['Uta Ulmental', 2],
          ['Vera Vogelsang', 1],
        ],
      );
      const left = await json(`${url}&facet=creator,exclude,Uta%20Ulmental`);
      assert.deepEqual(
        left.body.treffer.map((h: { titel: string }) => h.titel),
        ['Zinnoberstudie vera-vogelsang'],
      );
      const only = await json(`${url}&facet=creator,include,Uta%20Ulmental`);
      assert.equal(only.body.total, 2);
    } finally {
      await server.db.query(`DELETE FROM person WHERE slug IN ('uta-ulmental', 'uta-ulmental-2', 'vera-vogelsang')`);
    }
  });

  test("a work's creator name is the person's, whatever a statement writes and whenever a rename commits", async () => {
    const [person] = await server.db.query<{ id: number }>(
      `INSERT INTO person (slug, vorname, nachname, username, image) VALUES ('wim-wendt', 'Wim', 'Wendt', 'ww', '/img/x.svg') RETURNING id`,
    );
    try {
      const name = async () =>
        (await server.db.query<{ urheber: string }>(`SELECT urheber FROM werk WHERE person_id = $1`, [person?.id])).map(
          (r) => r.urheber,
        );
      // A rename sent while a work is added waits for it, then writes it with the new name too.
      let renamed: Promise<unknown> = Promise.resolve();
      await server.db.transaction(async (tx) => {
        await tx.query(`INSERT INTO werk (person_id, titel) VALUES ($1, 'Wendeltreppe')`, [person?.id]);
        renamed = server.db.query(`UPDATE person SET vorname = 'Wilma' WHERE id = $1`, [person?.id]);
        await new Promise((resolve) => setTimeout(resolve, 200));
      });
      await renamed;
      assert.deepEqual(await name(), ['Wilma Wendt']);
      await server.db.query(`UPDATE werk SET urheber = 'Jemand Anderes' WHERE person_id = $1`, [person?.id]);
      assert.deepEqual(await name(), ['Wilma Wendt']);
      await assert.rejects(server.db.query(`INSERT INTO werk (person_id, titel) VALUES (-1, 'Niemandes')`), {
        code: '23503',
      });
    } finally {
      await server.db.query(`DELETE FROM person WHERE slug = 'wim-wendt'`);
    }
  });

  test('kept documents: every representation shows a change at once, and an unchanged page keeps its ETag', async () => {
    const url = '/search?query=title,contains,Brunnenstudie';
    const get = async (format: string, etag?: string) => {
      const res = await fetch(
        `${server.origin}${url.replace('/search', `/search.${format}`)}`,
        etag ? { headers: { 'if-none-match': etag } } : {},
      );
      return { status: res.status, etag: res.headers.get('etag'), text: await res.text() };
    };
    const before = { json: await get('json'), xml: await get('xml'), html: await get('html') };
    for (const format of ['json', 'xml', 'html'] as const) {
      assert.doesNotMatch(before[format].text, /Brunnenstudie am Hang/);
      // Asked again, the kept document answers with the same ETag: 304.
      assert.equal((await get(format, before[format].etag ?? '')).status, 304);
    }
    const [row] = await server.db.query<{ id: number }>(
      `INSERT INTO werk (person_id, titel) VALUES (1, 'Brunnenstudie am Hang') RETURNING id`,
    );
    for (const format of ['json', 'xml', 'html'] as const) {
      const after = await get(format, before[format].etag ?? '');
      assert.equal(after.status, 200, format);
      // The HTML list marks the matched word.
      assert.match(after.text.replace(/<\/?mark>/g, ''), /Brunnenstudie am Hang/);
      assert.match(after.text, new RegExp(`werk/${row?.id}\\b`));
      assert.notEqual(after.etag, before[format].etag);
    }
    await server.db.query('DELETE FROM werk WHERE id = $1', [row?.id]);
    assert.doesNotMatch((await get('xml')).text, /Brunnenstudie am Hang/);
  });

  test('a person list page and the start page show a new person at once', async () => {
    const [first, start] = [(await json('/personen')).body, (await json('/')).body];
    await server.db.query(
      `INSERT INTO person (slug, vorname, nachname, username, image) VALUES ('aaron-aal', 'Aaron', 'Aal', 'aaal', '/img/x.svg')`,
    );
    const [list, counts] = [(await json('/personen')).body, (await json('/')).body];
    assert.equal(list.total, first.total + 1);
    assert.equal(counts.personen.anzahl, start.personen.anzahl + 1);
    assert.ok(JSON.stringify(list).includes('/person/aaron-aal'));
    await server.db.query(`DELETE FROM person WHERE slug = 'aaron-aal'`);
    assert.equal((await json('/personen')).body.total, first.total);
  });

  test('requests that arrive together share data version reads, and each sees every change made before it came', async () => {
    let reads = 0;
    const counted: Db = {
      ...server.db,
      query: (sql, params, options) => {
        if (options?.name === 'data-version') reads += 1;
        return server.db.query(sql, params, options);
      },
    };
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

  test('requests that wait for a data version read that fails fail with it, without a second read', async () => {
    let reads = 0;
    let fail: (err: Error) => void = () => undefined;
    const failing: Db = {
      ...server.db,
      query: (sql, params, options) => {
        if (options?.name !== 'data-version') return server.db.query(sql, params, options);
        reads += 1;
        // The first read fails when the test says; the ones after it are answered.
        return reads === 1
          ? new Promise((_, reject) => {
              fail = reject;
            })
          : server.db.query(sql, params, options);
      },
    };
    const version = new DataVersion(failing);
    const first = version.current().then(
      () => 'answered',
      (err: Error) => err.message,
    );
    const waiting = Array.from({ length: 8 }, () =>
      version.current().then(
        () => 'answered',
        (err: Error) => err.message,
      ),
    );
    fail(new Error('database unavailable: the read got no answer'));
    assert.deepEqual(
      await Promise.all([first, ...waiting]),
      Array.from({ length: 9 }, () => 'database unavailable: the read got no answer'),
    );
    assert.equal(reads, 1);
    // The next request reads again.
    assert.equal(typeof (await version.current()), 'bigint');
    assert.equal(reads, 2);
  });

  test('the data version moves once per changing statement, in the same transaction', async () => {
    const version = async () =>
      Number((await server.db.query<{ n: string }>('SELECT n::text AS n FROM data_version'))[0]?.n);
    const start = await version();
    await server.db.query(`UPDATE werk SET jahr = jahr WHERE person_id = 1`);
    assert.equal(await version(), start + 1);
    await assert.rejects(
      server.db.transaction(async (tx) => {
        await tx.query(`UPDATE werk SET jahr = jahr WHERE person_id = 1`);
        throw new Error('rolled back');
      }),
    );
    assert.equal(await version(), start + 1);
  });
});

describe('search indexes', () => {
  test('works in every block of ids are found (ranked alike, they come in the order of their ids)', async () => {
    const ids = [65_535, 65_536, 200_000];
    await server.db.exec(
      `INSERT INTO werk (id, person_id, titel) SELECT i, (SELECT min(id) FROM person), 'Blockprobe ' || i FROM unnest(ARRAY[${ids.join(', ')}]) AS i`,
    );
    try {
      const res = await fetch(`${server.origin}/search.json?query=title,contains,blockprobe`);
      const found = ((await res.json()) as { treffer: { titel: string }[] }).treffer.map((t) => t.titel);
      assert.deepEqual(
        found,
        ids.map((i) => `Blockprobe ${i}`),
      );
    } finally {
      await server.db.exec(`DELETE FROM werk WHERE id IN (${ids.join(', ')})`);
    }
  });
});
