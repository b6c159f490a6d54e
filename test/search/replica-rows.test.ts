// A search's hits come from the index, which follows the primary; its page's rows are read where
// the request reads (lib/search/searcher.ts, requestSearch). A replica behind the primary lacks a work
// added since: that row is read from the primary, so the page shows every hit the index counts.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { DataVersion } from '../../lib/db/index.ts';
import { parseCondition, parseLines } from '../../lib/search/language.ts';
import { Searcher } from '../../lib/search/searcher.ts';
import type { SearchSpec } from '../../lib/search/spec.ts';
import type { TestDb } from '../helpers.ts';
import { openDemoDb } from './index-contents.ts';

let primary: TestDb;
/** The demo data as the primary had it before the works below: a replica behind it. */
let behind: TestDb;
let searcher: Searcher;

const spec = (query: string): SearchSpec => ({
  lines: parseLines([parseCondition(query)]),
  scope: 'default_scope',
  facets: [],
  sort: 'title',
  offset: 0,
  size: 10,
});

before(async () => {
  ({ testDb: primary } = await openDemoDb());
  ({ testDb: behind } = await openDemoDb());
  await primary.db.query(
    `INSERT INTO werk (person_id, titel, beschreibung, art, jahr) SELECT p.id, t.titel, 'Neu am Deich.', 'Roman', 2024
       FROM person p, (VALUES ('Nebel am Deich'), ('Ein Deich im Winter')) AS t(titel) WHERE p.slug = 'anna-lena-schaefer'`,
  );
  searcher = new Searcher(
    primary.db,
    { cap: 1000, timeoutMs: 2000, concurrency: 2, waitMs: 2000 },
    { onError: (message) => assert.fail(message), snapshot: null },
  );
  await searcher.start();
});

after(async () => {
  await searcher?.close();
  await primary?.drop();
  await behind?.drop();
});

test("rows a replica does not have yet are read from the primary, in the page's order", async () => {
  const version = new DataVersion(primary.db);
  const onPrimary = await searcher.forRequest(() => version.current(), primary.db).find(spec('any,contains,deich'));
  const titles = onPrimary.hits.map((h) => h.titel);
  assert.ok(
    titles.includes('Nebel am Deich') && titles.includes('Ein Deich im Winter') && titles.length >= 3,
    titles.join(', '),
  );
  const onReplica = await searcher.forRequest(() => version.current(), behind.db).find(spec('any,contains,deich'));
  assert.deepEqual(onReplica.hits, onPrimary.hits);
  assert.equal(onReplica.total, onPrimary.total);
});
