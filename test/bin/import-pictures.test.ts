// bin/import-pictures.ts, run as a real child process against the run's backend: the pictures of
// a folder that the site wrote go into the database, once; anything else is left out and said so.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import sharp from 'sharp';
import type { Db } from '../../lib/db/index.ts';
import { openPglite } from '../../lib/db/index.ts';
import type { TestDb } from '../helpers.ts';
import { backend, openTestDb, root } from '../helpers.ts';

let testDb: TestDb | null = null;
let dataDir: string | null = null;
let folder: string;
let env: NodeJS.ProcessEnv;
const hash = 'a'.repeat(32);

before(async () => {
  folder = mkdtempSync(path.join(os.tmpdir(), 'portfolio-import-'));
  if (backend === 'postgres') {
    testDb = await openTestDb();
    env = { ...process.env, DATABASE_URL: testDb.url as string, PICTURES_DIR: folder };
  } else {
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'portfolio-import-data-'));
    env = { ...process.env, DATABASE_URL: '', DATA_DIR: dataDir, PICTURES_DIR: folder };
  }
  for (const width of [160, 480]) {
    const webp = await sharp({ create: { width, height: width, channels: 3, background: '#224466' } })
      .webp()
      .toBuffer();
    writeFileSync(path.join(folder, `${hash}-${width}.webp`), webp);
  }
  // Not the site's: a name it never writes, and a picture name holding something else.
  writeFileSync(path.join(folder, 'notes.txt'), 'kept by hand');
  writeFileSync(path.join(folder, `${'b'.repeat(32)}-480.webp`), '<html>not a picture</html>');
});
after(async () => {
  await testDb?.drop();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  rmSync(folder, { recursive: true, force: true });
});

function importPictures(args: string[] = []) {
  const run = spawnSync(process.execPath, ['--import', 'tsx', 'bin/import-pictures.ts', ...args], {
    cwd: root,
    env,
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { status: run.status, stdout: run.stdout, stderr: run.stderr };
}

async function withDb<T>(fn: (db: Db) => Promise<T>): Promise<T> {
  if (testDb) return fn(testDb.db);
  const db = await openPglite({ dataDir });
  try {
    return await fn(db);
  } finally {
    await db.close();
  }
}

test("the site's pictures go into the database once; a file that is no picture is left out and named", async () => {
  const first = importPictures();
  assert.equal(first.status, 1, 'one file was left out');
  assert.match(first.stdout, /2 imported, 0 there already, 1 left out/);
  assert.match(first.stderr, new RegExp(`${'b'.repeat(32)}-480\\.webp is not a WebP picture`));
  const rows = await withDb((db) =>
    db.query<{ name: string; bytes: Uint8Array }>('SELECT name, bytes FROM picture ORDER BY name'),
  );
  assert.deepEqual(
    rows.map((r) => r.name),
    [`${hash}-160.webp`, `${hash}-480.webp`],
  );
  const meta = await sharp(Buffer.from(rows[1]?.bytes as Uint8Array)).metadata();
  assert.deepEqual([meta.format, meta.width], ['webp', 480]);
  const again = importPictures([folder]);
  assert.match(again.stdout, /0 imported, 2 there already, 1 left out/);
});
