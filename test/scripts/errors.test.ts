// Errors and logs (docs/interface.md, Errors; docs/operations.md, Logs): 500 without content in production, the display_errors
// page in development, parse errors, warnings, and Apache-format log lines.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { TestDb, TestServer } from '../helpers.ts';
import { fixtureEnv, openTestDb, rawRequest, root, startTestServer, waitFor } from '../helpers.ts';

const fixtures = path.join(root, 'test/fixtures');
const errorLinePrefix =
  /^\[(Mon|Tue|Wed|Thu|Fri|Sat|Sun) (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{2} \d{2}:\d{2}:\d{2}\.\d{6} \d{4}\] \[app:(error|warn)\] \[pid \d+\] \[client 127\.0\.0\.1:\d+\] /;

let db: TestDb;
let production: TestServer;
let development: TestServer;

before(async () => {
  db = await openTestDb();
  production = await startTestServer({ ...fixtureEnv, NODE_ENV: 'production' }, { db });
  development = await startTestServer({ ...fixtureEnv, DISPLAY_ERRORS: '1' }, { db });
});
after(async () => {
  await production.close();
  await development.close();
  await db.drop();
});

describe('a failing script', () => {
  test('a cacheable script that asks who is asking is a 500 saying so, in production where documents are kept', async () => {
    const res = await rawRequest(production.origin, '/cached-who.php', { headers: { accept: 'application/json' } });
    assert.equal(res.status, 500);
    assert.equal(res.body, '');
    const log = await waitFor(production.errorLog, (text) => text.includes('cached-who.ts'));
    assert.match(log, /scripts\/cached-who\.ts is cacheable, so its document cannot depend on who asks/);
  });

  test('in production answers 500 with no content and writes one error-log line with file and line', async () => {
    const res = await rawRequest(production.origin, '/boom', { headers: { referer: 'http://localhost/personen' } });
    assert.equal(res.status, 500);
    assert.equal(res.headers['content-length'], '0');
    assert.equal(res.body, '');
    const log = await waitFor(production.errorLog, (text) => text.includes('boom.ts'));
    const line = log
      .trim()
      .split('\n')
      .find((l) => l.includes('boom.ts')) as string;
    assert.match(line, errorLinePrefix);
    assert.ok(
      line.endsWith(
        `TypeError: Cannot read properties of undefined (reading 'titel') in test/fixtures/scripts/boom.ts on line 9, referer: http://localhost/personen`,
      ),
      line,
    );
  });

  test('in production a stack trace never shows, whatever the request asks for', async () => {
    const res = await rawRequest(production.origin, '/boom?XDEBUG_SESSION_START=1&display_errors=1', {
      headers: { accept: 'text/html', 'x-display-errors': '1' },
    });
    assert.equal(res.status, 500);
    assert.equal(res.body, '');
  });

  test('with display_errors the page shows class, message, file:line, excerpt, stack and masked request', async () => {
    const res = await rawRequest(development.origin, '/boom', {
      headers: { cookie: 'sid=secret-cookie', authorization: 'Basic c2VjcmV0' },
    });
    assert.equal(res.status, 500);
    assert.equal(res.headers['content-type'], 'text/html; charset=utf-8');
    assert.match(res.body, /<h1>TypeError<\/h1>/);
    assert.match(
      res.body,
      /Cannot read properties of undefined \(reading &#39;titel&#39;\) in <b>test\/fixtures\/scripts\/boom\.ts<\/b> on line <b>9<\/b>/,
    );
    assert.match(res.body, /<span class="here"> 9 &gt;   const titel = \(werke\[index\] as Werk\)\.titel;<\/span>/);
    assert.match(res.body, /<li class="own"><code>[^<]*GET[^<]*<\/code> test\/fixtures\/scripts\/boom\.ts:9:\d+<\/li>/);
    assert.doesNotMatch(res.body, /secret-cookie|c2VjcmV0/);
    assert.match(res.body, /<th>cookie<\/th><td>\*\*\*\*\*\*\*\*<\/td>/);
  });
});

describe('a script that does not compile', () => {
  const dir = path.join(fixtures, `tmp-${process.pid}`);
  let server: TestServer;
  let dev: TestServer;

  before(async () => {
    mkdirSync(path.join(dir, 'scripts'), { recursive: true });
    writeFileSync(
      path.join(dir, 'scripts', 'broken.ts'),
      [
        '// A page with a syntax error on line 4.',
        'export async function GET() {',
        '  const werke = [1, 2, 3];',
        '  return { path: "/broken", title: "x", data: werke.map((w) => w * ) };',
        '}',
        '',
      ].join('\n'),
    );
    writeFileSync(
      path.join(dir, 'rules.json'),
      JSON.stringify([{ pattern: '^/broken$', substitution: '/broken.php', flags: ['L'] }]),
    );
    const env = { ...fixtureEnv, SCRIPTS_DIR: path.join(dir, 'scripts'), REWRITE_RULES: path.join(dir, 'rules.json') };
    server = await startTestServer({ ...env, NODE_ENV: 'production' }, { db });
    dev = await startTestServer({ ...env, DISPLAY_ERRORS: '1' }, { db });
  });
  after(async () => {
    await server.close();
    await dev.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('is a parse error: 500, no bytes, and "Parse error: … in <file> on line <n>" in the error log', async () => {
    const res = await rawRequest(server.origin, '/broken');
    assert.equal(res.status, 500);
    assert.equal(res.body, '');
    const log = await waitFor(server.errorLog, (text) => text.includes('Parse error'));
    assert.match(
      log,
      new RegExp(
        `\\[app:error\\] \\[pid \\d+\\] \\[client 127\\.0\\.0\\.1:\\d+\\] Parse error: Unexpected "\\)" in test/fixtures/tmp-${process.pid}/scripts/broken\\.ts on line 4\\n`,
      ),
    );
  });

  test('with display_errors shows Parse error, the message, file, line and excerpt', async () => {
    const res = await rawRequest(dev.origin, '/broken');
    assert.equal(res.status, 500);
    assert.match(res.body, /<h1>Parse error<\/h1>/);
    assert.match(
      res.body,
      /Unexpected &#34;\)&#34; in <b>test\/fixtures\/tmp-\d+\/scripts\/broken\.ts<\/b> on line <b>4<\/b>/,
    );
    assert.match(res.body, /<span class="here">4 &gt;   return \{ path: &#34;\/broken&#34;/);
  });
});

describe('start-up', () => {
  test('a bad rewrite table stops the start with a message naming the rule', async () => {
    const dir = path.join(fixtures, `tmp-rules-${process.pid}`);
    mkdirSync(dir, { recursive: true });
    writeFileSync(
      path.join(dir, 'rules.json'),
      JSON.stringify([
        { pattern: '^/boom$', substitution: '/boom.php', flags: ['L'] },
        { pattern: '^/(unclosed$', substitution: '/boom.php', flags: ['L'] },
      ]),
    );
    try {
      await assert.rejects(
        startTestServer({ ...fixtureEnv, REWRITE_RULES: path.join(dir, 'rules.json') }, { db }),
        /rule 2 \(pattern "\^\/\(unclosed\$"\)/,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('warnings', () => {
  test('are logged at level warn with file and line while the request ends with 200', async () => {
    const res = await rawRequest(production.origin, '/warn.xml?d=0');
    assert.equal(res.status, 200);
    const log = await waitFor(production.errorLog, (text) => text.includes('Division by zero'));
    const line = log.split('\n').find((l) => l.includes('Division by zero')) as string;
    assert.match(line, errorLinePrefix);
    assert.match(line, /\[app:warn\] .* Warning: Division by zero in test\/fixtures\/scripts\/warn\.ts on line 8$/);
  });

  test('show in a visible box in development and never in production', async () => {
    const dev = await rawRequest(development.origin, '/warn?d=0');
    assert.equal(dev.status, 200);
    assert.match(
      dev.body,
      /<div class="warning" role="alert">\s*<strong>Warning<\/strong>\s*<ul><li>Division by zero<\/li><\/ul>/,
    );
    const prod = await rawRequest(production.origin, '/warn?d=0');
    assert.equal(prod.status, 200);
    assert.doesNotMatch(prod.body, /Division by zero/);
  });
});

describe('the access log', () => {
  test('writes one Apache combined line per request', async () => {
    const res = await rawRequest(production.origin, '/warn.xml?d=2', {
      headers: { 'user-agent': 'curl/8.5.0', referer: 'http://localhost/' },
    });
    const log = await waitFor(production.accessLog, (text) => text.includes('/warn.xml?d=2'));
    const line = log.split('\n').find((l) => l.includes('/warn.xml?d=2')) as string;
    assert.match(
      line,
      new RegExp(
        `^127\\.0\\.0\\.1 - - \\[\\d{2}/\\w{3}/\\d{4}:\\d{2}:\\d{2}:\\d{2} [+-]\\d{4}\\] "GET /warn\\.xml\\?d=2 HTTP/1\\.1" 200 ${Buffer.byteLength(res.body)} "http://localhost/" "curl/8\\.5\\.0"$`,
      ),
    );
  });

  test('writes - for the bytes of a response without a body', async () => {
    await rawRequest(production.origin, '/warn?d=3', { method: 'HEAD' });
    const log = await waitFor(production.accessLog, (text) => text.includes('HEAD /warn?d=3'));
    assert.match(log, /"HEAD \/warn\?d=3 HTTP\/1\.1" 200 - "-" "-"\n/);
  });

  test("parses with GoAccess's COMBINED preset, every line a valid request", async (t) => {
    if (spawnSync('goaccess', ['--version'], { timeout: 10_000 }).error) {
      if (!process.env.CI) return t.skip('goaccess is not installed (apt-get install goaccess; CI installs it)');
      assert.fail('goaccess is not installed, but CI is set: install it with apt-get install goaccess');
    }
    for (const target of ['/warn.xml?d=7', '/nothing-here', '/boom', '/warn?d=%22x%22']) {
      await rawRequest(production.origin, target, {
        headers: { 'user-agent': 'Mozilla/5.0 "quoted" \\ agent', referer: 'http://localhost/?q="x"' },
      });
    }
    const log = await waitFor(production.accessLog, (text) => text.includes('d=%22x%22'));
    const lines = log.trim().split('\n').length;
    const report = path.join(production.logDir, 'goaccess.json');
    const run = spawnSync(
      'goaccess',
      [
        path.join(production.logDir, 'access.log'),
        '--log-format=COMBINED',
        '--no-global-config',
        '--no-progress',
        '--no-parsing-spinner',
        '-o',
        report,
      ],
      { encoding: 'utf8', timeout: 30_000 },
    );
    assert.equal(run.status, 0, run.stderr);
    const general = JSON.parse(readFileSync(report, 'utf8')).general;
    assert.deepEqual({ valid: general.valid_requests, failed: general.failed_requests }, { valid: lines, failed: 0 });
  });

  test('is reopened on request (SIGHUP), so logrotate can move it', async () => {
    await rawRequest(production.origin, '/warn?d=4');
    await waitFor(production.accessLog, (text) => text.includes('/warn?d=4'));
    const moved = path.join(production.logDir, 'access.log.1');
    renameSync(path.join(production.logDir, 'access.log'), moved);
    production.app.reopenLogs();
    await rawRequest(production.origin, '/warn?d=5');
    const fresh = await waitFor(production.accessLog, (text) => text.includes('/warn?d=5'));
    assert.doesNotMatch(fresh, /d=4/);
  });
});
