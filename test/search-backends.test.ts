// PGlite and PostgreSQL give the same hits in the same order, with the same ranks, facets and
// suggestions (docs/interface.md, Search): the folding, stemming and ordering of the search are
// the database's, so both are asked the same searches on the same demo data side by side.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { openPglite } from '../lib/db/index.ts';
import type { TestServer } from './helpers.ts';
import { backend, startTestServer } from './helpers.ts';

const searches = [
  'query=any,contains,m%C3%BCller',
  'query=any,contains,mueller',
  'query=any,contains,h%C3%A4user',
  'query=any,contains,nebel%20hafen',
  'query=any,contains,bahnhof',
  'query=any,contains,schicht',
  'query=title,contains,%22im%20nebel%22',
  'query=title,contains,nebel%20OR%20deich',
  'query=any,contains,schicht%20NOT%20nacht',
  'query=any,contains,nacht*',
  'query=creator,contains,m%C3%BC%3Fler',
  'query=title,exact,Nachtschicht',
  'query=title,begins_with,das%20haus',
  'query=creator,begins_with,j%C3%BCr',
  'query=desc,contains,leinwand',
  'query=rtype,contains,roman',
  'query=cdate,contains,1988',
  'query=any,contains,muellr',
  'query=any,contains,%C3%BCll',
  'query=any,contains,der',
  'query=any,contains,%C3%BCber',
  'query=any,contains,stra%C3%9Fe',
  'query=any,contains,STRASSE',
  'query=any,contains,licht%20schatten',
  'query=any,contains,fr%C3%BCh*',
  'query=any,contains,m%C3%BCller&sortby=title',
  'query=any,contains,m%C3%BCller&sortby=author',
  'query=any,contains,m%C3%BCller&sortby=date_d',
  'query=any,contains,m%C3%BCller&sortby=date_a',
  'query=any,contains,m%C3%BCller&facet=rtype,include,Fotografie',
  'query=any,contains,nebel%20im',
  'query=any,contains,die%20nebel%20der',
  'query=any,contains,nebel%20NOT%20im',
  'query=title,exact,hafen%20im%20nebel',
  'query=any,contains,%22in%20der%22%20arbeit',
  'query=title,begins_with,die%20e',
  'query=any,contains,der%20die%20das',
  'query=any,contains,ge*%20OR%20st*&search_scope=werke',
  'query=any,contains,ge*%20OR%20st*&offset=10',
  'query=any,contains,nebel,OR&query=title,contains,deich',
];

let postgres: TestServer;
let pglite: TestServer;

before(async () => {
  if (backend !== 'postgres') return;
  postgres = await startTestServer({ NODE_ENV: 'production' });
  const db = await openPglite({ dataDir: null });
  pglite = await startTestServer({ NODE_ENV: 'production' }, { db: { db, url: null, drop: () => db.close() } });
});
after(async () => {
  await postgres?.close();
  await pglite?.close();
});

test('PGlite and PostgreSQL answer every search alike', {
  skip: backend !== 'postgres' && 'needs PostgreSQL beside PGlite (DATABASE_URL)',
}, async () => {
  let hits = 0;
  for (const search of searches) {
    const [a, b] = await Promise.all(
      [postgres, pglite].map(async (server) => {
        const res = await fetch(`${server.origin}/search.json?${search}`);
        assert.equal(res.status, 200, search);
        return (await res.text()).replaceAll(server.origin, 'ORIGIN');
      }),
    );
    assert.equal(b, a, search);
    hits += (JSON.parse(a as string) as { total: number }).total;
  }
  // Not a comparison of empty lists.
  assert.ok(hits > 100, `${hits} hits in all`);
});
