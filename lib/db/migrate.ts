// Applies the numbered SQL files in sql/ once each, in order, recording them in
// schema_migrations; loads the demo data into an empty database when asked to.
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import type { Db } from './db.ts';

const migrationFile = /^(\d{3})_[a-z0-9_-]+\.sql$/;

// Several workers may start at once: one advisory lock serialises them.
const lockSql = `SELECT pg_advisory_xact_lock(7311204)`;

export async function migrate(db: Db, sqlDir: string): Promise<string[]> {
  const files = (await readdir(sqlDir)).filter((f) => migrationFile.test(f)).sort();
  return db.transaction(async (tx) => {
    await tx.query(lockSql);
    await tx.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version    text PRIMARY KEY,
      applied_at timestamptz NOT NULL DEFAULT now()
    )`);
    const done = new Set(
      (await tx.query<{ version: string }>('SELECT version FROM schema_migrations')).map((r) => r.version),
    );
    const applied: string[] = [];
    for (const file of files) {
      const version = file.replace(/\.sql$/, '');
      if (done.has(version)) continue;
      try {
        await tx.exec(await readFile(path.join(sqlDir, file), 'utf8'));
      } catch (err) {
        throw new Error(`migration sql/${file} failed: ${(err as Error).message}`, { cause: err });
      }
      await tx.query('INSERT INTO schema_migrations (version) VALUES ($1)', [version]);
      applied.push(version);
    }
    return applied;
  });
}

/** The versions of the migration files in sqlDir (001_schema …), in order. */
export async function migrationVersions(sqlDir: string): Promise<string[]> {
  return (await readdir(sqlDir))
    .filter((f) => migrationFile.test(f))
    .sort()
    .map((f) => f.replace(/\.sql$/, ''));
}

/** Those of versions that the database has not applied (all of them without schema_migrations). */
export async function pendingMigrations(db: Db, versions: string[]): Promise<string[]> {
  const [row] = await db.query<{ known: boolean }>(`SELECT to_regclass('schema_migrations') IS NOT NULL AS known`);
  if (!row?.known) return versions;
  const done = new Set(
    (await db.query<{ version: string }>('SELECT version FROM schema_migrations')).map((r) => r.version),
  );
  return versions.filter((v) => !done.has(v));
}

/**
 * Loads sql/demo.sql and sql/demo-accounts.sql when the person table is empty; returns whether
 * it did. Only a new database gets the demo accounts, whose passwords are public.
 */
export async function loadDemoData(db: Db, sqlDir: string): Promise<boolean> {
  const sql = await readFile(path.join(sqlDir, 'demo.sql'), 'utf8');
  const accounts = await readFile(path.join(sqlDir, 'demo-accounts.sql'), 'utf8');
  return db.transaction(async (tx) => {
    await tx.query(lockSql);
    const [row] = await tx.query<{ empty: boolean }>('SELECT NOT EXISTS (SELECT 1 FROM person) AS empty');
    if (!row?.empty) return false;
    await tx.exec(sql);
    await tx.exec(accounts);
    return true;
  });
}
