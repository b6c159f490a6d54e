// Test support: a fresh database per test file on the backend the run asks for
// (DATABASE_URL set: a new database on that PostgreSQL server; unset: in-memory PGlite),
// and the application on a real HTTP port on 127.0.0.1.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import type { Env } from '../lib/config.ts';
import { readConfig } from '../lib/config.ts';
import type { Db } from '../lib/db/index.ts';
import { openPglite, openPostgres } from '../lib/db/index.ts';
import type { ServerLimits } from '../lib/http/index.ts';
import { createHttpServer } from '../lib/http/index.ts';
import type { App } from '../server.ts';
import { createApp } from '../server.ts';

export const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
export const backend = process.env.DATABASE_URL ? 'postgres' : 'pglite';

/** The test scripts, templates and rewrite table in test/fixtures (boom, warn, slow and others) instead of the site's. */
export const fixtureEnv = {
  SCRIPTS_DIR: path.join(root, 'test/fixtures/scripts'),
  TEMPLATES_DIR: path.join(root, 'test/fixtures/templates'),
  REWRITE_RULES: path.join(root, 'test/fixtures/rewrite-rules.json'),
};

export interface TestDb {
  db: Db;
  url: string | null;
  drop: () => Promise<void>;
}

let template: Promise<Blob> | null = null;

/**
 * PGlite's data folder as initdb leaves it, made once per machine and PGlite version and kept in
 * the temporary folder: a test file opens a copy of it, not a new cluster (initdb in WebAssembly
 * takes seconds). Written under a name of its own, then renamed: files that start together
 * each read a whole one.
 */
export function pgliteTemplate(): Promise<Blob> {
  template ??= (async () => {
    const { version } = JSON.parse(
      readFileSync(path.join(root, 'node_modules/@electric-sql/pglite/package.json'), 'utf8'),
    ) as { version: string };
    const file = path.join(os.tmpdir(), `portfolio-pglite-${version}.tar`);
    if (!existsSync(file)) {
      const { PGlite } = await import('@electric-sql/pglite');
      const lite = new PGlite('memory://');
      await lite.waitReady;
      const dump = await lite.dumpDataDir('none');
      await lite.close();
      const written = `${file}.${process.pid}.${randomBytes(4).toString('hex')}`;
      writeFileSync(written, Buffer.from(await dump.arrayBuffer()));
      renameSync(written, file);
    }
    return new Blob([readFileSync(file)]);
  })();
  return template;
}

/** A new, empty database of the run's backend; drop() removes it. */
export async function openTestDb(): Promise<TestDb> {
  const serverUrl = process.env.DATABASE_URL;
  if (!serverUrl) {
    const db = await openPglite({ dataDir: null, loadDataDir: await pgliteTemplate() });
    return { db, url: null, drop: () => db.close() };
  }
  const name = `portfolio_test_${process.pid}_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  const db = openPostgres({ connectionString: url.href, statementTimeoutMs: 10_000 });
  return {
    db,
    url: url.href,
    drop: async () => {
      await db.close();
      const cleanup = new pg.Client({ connectionString: serverUrl });
      await cleanup.connect();
      await cleanup.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await cleanup.end();
    },
  };
}

export interface TestServer {
  app: App;
  server: http.Server;
  db: Db;
  /** http://127.0.0.1:<port> */
  origin: string;
  logDir: string;
  accessLog: () => string;
  errorLog: () => string;
  close: () => Promise<void>;
}

/** The application with demo data on a fresh database, listening on 127.0.0.1 with the production limits. */
export async function startTestServer(
  env: Env = {},
  options: { db?: TestDb; limits?: Partial<ServerLimits> } = {},
): Promise<TestServer> {
  const testDb = options.db ?? (await openTestDb());
  const logDir = mkdtempSync(path.join(os.tmpdir(), 'portfolio-logs-'));
  // No snapshot file: the tests' databases are copies of one, which a file of another's would fit.
  const config = readConfig({
    DEMO_DATA: '1',
    LOG_DIR: logDir,
    ALLOWED_HOSTS: 'localhost,127.0.0.1',
    SEARCH_SNAPSHOT: 'off',
    ...env,
  });
  const app = await createApp(config, { db: testDb.db });
  // The tests search from their first request on.
  await app.complete;
  const server = createHttpServer(app, options.limits);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const read = (file: string) => () => {
    try {
      return readFileSync(path.join(logDir, file), 'utf8');
    } catch {
      return '';
    }
  };
  return {
    app,
    server,
    db: testDb.db,
    origin: `http://127.0.0.1:${port}`,
    logDir,
    accessLog: read('access.log'),
    errorLog: read('error.log'),
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await app.close();
      if (!options.db) await testDb.drop();
      rmSync(logDir, { recursive: true, force: true });
    },
  };
}

export interface RawResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** A request with exactly the target and headers given (fetch would normalise them). */
export async function rawRequest(
  origin: string,
  target: string,
  options: { method?: string; headers?: Record<string, string> } = {},
): Promise<RawResponse> {
  const res = await rawBytes(origin, target, options);
  return { ...res, body: res.body.toString('utf8') };
}

/** The same, with the body as the bytes sent, not decoded (fetch would decompress it). */
export function rawBytes(
  origin: string,
  target: string,
  options: { method?: string; headers?: Record<string, string> } = {},
): Promise<Omit<RawResponse, 'body'> & { body: Buffer }> {
  const url = new URL(origin);
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: url.hostname,
        port: url.port,
        method: options.method ?? 'GET',
        path: target,
        headers: options.headers ?? {},
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** Waits until a log file has received its lines (writes are asynchronous). */
export async function waitFor<T>(read: () => T, ok: (value: T) => boolean, timeoutMs = 2000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = read();
    if (ok(value) || Date.now() > until) return value;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** A JSON body; tests look into it freely and assert on exact values. */
export type Json = any;

export async function readJson(res: Response): Promise<Json> {
  return res.json();
}

/**
 * For tests that need a Debian tool: a skip reason when it is missing on a developer's machine,
 * a failure when CI is set (.ci/run installs every such tool).
 */
export function missingTool(file: string, packages: string): string | false {
  if (existsSync(file)) return false;
  if (process.env.CI) throw new Error(`${file} is missing, but CI is set: apt-get install -y ${packages}`);
  return `${file} is missing (apt-get install -y ${packages}; .ci/run installs it)`;
}

/** xmllint --noout --schema <file> - with the document on stdin: its exit code and messages. */
export function xmllint(schemaFile: string, xml: string): Promise<{ code: number | null; messages: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('xmllint', ['--noout', '--schema', schemaFile, '-'], { stdio: ['pipe', 'ignore', 'pipe'] });
    let messages = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (messages += chunk));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, messages }));
    // xmllint may stop reading early (a schema that does not compile); its answer says why.
    child.stdin.on('error', () => {});
    child.stdin.end(xml);
  });
}

/** Debian's Chromium, headless, as every browser test drives it (playwright-core). */
export async function launchChromium(): Promise<import('playwright-core').Browser> {
  const { chromium } = await import('playwright-core');
  return chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
  });
}
