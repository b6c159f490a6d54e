// bin/import-pictures.ts, run as a real child process against the run's backend: the pictures of
// a folder that the site wrote go into the database, once; anything else is left out and said so.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import sharp from 'sharp';
import { root } from '../helpers.ts';
import type { ToolDb } from './tool-db.ts';
import { openToolDb } from './tool-db.ts';

let tool: ToolDb;
let folder: string;
const hash = 'a'.repeat(32);

before(async () => {
  folder = mkdtempSync(path.join(os.tmpdir(), 'portfolio-import-'));
  tool = await openToolDb('import-pictures', { PICTURES_DIR: folder });
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
  await tool?.drop();
  rmSync(folder, { recursive: true, force: true });
});

function importPictures(args: string[] = []) {
  const run = spawnSync(process.execPath, ['--import', 'tsx', 'bin/import-pictures.ts', ...args], {
    cwd: root,
    env: tool.env,
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { status: run.status, stdout: run.stdout, stderr: run.stderr };
}

test("the site's pictures go into the database once; a file that is no picture is left out and named", async () => {
  const first = importPictures();
  assert.equal(first.status, 1, 'one file was left out');
  assert.match(first.stdout, /2 imported, 0 there already, 1 left out/);
  assert.match(first.stderr, new RegExp(`${'b'.repeat(32)}-480\\.webp is not a WebP picture`));
  const rows = await tool.withDb((db) =>
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
