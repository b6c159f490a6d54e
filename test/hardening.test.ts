// What an attacker and an unlucky operator found, one finding a test: hostile XML bodies, loan
// data that leaked to a work's owner, a session row per anonymous login form, a costly Accept
// header, error pages without security headers, a Host port that reached links, scanner probes
// that fail2ban could not see, and the embedded database's folder.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { asUser } from './change-helpers.ts';
import { logInAs } from './login-helpers.ts';
import type { TestServer } from './helpers.ts';
import { fixtureEnv, missingTool, rawRequest, readJson, startTestServer, waitFor } from './helpers.ts';

let server: TestServer;

before(async () => {
  server = await startTestServer({ NODE_ENV: 'production' });
});
after(() => server.close());

describe('XML bodies with reserved names or deep nesting', () => {
  let cookie: string | undefined;
  const bodies = [
    ['__proto__', '<person><__proto__/></person>'],
    ['constructor', '<person><constructor>x</constructor></person>'],
    ['nesting', `<person>${'<a>'.repeat(150)}${'</a>'.repeat(150)}</person>`],
  ] as const;
  for (const [what, body] of bodies) {
    test(`${what}: 400 naming what is refused, before the CSRF token is looked at, and one ordinary error-log line`, async () => {
      cookie ??= await logInAs(server.origin, 'bibliothek');
      const before = server.errorLog().split('\n').length;
      const res = await fetch(`${server.origin}/personen`, {
        method: 'POST',
        headers: { 'content-type': 'application/xml', accept: 'application/json', cookie },
        body,
      });
      assert.equal(res.status, 400);
      const problem = await readJson(res);
      assert.match(
        problem.detail,
        what === 'nesting'
          ? /nests elements more than 32 deep/
          : new RegExp(`uses the name "${what}", which is not accepted`),
      );
      const lines = (await waitFor(server.errorLog, (log) => log.split('\n').length > before))
        .split('\n')
        .slice(before - 1)
        .filter(Boolean);
      assert.equal(lines.length, 1, lines.join('\n'));
      assert.match(lines[0] as string, /\[app:warn\] \[pid \d+\] \[client 127\.0\.0\.1:\d+\] The XML body .* \(400\)$/);
      assert.doesNotMatch(lines[0] as string, /SECURITY|\bat [\w.<>]+ \(|\.[jt]s:\d+/);
    });
  }
});

describe('a work on loan, deleted by its owner', () => {
  test("is 409 without the borrower's name; a librarian is told who has it", async () => {
    // Werk 7 ("Über das Meer", Jürgen Müller's) is on loan to mmuster in the demo data.
    const owner = await asUser(server.origin, 'jmueller', { method: 'DELETE', path: '/werk/7', format: 'json' });
    assert.equal(owner.status, 409);
    const detail = (await readJson(owner)).detail as string;
    assert.equal(detail, 'The work was not deleted: it is on loan; a librarian records the return first.');
    const librarian = await asUser(server.origin, 'bibliothek', { method: 'DELETE', path: '/werk/7', format: 'json' });
    assert.equal(librarian.status, 409);
    assert.equal(
      (await readJson(librarian)).detail,
      'The work was not deleted: it is on loan to mmuster; record its return first.',
    );
  });
});

describe('the port of an allowed Host', () => {
  for (const host of ['localhost:99999', 'localhost:0', '127.0.0.1:65536', '127.0.0.1:00000']) {
    test(`Host: ${host} is 400 and reaches no link`, async () => {
      const res = await rawRequest(server.origin, '/person/max-muster.json', { headers: { host } });
      assert.equal(res.status, 400);
      assert.doesNotMatch(res.body, /https?:\/\//);
    });
  }

  const linkOf = async (host: string, origin = server.origin) => {
    const res = await rawRequest(origin, '/person/max-muster.json', { headers: { host } });
    assert.equal(res.status, 200, `${host}: ${res.body}`);
    return JSON.parse(res.body).werk[0].url as string;
  };

  test('the port the server listens on and the default port build the links, each written one way', async () => {
    const port = new URL(server.origin).port;
    for (const host of [`localhost:${port}`, `LOCALHOST:${port}`])
      assert.match(await linkOf(host), new RegExp(`^http://localhost:${port}/werk/\\d+$`), host);
    for (const host of ['localhost', 'localhost:80', 'localhost:080', 'localhost:00080'])
      assert.match(await linkOf(host), /^http:\/\/localhost\/werk\/\d+$/, host);
  });

  test('any other port is 400: varying it makes no new origin, and so no new kept document', async () => {
    for (const host of ['localhost:65535', 'localhost:81', '127.0.0.1:443', 'localhost:1']) {
      const res = await rawRequest(server.origin, '/personen.json', { headers: { host } });
      assert.equal(res.status, 400, host);
      const name = host.split(':')[0] as string;
      assert.equal(
        JSON.parse(res.body).detail,
        `The host ${host} is not served here: ${name} is served at port 80 and at the port this server listens on; add ${host} to ALLOWED_HOSTS or set BASE_URL.`,
      );
      assert.doesNotMatch(res.body, /https?:\/\//);
    }
  });

  test('a port ALLOWED_HOSTS names with the host is served for that host', async () => {
    const named = await startTestServer(
      { NODE_ENV: 'production', ALLOWED_HOSTS: 'localhost,localhost:8443' },
      { db: { db: server.db, url: null, drop: async () => {} } },
    );
    try {
      assert.match(await linkOf('localhost:8443', named.origin), /^http:\/\/localhost:8443\/werk\/\d+$/);
      assert.equal(
        (await rawRequest(named.origin, '/personen.json', { headers: { host: 'localhost:8444' } })).status,
        400,
      );
      assert.equal(
        (await rawRequest(named.origin, '/personen.json', { headers: { host: '127.0.0.1:8443' } })).status,
        400,
      );
    } finally {
      await named.close();
    }
  });
});

describe('scanner probes for scripts', () => {
  const filter = '/etc/fail2ban/filter.d/apache-noscript.conf';
  const skip = missingTool(filter, 'fail2ban');

  test("each write the line Apache writes for a missing file, which fail2ban's apache-noscript filter counts", {
    skip,
  }, async () => {
    const probes = [
      '/wp-login.php',
      '/wp-admin/install.php',
      '/phpmyadmin/index.php',
      '/cgi-bin/test.cgi',
      '/xmlrpc.php?rsd',
    ];
    const before = server.errorLog();
    for (const probe of probes) assert.equal((await fetch(server.origin + probe)).status, 404, probe);
    assert.equal((await fetch(`${server.origin}/apple-touch-icon.png`)).status, 404);
    const log = await waitFor(server.errorLog, (text) => (text.match(/AH00128/g) ?? []).length >= probes.length);
    const lines = log
      .slice(before.length)
      .split('\n')
      .filter((line) => line.includes('AH00128'));
    assert.equal(lines.length, probes.length, lines.join('\n'));
    assert.match(
      lines[0] as string,
      /^\[[^\]]+\] \[core:info\] \[pid \d+\] \[client 127\.0\.0\.1:\d+\] AH00128: File does not exist: \/\S+\/public\/wp-login\.php$/,
    );
    const dir = mkdtempSync(path.join(os.tmpdir(), 'noscript-'));
    try {
      writeFileSync(path.join(dir, 'error.log'), `${lines.join('\n')}\n`);
      const { stdout } = await promisify(execFile)('fail2ban-regex', [path.join(dir, 'error.log'), filter], {
        timeout: 60_000,
      });
      const summary = /^Lines: (\d+) lines, (\d+) ignored, (\d+) matched, (\d+) missed/m.exec(stdout);
      assert.deepEqual(
        summary && { matched: Number(summary[3]), missed: Number(summary[4]) },
        { matched: probes.length, missed: 0 },
        stdout,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('security headers', () => {
  test('every answer carries them: documents, errors of every kind, redirects, files, 304 and 204', async () => {
    const etag = (await fetch(`${server.origin}/person/max-muster.json`)).headers.get('etag') as string;
    const answers: [string, string, RequestInit & { expect: number }][] = [
      ['a document', '/person/max-muster', { expect: 200 }],
      ['a 404 page', '/nowhere', { expect: 404 }],
      ['a 400 problem', '/search.json?query=foo,contains,x', { expect: 400 }],
      ['a 403 page', '/entlehnte/2', { expect: 403 }],
      ['a 405', '/personen', { method: 'DELETE', expect: 405 }],
      ['a 301', '/person/max-muster/', { redirect: 'manual', expect: 301 }],
      ['a file', '/css/site.css', { expect: 200 }],
      ['a 304', '/person/max-muster.json', { headers: { 'if-none-match': etag }, expect: 304 }],
      ['a 204', '/personen', { method: 'OPTIONS', expect: 204 }],
    ];
    for (const [what, target, init] of answers) {
      const res = await fetch(server.origin + target, init);
      assert.equal(res.status, init.expect, what);
      assert.match(
        res.headers.get('content-security-policy') ?? '',
        /default-src 'self'.*frame-ancestors 'none'/,
        what,
      );
      assert.equal(res.headers.get('x-content-type-options'), 'nosniff', what);
      assert.equal(res.headers.get('referrer-policy'), 'same-origin', what);
    }
  });

  test('a 500 in production carries them', async () => {
    const failing = await startTestServer(
      { NODE_ENV: 'production', ...fixtureEnv },
      { db: { db: server.db, url: null, drop: async () => {} } },
    );
    try {
      const res = await fetch(`${failing.origin}/boom`);
      assert.equal(res.status, 500);
      assert.equal(await res.text(), '');
      assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
      assert.match(res.headers.get('content-security-policy') ?? '', /frame-ancestors 'none'/);
    } finally {
      await failing.close();
    }
  });
});

describe('a crafted Accept header', () => {
  test('over 1024 characters or 32 media ranges is refused with 400 before it is ranked', async () => {
    // As long as the header limit lets through (16 KiB for all headers together).
    const long = Array.from({ length: 620 }, (_, i) => `application/x-${i};q=0.${i % 10}`).join(', ');
    assert.ok(long.length > 15_000 && long.length < 16_000);
    const many = Array.from({ length: 33 }, (_, i) => `a/b${i}`).join(',');
    assert.ok(many.length < 1024);
    for (const accept of [long, many]) {
      const res = await rawRequest(server.origin, '/person/max-muster', { headers: { accept } });
      assert.equal(res.status, 400);
      assert.match(res.headers['content-type'] ?? '', /^text\/html/);
      assert.match(res.body, /The Accept header is longer than 1024 characters or has more than 32 media ranges/);
    }
  });

  test('within the bounds it is ranked as before', async () => {
    const ranges = [
      ...Array.from({ length: 30 }, (_, i) => `a/b${i};q=0.1`),
      'application/json;q=0.9',
      'text/html;q=0.5',
    ].join(',');
    const res = await rawRequest(server.origin, '/person/max-muster', { headers: { accept: ranges } });
    assert.equal(res.status, 200);
    assert.match(res.headers['content-type'] ?? '', /^application\/json/);
  });
});

describe('the login form for anonymous visitors', () => {
  test('stores no session row: 100 visits of /login and /login.json leave the session table as it was', async () => {
    const count = async () =>
      ((await server.db.query<{ n: number }>('SELECT count(*)::int AS n FROM session'))[0] as { n: number }).n;
    const before = await count();
    for (let i = 0; i < 50; i++) {
      for (const page of ['/login', '/login.json']) {
        const res = await fetch(server.origin + page);
        assert.equal(res.status, 200, page);
        await res.arrayBuffer();
      }
    }
    assert.equal(await count(), before);
  });
});

describe("the embedded database's folder", () => {
  const dirs: string[] = [];
  const run = (dataDir: string, script: string) =>
    promisify(execFile)(process.execPath, ['--import', 'tsx', '-e', script], {
      cwd: process.cwd(),
      env: { ...process.env, DATA_DIR: dataDir, DATABASE_URL: '' },
      timeout: 60_000,
    });
  after(() => {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  test("belongs to one process: a second is refused with the folder and the holder's process id", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'portfolio-data-'));
    dirs.push(dir);
    const { openPglite } = await import('../lib/db/index.ts');
    const first = await openPglite({ dataDir: dir });
    try {
      await first.query('SELECT 1');
      const second = run(
        dir,
        "import { openPglite } from './lib/db/index.ts'; await openPglite({ dataDir: process.env.DATA_DIR });",
      );
      await assert.rejects(second, (err: { stderr: string }) => {
        assert.match(
          err.stderr,
          new RegExp(
            `The embedded database in ${dir.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} is in use by process ${process.pid}; stop that server`,
          ),
        );
        return true;
      });
      assert.deepEqual(await first.query<{ n: number }>('SELECT 1 AS n'), [{ n: 1 }]);
    } finally {
      await first.close();
    }
    // Closed, the folder is free again.
    await run(
      dir,
      "import { openPglite } from './lib/db/index.ts'; const db = await openPglite({ dataDir: process.env.DATA_DIR }); await db.close();",
    );
  });

  test('a lock left by a process that is gone is taken over', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'portfolio-data-'));
    dirs.push(dir);
    // A process that has exited: its id is free (or another process's, with another start time).
    const gone = await promisify(execFile)(process.execPath, ['-e', 'process.stdout.write(String(process.pid))']);
    writeFileSync(path.join(dir, 'portfolio.lock'), `${gone.stdout} 1\n`);
    await run(
      dir,
      "import { openPglite } from './lib/db/index.ts'; const db = await openPglite({ dataDir: process.env.DATA_DIR }); await db.query('SELECT 1'); await db.close();",
    );
    assert.equal(existsSync(path.join(dir, 'portfolio.lock')), false);
  });

  test("is the owner's alone: the folder 0700, its files 0600", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'portfolio-data-'));
    dirs.push(dir);
    await run(
      dir,
      "import { openPglite } from './lib/db/index.ts'; const db = await openPglite({ dataDir: process.env.DATA_DIR }); await db.query('CREATE TABLE t (x int)'); await db.close();",
    );
    const modes = new Map<string, number>();
    const walk = (folder: string) => {
      modes.set(folder, statSync(folder).mode & 0o777);
      for (const entry of readdirSync(folder, { withFileTypes: true })) {
        const child = path.join(folder, entry.name);
        if (entry.isDirectory()) walk(child);
        else modes.set(child, statSync(child).mode & 0o777);
      }
    };
    walk(dir);
    const open = [...modes]
      .filter(([file, mode]) => (mode & 0o077) !== 0)
      .map(([file, mode]) => `${mode.toString(8)} ${file}`);
    assert.deepEqual(open, []);
    assert.ok(modes.size > 100);
  });

  test('log files are 0640', async () => {
    const mode = statSync(path.join(server.logDir, 'access.log')).mode & 0o777;
    assert.equal(mode.toString(8), '640');
  });
});
