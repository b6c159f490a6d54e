// The word index's snapshot file (lib/search/snapshot.ts, sync.ts; docs/operations.md, The search
// index): a start takes the index from it and reads only the changes since, and holds what an
// index read anew holds; a file of another database, one cut short, or one whose changes since
// are no longer all noted is not taken, and everything is read from the database instead.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Db } from '../../lib/db/index.ts';
import type { DataVersion } from '../../lib/db/index.ts';
import { openPglite } from '../../lib/db/index.ts';
import { openSnapshot, writeSnapshot } from '../../lib/search/snapshot.ts';
import { IndexSync } from '../../lib/search/sync.ts';
import { WordIndex } from '../../lib/search/word-index.ts';
import type { TestDb } from '../helpers.ts';
import { backend, openTestDb } from '../helpers.ts';
import { contents, openDemoDb } from './index-contents.ts';
import { databaseEnv, startProgram } from '../program.ts';

/** The program's own PGlite, opened while it is stopped. */
async function withPglite(dataDir: string, use: (db: Db) => Promise<unknown>): Promise<void> {
  const pglite = await openPglite({ dataDir });
  try {
    await use(pglite);
  } finally {
    await pglite.close();
  }
}

let testDb: TestDb;
let db: Db;
let version: DataVersion;
let dir: string;

before(async () => {
  ({ testDb, version } = await openDemoDb());
  db = testDb.db;
  dir = mkdtempSync(path.join(os.tmpdir(), 'portfolio-snapshot-'));
});
after(async () => {
  await testDb.drop();
  rmSync(dir, { recursive: true, force: true });
});

/** A started index with the snapshot file given (or none), its notes and its errors. */
async function started(snapshot: string | null): Promise<{ sync: IndexSync; notes: string[]; errors: string[] }> {
  const notes: string[] = [];
  const errors: string[] = [];
  const sync = new IndexSync(db, { snapshot, onError: (m) => errors.push(m), onNote: (m) => notes.push(m) });
  await sync.start();
  return { sync, notes, errors };
}

/** The index with every change made before. */
async function current(sync: IndexSync): Promise<WordIndex> {
  return (await sync.current(await version.current())).index;
}

let works = 0;
async function addWork(title: string): Promise<void> {
  await db.query(
    `INSERT INTO werk (person_id, titel, beschreibung, art, jahr) SELECT id, $1, 'Neu', 'Gemälde', 1999 FROM person ORDER BY id LIMIT 1`,
    [`${title} ${++works}`],
  );
}

describe('the search index snapshot', () => {
  test('a start takes the index from the file written at the stop and the changes since: what an index read anew holds', async () => {
    const file = path.join(dir, 'taken.snapshot');
    const first = await started(file);
    assert.equal(first.sync.stats.reloads, 1);
    await addWork('Leuchtturmwärter');
    await current(first.sync);
    await first.sync.close();
    assert.ok(statSync(file).size > 0);
    assert.ok(first.sync.stats.snapshotsWritten >= 1);
    // Changes after the file was written: notes the next start reads.
    await addWork('Nebelhorn');
    await db.query(`UPDATE werk SET titel = 'Umbenannt' WHERE id = (SELECT min(id) FROM werk)`);
    const second = await started(file);
    assert.deepEqual(second.errors, []);
    assert.deepEqual([second.sync.stats.reloads, second.sync.stats.snapshotsTaken], [0, 1]);
    assert.match(
      second.notes.join('\n'),
      /search index: taken from .*taken\.snapshot \(\d+ persons, \d+ works, version \d+ → \d+\)/,
    );
    const anew = await started(null);
    assert.deepEqual(contents(await current(second.sync)), contents(await current(anew.sync)));
    assert.ok(
      [...((await current(second.sync)).werke.lexemes.of('t:nebelhorn') ?? [])].length === 1,
      'the work added after the file was written',
    );
    await Promise.all([second.sync.close(), anew.sync.close()]);
  });

  test('a file written from another database is not taken: everything is read, and the file written anew', async () => {
    const file = path.join(dir, 'other.snapshot');
    const index = new WordIndex();
    await writeSnapshot(
      file,
      { database: '1/elsewhere', timeline: '00000001', snapshot: '1:1:', version: '1', endianness: os.endianness() },
      index,
    );
    const { sync, notes } = await started(file);
    assert.deepEqual([sync.stats.reloads, sync.stats.snapshotsTaken], [1, 0]);
    assert.match(
      notes.join('\n'),
      /other\.snapshot not taken, reading everything: it was written from another database \(1\/elsewhere, not \d+\/\d+\/\w+\/\d+\/\d+\)/,
    );
    await sync.close();
    // The file now is this database's.
    const written = openSnapshot(file);
    await written.restore(new WordIndex());
    written.close();
    const again = await started(file);
    assert.equal(again.sync.stats.snapshotsTaken, 1);
    await again.sync.close();
  });

  test('a file cut short, or not a snapshot at all, is not taken', async () => {
    const file = path.join(dir, 'cut.snapshot');
    const first = await started(file);
    await first.sync.close();
    truncateSync(file, Math.floor(statSync(file).size / 2));
    const cut = await started(file);
    assert.deepEqual([cut.sync.stats.reloads, cut.sync.stats.snapshotsTaken], [1, 0]);
    assert.match(
      cut.notes.join('\n'),
      /cut\.snapshot not taken, reading everything: the file ends in the middle of a part/,
    );
    await cut.sync.close();
    writeFileSync(file, 'GIF89a and then nothing of a snapshot');
    const other = await started(file);
    assert.match(other.notes.join('\n'), /not taken, reading everything: it is not a snapshot of this layout/);
    assert.equal(other.sync.stats.reloads, 1);
    await other.sync.close();
  });

  test('a file whose bytes changed after it was written is not taken', async () => {
    const file = path.join(dir, 'changed.snapshot');
    const first = await started(file);
    await first.sync.close();
    const written = readFileSync(file);
    // One bit in the middle (in a part), and one in the hash at the end.
    for (const [at, reason] of [
      [Math.floor(written.length / 2), /.+/],
      [written.length - 1, /its bytes are not the ones written \(their SHA-256 differs\)/],
    ] as const) {
      const bytes = Buffer.from(written);
      bytes[at]! ^= 1;
      writeFileSync(file, bytes);
      const changed = await started(file);
      assert.deepEqual([changed.sync.stats.reloads, changed.sync.stats.snapshotsTaken], [1, 0], `bit ${at}`);
      const note = changed.notes.join('\n');
      assert.match(note, /changed\.snapshot not taken, reading everything: /);
      assert.match(note, reason);
      await changed.sync.close();
      writeFileSync(file, written);
    }
  });

  test('a file from a later state than the database (a copy restored from before) is not taken', async () => {
    const file = path.join(dir, 'later.snapshot');
    const first = await started(file);
    await first.sync.close();
    const header = openSnapshot(file);
    const later = { ...header.header, version: String(BigInt(header.header.version) + 1000n) };
    const index = new WordIndex();
    await header.restore(index);
    header.close();
    await writeSnapshot(file, later, index);
    const behind = await started(file);
    assert.deepEqual([behind.sync.stats.reloads, behind.sync.stats.snapshotsTaken], [1, 0]);
    assert.match(
      behind.notes.join('\n'),
      /later\.snapshot not taken, reading everything: the database's data version \d+ is behind the file's \d+/,
    );
    await behind.sync.close();
  });

  test('a writer that is gone leaves no file behind once the next one writes', async () => {
    const file = path.join(dir, 'left.snapshot');
    const gone = `${file}.999999999.new`;
    writeFileSync(gone, 'half a snapshot');
    const { sync } = await started(file);
    await sync.close();
    assert.equal(existsSync(gone), false);
    assert.ok(existsSync(file));
  });

  test('a file older than the change notes kept is not taken', async () => {
    const file = path.join(dir, 'old.snapshot');
    const first = await started(file);
    await first.sync.close();
    await addWork('Vergessen');
    // Notes deleted after the file was written (as after keepChangesMs): the changes since are not all known.
    await db.query('UPDATE search_change_pruned SET xid = pg_current_xact_id()');
    // As after a real pruning, every transaction of the server began after it: on PostgreSQL
    // another test file's, in a database of its own, may still be under way (up to 10 s).
    for (let i = 0; i < 100; i++) {
      const [row] = await db.query<{ past: boolean }>(
        'SELECT pg_snapshot_xmin(pg_current_snapshot()) > (SELECT xid FROM search_change_pruned) AS past',
      );
      if (row?.past) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const old = await started(file);
    assert.deepEqual([old.sync.stats.reloads, old.sync.stats.snapshotsTaken], [1, 0]);
    assert.match(
      old.notes.join('\n'),
      /old\.snapshot not taken, reading everything: changes since it was written are no longer all noted/,
    );
    assert.equal([...((await current(old.sync)).werke.lexemes.of('t:vergessen') ?? [])].length, 1);
    await old.sync.close();
  });

  test('a file that is not there is read from the database without a word, and written', async () => {
    const file = path.join(dir, 'none.snapshot');
    const { sync, notes, errors } = await started(file);
    assert.deepEqual([notes, errors, sync.stats.reloads], [[], [], 1]);
    await sync.close();
    assert.ok(statSync(file).size > 0);
  });
});

describe('a restart of the server', () => {
  test('takes the index from the snapshot the stop wrote, and searches find what changed since', async () => {
    const programDir = mkdtempSync(path.join(os.tmpdir(), 'portfolio-data-'));
    const own = await openTestDb();
    const env = databaseEnv(own, programDir);
    try {
      const first = await startProgram(env);
      first.child.kill('SIGTERM');
      assert.equal(await first.exited, 0);
      first.remove();
      const file = path.join(programDir, 'search-index.snapshot');
      assert.ok(statSync(file).size > 0, 'the stop wrote the snapshot');
      // A change while the server is down.
      const added = `INSERT INTO werk (person_id, titel) SELECT id, 'Zwischenzeitlich' FROM person ORDER BY id LIMIT 1`;
      if (backend === 'postgres') await own.db.query(added);
      else await withPglite(programDir, (pglite) => pglite.query(added));
      const second = await startProgram(env);
      try {
        assert.match(
          second.output(),
          /portfolio: search index: taken from .*search-index\.snapshot \(\d+ persons, \d+ works, version \d+ → \d+\)/,
        );
        for (const [word, total] of [
          ['Zitronen', 1],
          ['Zwischenzeitlich', 1],
        ] as const) {
          const res = await fetch(`${second.origin}/search.json?query=any,contains,${word}`);
          assert.equal(res.status, 200);
          assert.equal(((await res.json()) as { total: number }).total, total, word);
        }
      } finally {
        second.remove();
      }
    } finally {
      await own.drop();
      rmSync(programDir, { recursive: true, force: true });
    }
  });
});
