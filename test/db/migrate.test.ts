// Migrations on a database that has rows (lib/db/migrate.ts, prepareDatabase in lib/db/index.ts):
// the search index's stop words added to the rows there are give what a row written now gets,
// the works there are get their creator's name, and a migration that runs longer than a
// request's statement still finishes.
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, test } from 'node:test';
import { readConfig } from '../../lib/config.ts';
import { migrate, openPostgres, prepareDatabase } from '../../lib/db/index.ts';
import type { TestDb } from '../helpers.ts';
import { backend, openTestDb } from '../helpers.ts';

const sqlDir = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'sql');
const dirs: string[] = [];

/** A folder with the migrations up to `last` (and the demo data), or all of them and `extra`. */
function sqlFolder(last: string | null, extra: Record<string, string> = {}): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'portfolio-sql-'));
  dirs.push(dir);
  for (const file of readdirSync(sqlDir)) {
    if (last === null || !/^\d{3}_/.test(file) || file.slice(0, 3) <= last)
      copyFileSync(path.join(sqlDir, file), path.join(dir, file));
  }
  for (const [file, text] of Object.entries(extra)) writeFileSync(path.join(dir, file), text);
  return dir;
}

let testDb: TestDb;

before(async () => {
  testDb = await openTestDb();
});
after(async () => {
  await testDb.drop();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

test('the rows there were get the index entries a row written now gets: stop words too', async () => {
  const { db } = testDb;
  await migrate(db, sqlFolder('009'));
  await db.exec(
    `INSERT INTO person (id, vorname, nachname, slug, username, image) VALUES (9001, 'Anna', 'von der Au', 'anna-von-der-au', 'avda', '')`,
  );
  await db.exec(`INSERT INTO werk (person_id, titel, beschreibung, art, jahr) VALUES
    (9001, 'Die Mühle im Tal', 'Aquarell aus der Reihe „Das Tal und der Weg“', 'Kunst am Bau', 1990),
    (9001, 'Weg', '', 'Roman', NULL),
    (9001, 'Ohne Stoppwort', '', '', 2001),
    (9001, 'Zahlen', '12e3x der Haus', 'Kunst am Bau', 1999)`);
  const [before] = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM werk WHERE suche @@ $$'t:im'$$::tsquery`,
  );
  assert.equal(before?.n, 0, 'before: stop words are not in the index');
  await migrate(db, sqlDir);
  const [differ] = await db.query<{ werke: number; personen: number }>(`
    SELECT (SELECT count(*)::int FROM werk w WHERE w.suche IS DISTINCT FROM search_werk(w.suche_titel,
              (SELECT p.suche_name FROM person p WHERE p.id = w.person_id), search_fold(w.beschreibung), search_fold(w.art), w.jahr)) AS werke,
           (SELECT count(*)::int FROM person p WHERE p.suche IS DISTINCT FROM array_to_tsvector(search_lexemes('c', p.suche_name))) AS personen`);
  assert.deepEqual(differ, { werke: 0, personen: 0 });
  const found = async (query: string) =>
    (
      await db.query<{ titel: string }>(`SELECT titel FROM werk WHERE suche @@ $1::tsquery ORDER BY titel`, [query])
    ).map((r) => r.titel);
  assert.deepEqual(await found(`'t:im'`), ['Die Mühle im Tal']);
  // The description's words, not its type's: "am" is in the type only.
  assert.deepEqual(await found(`'d:und' & 'd:der'`), ['Die Mühle im Tal']);
  assert.deepEqual(await found(`'d:am'`), []);
  assert.deepEqual(await found(`'r:am'`), ['Die Mühle im Tal', 'Zahlen']);
  assert.deepEqual(await found(`'c:von' & 'c:der'`), ['Die Mühle im Tal', 'Ohne Stoppwort', 'Weg', 'Zahlen']);
  // A word the earlier lexemes missed, beside one to_tsvector splits in two.
  assert.deepEqual(await found(`'d:haus'`), ['Zahlen']);
  assert.deepEqual(await found(`'t:weg'`), ['Weg']);
  const [person] = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM person WHERE suche @@ $$'c:von'$$::tsquery`,
  );
  assert.equal(person?.n, 1);
});

test("the works there were get their creator's name, as a work written now does", async () => {
  const own = await openTestDb();
  const { db } = own;
  try {
    await migrate(db, sqlFolder('010'));
    await db.exec(`INSERT INTO person (id, vorname, nachname, slug, username, image) VALUES
      (9101, 'Ida', 'Öztürk', 'ida-oeztuerk', 'io', ''), (9102, 'Ida', 'Öztürk', 'ida-oeztuerk-2', 'io2', '')`);
    await db.exec(`INSERT INTO werk (person_id, titel) VALUES (9101, 'Erstes'), (9101, 'Zweites'), (9102, 'Drittes')`);
    await migrate(db, sqlDir);
    await db.exec(`INSERT INTO werk (person_id, titel) VALUES (9102, 'Viertes')`);
    const rows = await db.query<{ titel: string; urheber: string }>(
      `SELECT titel, urheber FROM werk WHERE person_id IN (9101, 9102) ORDER BY id`,
    );
    assert.deepEqual(
      rows.map((r) => [r.titel, r.urheber]),
      [
        ['Erstes', 'Ida Öztürk'],
        ['Zweites', 'Ida Öztürk'],
        ['Drittes', 'Ida Öztürk'],
        ['Viertes', 'Ida Öztürk'],
      ],
    );
    await db.exec(`UPDATE werk SET person_id = 9101 WHERE titel = 'Viertes'`);
    await db.exec(`UPDATE person SET vorname = 'Ada' WHERE id = 9101`);
    const moved = await db.query<{ titel: string; urheber: string }>(
      `SELECT titel, urheber FROM werk WHERE person_id IN (9101, 9102) ORDER BY id`,
    );
    assert.deepEqual(
      moved.map((r) => [r.titel, r.urheber]),
      [
        ['Erstes', 'Ada Öztürk'],
        ['Zweites', 'Ada Öztürk'],
        ['Drittes', 'Ida Öztürk'],
        ['Viertes', 'Ada Öztürk'],
      ],
    );
  } finally {
    await own.drop();
  }
});

test('a migration longer than STATEMENT_TIMEOUT_MS runs to its end on a connection of its own', {
  skip: backend !== 'postgres' && 'PGlite has no statement time-out',
}, async () => {
  const slow = sqlFolder(null, { '999_slow.sql': 'SELECT pg_sleep(0.6);' });
  const config = readConfig({
    DATABASE_URL: testDb.url as string,
    STATEMENT_TIMEOUT_MS: '200',
    DEMO_DATA: '0',
    LOG_DIR: '-',
  });
  // A request's connections give up on it.
  const short = openPostgres({ connectionString: testDb.url as string, statementTimeoutMs: 200 });
  try {
    await assert.rejects(migrate(short, slow), /999_slow/);
    await prepareDatabase(short, { ...config, sqlDir: slow });
    const done = await short.query<{ version: string }>(
      `SELECT version FROM schema_migrations WHERE version = '999_slow'`,
    );
    assert.equal(done.length, 1);
  } finally {
    await short.close();
  }
});
