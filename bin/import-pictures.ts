// Copies the pictures of a folder (PICTURES_DIR, or the one named) into the database, where every
// instance reads them (docs/operations.md, Pictures): npm run import-pictures [-- <folder>].
// Only the files the site itself wrote are taken (<32 hex digits>-<width>.webp, starting as a
// WebP does); one that is there already is left as it is, so the command may run again.
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { readConfig } from '../lib/config.ts';
import { migrate, openDatabase } from '../lib/db/index.ts';
import { pictureName } from '../lib/page/index.ts';

/** The largest picture the table takes (sql/013). */
const maxBytes = 16 * 1024 * 1024;

async function main(argv: string[]): Promise<void> {
  if (argv.includes('--help') || argv.includes('-h') || argv.length > 1) {
    console.log(`Usage: npm run import-pictures [-- <folder>]

Copies the pictures in <folder> (PICTURES_DIR by default) into the database of DATABASE_URL, or
the embedded one in DATA_DIR (stop the server first: it serves one process at a time).`);
    process.exitCode = argv.length > 1 ? 2 : 0;
    return;
  }
  const config = readConfig();
  const folder = path.resolve(argv[0] ?? config.picturesDir);
  const names = (await readdir(folder)).filter((name) => pictureName.test(name)).sort();
  const db = await openDatabase(config);
  const counts = { imported: 0, present: 0, refused: 0 };
  try {
    await migrate(db, config.sqlDir);
    for (const name of names) {
      const bytes = await readFile(path.join(folder, name));
      const webp = bytes.toString('latin1', 0, 4) === 'RIFF' && bytes.toString('latin1', 8, 12) === 'WEBP';
      if (!webp || bytes.length > maxBytes) {
        console.error(`import-pictures: ${name} is not a WebP picture of at most 16 MiB; left out.`);
        counts.refused++;
        continue;
      }
      const rows = await db.query(
        'INSERT INTO picture (name, bytes) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING RETURNING 1',
        [name, bytes],
      );
      if (rows.length > 0) counts.imported++;
      else counts.present++;
    }
  } finally {
    await db.close();
  }
  console.log(
    `import-pictures: ${counts.imported} imported, ${counts.present} there already, ${counts.refused} left out, from ${folder}.`,
  );
  if (counts.refused > 0) process.exitCode = 1;
}

main(process.argv.slice(2)).catch((err: unknown) => {
  console.error(`import-pictures: ${err instanceof Error ? err.message : String(err)}`);
  process.exitCode = 1;
});
