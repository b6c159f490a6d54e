// Test support for the command-line tools in bin/, run as child processes: the run's database
// backend for them, the environment that names it, and a way to read it between their runs.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Db } from '../../lib/db/index.ts';
import { openPglite } from '../../lib/db/index.ts';
import { backend, openTestDb } from '../helpers.ts';

export interface ToolDb {
  /** The tools' environment: DATABASE_URL of the test database, or PGlite in a folder of its own. */
  env: NodeJS.ProcessEnv;
  /** Runs fn on the database; the embedded one serves one process at a time, so it is opened only between the tool's runs. */
  withDb<T>(fn: (db: Db) => Promise<T>): Promise<T>;
  drop(): Promise<void>;
}

export async function openToolDb(name: string, env: NodeJS.ProcessEnv = {}): Promise<ToolDb> {
  if (backend === 'postgres') {
    const testDb = await openTestDb();
    return {
      env: { ...process.env, ...env, DATABASE_URL: testDb.url as string },
      withDb: (fn) => fn(testDb.db),
      drop: () => testDb.drop(),
    };
  }
  const dataDir = mkdtempSync(path.join(os.tmpdir(), `portfolio-${name}-`));
  return {
    env: { ...process.env, ...env, DATABASE_URL: '', DATA_DIR: dataDir },
    withDb: async (fn) => {
      const db = await openPglite({ dataDir });
      try {
        return await fn(db);
      } finally {
        await db.close();
      }
    },
    drop: async () => rmSync(dataDir, { recursive: true, force: true }),
  };
}
