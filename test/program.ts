// The product as operators run it (`npm start`: the built dist/server.js in production mode), as
// a process of its own, for the tests that watch one: the build, worker processes, load, graceful stop.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { buildServer, startArguments } from '../bin/build.ts';
import type { TestDb } from './helpers.ts';
import { backend, openTestDb, root, waitFor } from './helpers.ts';

export interface Program {
  child: ChildProcess;
  origin: string;
  logDir: string;
  output: () => string;
  readLog: (name: 'access.log' | 'error.log') => string;
  exited: Promise<number | null>;
  remove: () => void;
}

let built: ReturnType<typeof buildServer> | undefined;

/** The program's database: the test's PostgreSQL database, or PGlite in dataDir. */
export function databaseEnv(db: TestDb, dataDir: string): Record<string, string> {
  return backend === 'postgres'
    ? { DATABASE_URL: db.url as string, DATA_DIR: dataDir }
    : { DATABASE_URL: '', DATA_DIR: dataDir };
}

/** A started program with a database of its own; close() stops it and removes the database. */
export interface OwnProgram {
  program: Program;
  db: TestDb;
  close: () => Promise<void>;
}

/** startProgram on a new test database: the PostgreSQL test database, or PGlite in a new folder. */
export async function startOwnProgram(env: Record<string, string> = {}): Promise<OwnProgram> {
  const db = await openTestDb();
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'portfolio-data-'));
  const program = await startProgram({ ...databaseEnv(db, dataDir), ...env });
  return {
    program,
    db,
    close: async () => {
      program.remove();
      await db.drop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * Starts the program and waits until every worker serves and the search index is read (by the
 * search process, or the one process; searches are 503 before); `serving` waits for fewer
 * workers, `searching: false` not for the index.
 */
export async function startProgram(
  env: Record<string, string>,
  options: { serving?: number; searching?: boolean } = {},
): Promise<Program> {
  // Built once per test process, from the sources as they are now.
  built ??= buildServer();
  await built;
  const logDir = mkdtempSync(path.join(os.tmpdir(), 'portfolio-logs-'));
  const child = spawn(process.execPath, startArguments(), {
    cwd: root,
    env: {
      ...process.env,
      NODE_ENV: 'production',
      PORT: '0',
      HOST: '127.0.0.1',
      LOG_DIR: logDir,
      DEMO_DATA: '1',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const workers = options.serving ?? Number(env.WEB_CONCURRENCY ?? 1);
  const searching = options.searching ?? true;
  const listening = (text: string) =>
    (text.match(/listening on /g) ?? []).length >= workers &&
    (!searching || /search process \d+ answers searches|search index is read/.test(text));
  await waitFor(
    () => output,
    (text) => listening(text) || child.exitCode !== null,
    60_000,
  );
  const port = /listening on http:\/\/127\.0\.0\.1:(\d+)\//.exec(output)?.[1];
  if (!port || !listening(output)) throw new Error(`the server did not start:\n${output}`);
  return {
    child,
    origin: `http://127.0.0.1:${port}`,
    logDir,
    output: () => output,
    readLog: (name) => {
      try {
        return readFileSync(path.join(logDir, name), 'utf8');
      } catch {
        return '';
      }
    },
    exited,
    remove: () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      rmSync(logDir, { recursive: true, force: true });
    },
  };
}
