// A process's word index follows the database (lib/search/sync.ts, sql/012_search_changes.sql):
// after any changes it holds what an index read anew holds, it sees a transaction that committed
// after it last read, and it reads everything again when notes it had not read were deleted.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { createRandom } from '../../bin/lib/sample-data.ts';
import type { Db } from '../../lib/db/index.ts';
import type { DataVersion } from '../../lib/db/index.ts';
import { IndexSync } from '../../lib/search/sync.ts';
import type { WordIndex } from '../../lib/search/word-index.ts';
import type { TestDb } from '../helpers.ts';
import { backend } from '../helpers.ts';
import { contents, openDemoDb } from './index-contents.ts';

let testDb: TestDb;
let db: Db;
let version: DataVersion;
const syncs: IndexSync[] = [];

async function follow(): Promise<IndexSync> {
  const sync = new IndexSync(db, { onError: (message) => assert.fail(message) });
  await sync.start();
  syncs.push(sync);
  return sync;
}

/** The index with every change made before: caught up, or read again (in the background) and waited for. */
async function current(sync: IndexSync): Promise<WordIndex> {
  const now = await version.current();
  await sync.current(now);
  await sync.whenRead();
  return (await sync.current(now)).index;
}

before(async () => {
  ({ testDb, version } = await openDemoDb());
  db = testDb.db;
});
after(async () => {
  for (const sync of syncs) await sync.close();
  await testDb.drop();
});

describe('the word index follows the database', () => {
  test('after inserts, edits, renames and deletes it holds what an index read anew holds', async () => {
    const sync = await follow();
    const random = createRandom(3);
    const words = ['Hafen', 'Nebel', 'Mühle', 'Straße', 'Leuchtturm', 'Nachtschicht', 'Ölbild', 'Sommerabend'];
    const word = () => words[Math.floor(random() * words.length)] as string;
    for (let round = 0; round < 12; round++) {
      await db.transaction(async (tx) => {
        const [person] = await tx.query<{ id: number }>(
          `INSERT INTO person (slug, vorname, nachname, username, image) VALUES ($1, $2, $3, $1, '') RETURNING id`,
          [`folge-${round}`, word(), `Folge${round}`],
        );
        await tx.query(
          `INSERT INTO werk (person_id, titel, art, jahr, beschreibung) VALUES ($1, $2, $3, $4, $5), ($1, $6, '', NULL, '')`,
          [person?.id, `${word()} am ${word()}`, word(), 1900 + round, `Mit ${word()} und ${word()}.`, word()],
        );
      });
      const [some] = await db.query<{ id: number }>('SELECT id FROM werk ORDER BY md5(id::text || $1) LIMIT 1', [
        String(round),
      ]);
      await db.query(`UPDATE werk SET titel = $2, art = $3, jahr = $4, beschreibung = $5 WHERE id = $1`, [
        some?.id,
        `${word()} ${word()}`,
        round % 3 ? word() : '',
        round % 2 ? null : -5 + round,
        `Neu: ${word()}.`,
      ]);
      if (round % 3 === 0)
        await db.query(
          `UPDATE person SET nachname = $1, slug = $2 WHERE id = (SELECT min(id) FROM person WHERE slug LIKE 'folge-%')`,
          [`Neu${round}`, `folge-neu-${round}`],
        );
      if (round % 4 === 1) await db.query(`DELETE FROM werk WHERE id = (SELECT max(id) FROM werk)`);
      if (round % 5 === 2) await db.query(`DELETE FROM person WHERE slug = $1`, [`folge-${round - 1}`]);
      // Caught up now and then, so that notes of several rounds are read at once as well.
      if (round % 2 === 1) await current(sync);
    }
    const followed = contents(await current(sync));
    const fresh = contents(await current(await follow()));
    assert.ok(followed.works.length > 20, `${followed.works.length} works`);
    assert.deepEqual(followed, fresh);
    // What the index keeps of each row to sort and check by is the database's (what the result
    // list shows, it reads from the database).
    const kept = await db.query<{ id: number; folded: string; art: string; author: string }>(
      `SELECT w.id, coalesce(w.suche_titel, '') AS folded, w.art, search_fold(p.nachname || ' ' || p.vorname) AS author
         FROM werk w JOIN person p ON p.id = w.person_id ORDER BY w.id`,
    );
    const index = await current(sync);
    const { werke, personen } = index;
    assert.deepEqual(
      kept.map((w) => [w.id, w.folded, w.art, w.author]),
      followed.works.map(([id]) => [
        id,
        werke.folded.get(id as number),
        werke.arts.text(werke.art.get(id as number)),
        personen.author.get(werke.person.get(id as number)),
      ]),
    );
    assert.ok(kept.some((w) => w.author.startsWith('neu')));
  });

  test('a transaction that commits after a catch-up read while it ran is read at the next', {
    skip: backend !== 'postgres' && 'PGlite has one connection: no transaction runs beside a read',
  }, async () => {
    const sync = await follow();
    const client = new pg.Client({ connectionString: testDb.url as string });
    await client.connect();
    try {
      await client.query('BEGIN');
      await client.query(`INSERT INTO werk (person_id, titel) VALUES ((SELECT min(id) FROM person), 'Spätzünder')`);
      // Another change commits and is read while the first transaction still runs.
      await db.query(`UPDATE werk SET jahr = jahr WHERE id = (SELECT min(id) FROM werk)`);
      await current(sync);
      assert.equal((await current(sync)).werke.lexemes.of('t:spatzunder'), undefined);
      await client.query('COMMIT');
      const late = (await current(sync)).werke.lexemes.of('t:spatzunder');
      assert.equal(late?.size, 1);
    } finally {
      await client.end();
    }
  });

  test('notes deleted before the index read them make it read everything again', async () => {
    const sync = await follow();
    const [added] = await db.query<{ id: number }>(
      `INSERT INTO werk (person_id, titel) VALUES ((SELECT min(id) FROM person), 'Übersehenes Blatt') RETURNING id`,
    );
    // Its note ages past the ten minutes and is deleted before this index reads it. A note goes
    // only once every transaction of the server began after it, and on PostgreSQL another test
    // file's, in a database of its own, may be under way: asked again for up to 10 s.
    await db.query(`UPDATE search_change SET at = now() - interval '1 hour'`);
    const notes = async () =>
      ((await db.query<{ n: number }>('SELECT count(*)::int AS n FROM search_change'))[0] as { n: number }).n;
    await sync.prune();
    for (let i = 0; i < 100 && (await notes()) > 0; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      await sync.prune();
    }
    assert.equal(await notes(), 0);
    const index = await current(sync);
    assert.deepEqual([...(index.werke.lexemes.of('t:ubersehenes') ?? [])], [added?.id]);
    assert.deepEqual(contents(index), contents(await current(await follow())));
  });

  test('a transaction that stays open keeps the notes after it, and no process reads everything again for it', {
    skip: backend !== 'postgres' && 'PGlite has one connection: no transaction stays open beside others',
  }, async () => {
    const sync = await follow();
    const idle = new pg.Client({ connectionString: testDb.url as string });
    await idle.connect();
    try {
      // A session that wrote and stays open, as an import or a forgotten psql session does.
      await idle.query('BEGIN');
      await idle.query(`UPDATE werk SET jahr = jahr WHERE id = (SELECT min(id) FROM werk)`);
      await db.query(`INSERT INTO werk (person_id, titel) VALUES ((SELECT min(id) FROM person), 'Nach dem Offenen')`);
      await db.query(`UPDATE search_change SET at = now() - interval '1 hour'`);
      await sync.prune();
      const reloads = sync.stats.reloads;
      // The note of the work written after the open transaction began is kept: the index catches up.
      assert.equal((await current(sync)).werke.lexemes.of('t:offenen')?.size, 1);
      assert.equal(sync.stats.reloads, reloads);
    } finally {
      await idle.query('ROLLBACK');
      await idle.end();
    }
  });

  test('TRUNCATE and a statement of many rows are read as everything changed', async () => {
    const sync = await follow();
    const before = (await sync.current(await version.current())).index;
    assert.ok(before.werke.lexemes.rows.size > 0);
    await db.exec('TRUNCATE werk CASCADE');
    // While everything is read again, the index before answers, and says it is not current: its
    // rows are gone (a search reads its page's rows from the database then).
    const during = await sync.current(await version.current());
    assert.deepEqual([during.index === before, during.current], [true, false]);
    assert.equal((await current(sync)).werke.lexemes.rows.size, 0);
    const after = await sync.current(await version.current());
    assert.deepEqual([after.index === before, after.current], [false, true]);
    // More rows in one statement than are noted one by one (search_many, 10,000).
    const many = backend === 'postgres' ? 10_001 : 20;
    await db.query(
      `INSERT INTO werk (person_id, titel) SELECT (SELECT min(id) FROM person), 'Massenblatt ' || i FROM generate_series(1, $1::int) AS i`,
      [many],
    );
    const notes = await db.query<{ kind: string }>(`SELECT kind FROM search_change WHERE id = 0 OR kind = '*'`);
    if (backend === 'postgres') assert.ok(notes.some((n) => n.kind === '*'));
    assert.equal((await current(sync)).werke.lexemes.of('t:massenblatt')?.size, many);
  });
});
