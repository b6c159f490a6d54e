// The embedded PostgreSQL (PGlite): one connection in this process, in ./data or in memory.
import { lockDataDir, restrictDataDir } from './data-dir.ts';
import type { Db } from './db.ts';
import { classifyError } from './db.ts';

interface PgliteOptions {
  /** Directory for the data files; null keeps everything in memory (tests). */
  dataDir: string | null;
  /** A data folder to start from, as PGlite's dumpDataDir wrote it: no initdb (the tests' fresh databases). */
  loadDataDir?: Blob;
}

export async function openPglite(options: PgliteOptions): Promise<Db> {
  // Imported here, not at the top: PGlite's module is large (docs/performance.md, Memory), and
  // a server on PostgreSQL should not carry it in every worker.
  const [{ PGlite }, { pg_trgm }] = await Promise.all([
    import('@electric-sql/pglite'),
    import('@electric-sql/pglite/contrib/pg_trgm'),
  ]);
  const { dataDir } = options;
  const unlock = dataDir === null ? () => {} : lockDataDir(dataDir);
  const lite = new PGlite(dataDir ?? 'memory://', { extensions: { pg_trgm }, loadDataDir: options.loadDataDir });
  try {
    await lite.waitReady;
    if (dataDir !== null) restrictDataDir(dataDir);
  } catch (err) {
    unlock();
    throw err;
  }
  // PGlite runs one connection; its own transaction() queues other queries until it ends.
  return {
    kind: 'pglite',
    query: async <R>(sql: string, params?: readonly unknown[]) => {
      try {
        return (await lite.query<R>(sql, params as unknown[] | undefined)).rows;
      } catch (err) {
        throw classifyError(err);
      }
    },
    exec: async (sql) => {
      await lite.exec(sql);
    },
    transaction: (fn) =>
      lite
        .transaction((tx) =>
          fn({
            query: async <R>(sql: string, params?: readonly unknown[]) =>
              (await tx.query<R>(sql, params as unknown[] | undefined)).rows,
            exec: async (sql) => {
              await tx.exec(sql);
            },
          }),
        )
        .catch((err: unknown) => {
          throw classifyError(err);
        }),
    stats: () => null,
    close: async () => {
      try {
        await lite.close();
        // Files PGlite made while it ran are 0666 (inside a 0700 folder); they are the owner's alone again.
        if (dataDir !== null) restrictDataDir(dataDir);
      } finally {
        unlock();
      }
    },
  };
}
