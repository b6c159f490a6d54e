// The production build (bin/build.ts): `npm start` runs dist/server.js, plain JavaScript without
// the tsx loader. It answers as the sources do, hands scripts the lib modules bundled into it, and
// its error log still names TypeScript files and lines.
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { buildServer, serverBundle, startArguments } from '../../bin/build.ts';
import type { BuiltScript } from '../../lib/scripts/loader.ts';
import { builtScriptsFile, sha256Of } from '../../lib/scripts/loader.ts';
import type { TestServer } from '../helpers.ts';
import { fixtureEnv, openTestDb, rawRequest, root, startTestServer, waitFor } from '../helpers.ts';
import type { OwnProgram, Program } from '../program.ts';
import { databaseEnv, startOwnProgram, startProgram } from '../program.ts';

// Links are absolute; one BASE_URL makes the built server's documents comparable byte for byte.
const baseUrl = 'http://portfolio.test';

describe('npm run build', () => {
  test('bundles server.ts and lib/ into dist/server.js, with packages left to node_modules', async () => {
    const { file, bytes } = await buildServer();
    assert.equal(file, path.join(root, 'dist/server.js'));
    const code = readFileSync(file, 'utf8');
    assert.equal(Buffer.byteLength(code), bytes);
    assert.match(code, /^import pg from "pg";$/m);
    // PGlite, 10 MB of WebAssembly, is loaded only when no DATABASE_URL is set.
    assert.match(code, /import\("@electric-sql\/pglite"\)/);
    assert.doesNotMatch(code, /^import .* from "@electric-sql\/pglite/m);
    assert.doesNotMatch(code, /from "[^"]*\.ts"|from "tsx/);
    assert.match(code, /\/\/# sourceMappingURL=server\.js\.map\n?$/);
    const map = JSON.parse(readFileSync(`${file}.map`, 'utf8')) as { sources: string[] };
    assert.ok(
      map.sources.includes('../lib/http/http-error.ts') && map.sources.includes('../server.ts'),
      map.sources.join(', '),
    );
    assert.ok(!map.sources.some((s) => s.startsWith('../scripts/')), 'the handler scripts stay out of the bundle');
    // esbuild only on demand: for a script changed since the build.
    assert.match(code, /import\("esbuild"\)/);
    assert.doesNotMatch(code, /^import .* from "esbuild"/m);
  });

  test('compiles every handler script into dist/scripts.json, with the hash of its text', async () => {
    const { scripts } = await buildServer();
    const built = JSON.parse(readFileSync(builtScriptsFile, 'utf8')) as Record<string, BuiltScript>;
    const names = readdirSync(path.join(root, 'scripts')).filter((f) => f.endsWith('.ts'));
    assert.equal(scripts, names.length);
    assert.deepEqual(Object.keys(built).sort(), names.map((f) => `scripts/${f}`).sort());
    for (const [file, script] of Object.entries(built)) {
      assert.equal(script.sha256, sha256Of(readFileSync(path.join(root, file), 'utf8')), file);
      assert.match(script.code, /exports/);
      assert.equal(JSON.parse(script.map).version, 3);
    }
  });

  test('is what npm start runs, with its flags', () => {
    const { scripts } = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as {
      scripts: Record<string, string>;
    };
    assert.equal(scripts.prestart, 'npm run build');
    assert.match(scripts.start as string, /^NODE_ENV=production node .*dist\/server\.js$/);
    assert.deepEqual(startArguments().slice(-1), [serverBundle]);
    assert.ok(startArguments().includes('--enable-source-maps'));
  });
});

describe('the built server', () => {
  let own: OwnProgram;
  let product: Program;
  let sources: TestServer;

  before(async () => {
    own = await startOwnProgram({ BASE_URL: baseUrl });
    product = own.program;
    sources = await startTestServer({ NODE_ENV: 'production', BASE_URL: baseUrl }, { db: own.db });
  });
  after(async () => {
    await sources.close();
    await own.close();
  });

  test('runs without the tsx loader', () => {
    const commandLine = readFileSync(`/proc/${product.child.pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
    assert.deepEqual(commandLine.slice(1), startArguments());
    assert.ok(!commandLine.includes('tsx'), commandLine.join(' '));
  });

  for (const [target, accept] of [
    ['/person/max-muster.json', '*/*'],
    ['/person/max-muster.xml', '*/*'],
    ['/person/max-muster', 'text/html'],
    ['/personen.json', '*/*'],
  ] as const) {
    test(`answers ${target} (${accept}) byte for byte as the sources do`, async () => {
      const built = await rawRequest(product.origin, target, { headers: { accept } });
      const expected = await rawRequest(sources.origin, target, { headers: { accept } });
      assert.equal(built.status, 200);
      assert.equal(built.headers['content-type'], expected.headers['content-type']);
      assert.equal(built.headers.etag, expected.headers.etag);
      assert.equal(built.body, expected.body);
    });
  }

  test('runs no compiler: every script comes compiled from the build', async () => {
    for (const file of readdirSync(path.join(root, 'scripts')))
      await rawRequest(product.origin, `/${file.replace(/\.ts$/, '.php')}`);
    assert.deepEqual(compilersOf(product), []);
  });

  test("answers a script's HttpError with its status: an unknown person is a 404 problem", async () => {
    const res = await rawRequest(product.origin, '/person/niemand-hier.json');
    assert.equal(res.status, 404);
    assert.equal(res.headers['content-type'], 'application/problem+json; charset=utf-8');
    const expected = await rawRequest(sources.origin, '/person/niemand-hier.json');
    assert.equal(res.body, expected.body);
    assert.equal(product.readLog('error.log'), '', 'a 404 is no error of the server');
  });
});

describe("the built server's error log", () => {
  let own: OwnProgram;
  let product: Program;

  before(async () => {
    own = await startOwnProgram(fixtureEnv);
    product = own.program;
  });
  after(() => own.close());

  test('names the line of a failing script', async () => {
    const res = await rawRequest(product.origin, '/boom');
    assert.equal(res.status, 500);
    assert.equal(res.body, '');
    const log = await waitFor(
      () => product.readLog('error.log'),
      (text) => text.includes('boom.ts'),
    );
    assert.match(
      log,
      /\] TypeError: Cannot read properties of undefined \(reading 'titel'\) in test\/fixtures\/scripts\/boom\.ts on line 9\n/,
    );
  });

  test('compiles scripts the build has not seen, as in development (which the check for a compiler sees)', async () => {
    await rawRequest(product.origin, '/boom');
    assert.equal(compilersOf(product).length, 1);
  });

  test('names the TypeScript line of a failure inside the bundle, through its source map', async () => {
    const res = await rawRequest(product.origin, '/boom-lib');
    assert.equal(res.status, 500);
    const source = readFileSync(path.join(root, 'lib/page/script-request.ts'), 'utf8').split('\n');
    const declared = source.findIndex((l) => l.startsWith('export function readNonNegativeInteger('));
    const line = declared + 1 + source.slice(declared).findIndex((l) => l.includes('query.get(name)'));
    const log = await waitFor(
      () => product.readLog('error.log'),
      (text) => text.includes("reading 'get'"),
    );
    assert.match(
      log,
      new RegExp(
        `\\] TypeError: Cannot read properties of undefined \\(reading 'get'\\) in lib/page/script-request\\.ts on line ${line}\\n`,
      ),
    );
  });
});

/** The esbuild processes the program started (its service process), from /proc. */
function compilersOf(program: Program): string[] {
  const found: string[] = [];
  for (const entry of readdirSync('/proc').filter((e) => /^\d+$/.test(e))) {
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      const command = readFileSync(`/proc/${entry}/cmdline`, 'utf8').replace(/\0/g, ' ');
      if (parent === program.child.pid && command.includes('esbuild')) found.push(command.trim());
    } catch {
      // the process ended meanwhile
    }
  }
  return found;
}

describe('a log folder that cannot be written', () => {
  test('the server starts without the default pid file and says so; a PID_FILE named that cannot be written stops the start, saying what to do', async () => {
    // A regular file where a folder should be: not writable, even for root.
    const scratch = mkdtempSync(path.join(os.tmpdir(), 'portfolio-blocked-'));
    const blocker = path.join(scratch, 'file');
    writeFileSync(blocker, '');
    const db = await openTestDb();
    try {
      const env = databaseEnv(db, path.join(scratch, 'data'));
      const program = await startProgram({ ...env, LOG_DIR: path.join(blocker, 'logs') });
      try {
        assert.equal((await rawRequest(program.origin, '/healthz')).status, 200);
        assert.match(
          program.output(),
          /the pid file \S+\/file\/logs\/portfolio\.pid cannot be written \(ENOTDIR\); running without one/,
        );
      } finally {
        program.remove();
      }
      await assert.rejects(
        startProgram({ ...env, PID_FILE: path.join(blocker, 'portfolio.pid') }),
        /the pid file \S+\/file\/portfolio\.pid cannot be written \((EEXIST|ENOTDIR)\): set PID_FILE to a file the server may write, or PID_FILE= for none/,
      );
    } finally {
      await db.drop();
      rmSync(scratch, { recursive: true, force: true });
    }
  });
});
