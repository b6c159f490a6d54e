// Identification (docs/interface.md, Accounts and login): the login form with its CSRF token, sessions in the database
// with a new id at login and idle and absolute time-outs, POST /logout, Basic credentials
// without a session, failed logins in the error log, and public documents that never read
// or set the session.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash, createHmac } from 'node:crypto';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { SessionStore } from '../lib/auth/index.ts';
import type { TestServer } from './helpers.ts';
import { rawRequest, readJson, startTestServer, waitFor } from './helpers.ts';
import { basic, cookieOf, demo, logInAs, openLoginForm, postForm, tokenOf } from './login-helpers.ts';

let server: TestServer;

before(async () => {
  server = await startTestServer();
});
after(() => server.close());

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
const cookiePattern = /^portfolio_session=([A-Za-z0-9_-]{43}); Path=\/; HttpOnly; SameSite=Lax$/;
const loginCookiePattern =
  /^portfolio_login=([0-9]+\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}); Max-Age=1800; Path=\/; HttpOnly; SameSite=Lax$/;

async function sessionRow(cookie: string): Promise<{ account_id: number | null } | null> {
  const [row] = await server.db.query<{ account_id: number | null }>('SELECT account_id FROM session WHERE id = $1', [
    sha256(tokenOf(cookie)),
  ]);
  return row ?? null;
}

describe('the login form', () => {
  test('signs its token into an HttpOnly, SameSite=Lax cookie and the form, and stores no session', async () => {
    const sessionsBefore = await server.db.query('SELECT id FROM session');
    const res = await fetch(`${server.origin}/login`);
    assert.equal(res.status, 200);
    const cookie = loginCookiePattern.exec(res.headers.get('set-cookie') ?? '');
    assert.ok(cookie, res.headers.get('set-cookie') ?? 'no Set-Cookie');
    assert.equal(res.headers.get('cache-control'), 'private, no-store');
    const html = await res.text();
    const token = /<input type="hidden" name="csrf_token" value="([0-9A-Za-z._-]+)">/.exec(html)?.[1];
    assert.equal(token, cookie[1]);
    assert.match(html, /<input id="username" name="username" type="text" autocomplete="username"/);
    assert.match(html, /<input id="password" name="password" type="password" autocomplete="current-password"/);
    assert.deepEqual(await server.db.query('SELECT id FROM session'), sessionsBefore);
    // The same visitor keeps the token while it holds, so two tabs of the form both work.
    const again = await fetch(`${server.origin}/login`, { headers: { cookie: `portfolio_login=${cookie[1]}` } });
    assert.equal(again.headers.get('set-cookie'), null);
    assert.match(
      await again.text(),
      new RegExp(`name="csrf_token" value="${(cookie[1] as string).replace(/\./g, '\\.')}"`),
    );
  });

  test('keeps the way back when it is a path on this site', async () => {
    const html = await (await fetch(`${server.origin}/login?back=/entlehnte/2`)).text();
    assert.match(html, /<input type="hidden" name="back" value="\/entlehnte\/2">/);
    for (const back of ['//evil.example/x', 'https://evil.example/', '/\\evil.example', 'entlehnte/2', '/logout']) {
      const other = await (await fetch(`${server.origin}/login?back=${encodeURIComponent(back)}`)).text();
      assert.doesNotMatch(other, /name="back"/, back);
    }
  });

  test('marks the cookie Secure when the site is served over HTTPS', async () => {
    const secure = await startTestServer({ BASE_URL: 'https://portfolio.example.org' });
    try {
      const res = await fetch(`${secure.origin}/login`);
      assert.match(
        res.headers.get('set-cookie') ?? '',
        /^__Host-portfolio_login=[0-9A-Za-z._-]+; Max-Age=1800; Path=\/; HttpOnly; Secure; SameSite=Lax$/,
      );
    } finally {
      await secure.close();
    }
  });

  test('is valid HTML with no script but js/site.js', async () => {
    const { HtmlValidate } = await import('html-validate');
    const validator = new HtmlValidate({
      extends: ['html-validate:recommended', 'html-validate:document'],
      rules: { 'no-trailing-whitespace': 'off', 'require-sri': ['error', { target: 'crossorigin' }] },
    });
    const cookie = await logInAs(server.origin, 'mmuster');
    const pages: [string, Record<string, string>][] = [
      ['/login?back=/entlehnte/2', {}],
      ['/entlehnte/2', {}],
      ['/entlehnte/2', { cookie }],
      ['/login', { cookie }],
      ['/entlehnte/3', { cookie }],
    ];
    for (const [page, headers] of pages) {
      const html = await (await fetch(server.origin + page, { headers })).text();
      const report = await validator.validateString(html);
      assert.deepEqual(
        report.results.flatMap((r) => r.messages.map((m) => `${m.line}:${m.column} ${m.ruleId}: ${m.message}`)),
        [],
        `${page}\n${html}`,
      );
      assert.deepEqual(html.match(/<script[^>]*>/g), ['<script src="js/site.js" defer>']);
    }
  });
});

describe('logging in', () => {
  test('starts a session under a new id and sends the browser back', async () => {
    const form = await openLoginForm(server.origin);
    const res = await postForm(
      server.origin,
      '/login',
      { username: 'mmuster', password: demo.mmuster.password, csrf_token: form.csrfToken, back: '/person/max-muster' },
      { cookie: form.cookie },
    );
    assert.equal(res.status, 303);
    assert.equal(res.headers.get('location'), `${server.origin}/person/max-muster`);
    const cookie = cookieOf(res) as string;
    assert.match(res.headers.get('set-cookie') ?? '', cookiePattern);
    assert.notEqual(tokenOf(cookie), tokenOf(form.cookie));
    assert.equal(await sessionRow(form.cookie), null, 'the login token is no session');
    assert.equal((await sessionRow(cookie))?.account_id, demo.mmuster.id);
  });

  test('without a way back, leads to the own loan list; the user name is not case-sensitive', async () => {
    const form = await openLoginForm(server.origin);
    const res = await postForm(
      server.origin,
      '/login',
      { username: ' JMueller ', password: demo.jmueller.password, csrf_token: form.csrfToken, back: '//evil.example/' },
      { cookie: form.cookie },
    );
    assert.equal(res.status, 303);
    assert.equal(res.headers.get('location'), `${server.origin}/entlehnte/3`);
  });

  test('stores only the SHA-256 of the session id, never the id itself', async () => {
    const cookie = await logInAs(server.origin, 'aschaefer');
    const rows = await server.db.query<{ id: string }>('SELECT id FROM session');
    assert.ok(rows.some((r) => r.id === sha256(tokenOf(cookie))));
    assert.ok(rows.every((r) => r.id !== tokenOf(cookie)));
  });

  test('the session lasts SESSION_MAX_HOURS at most', async () => {
    const cookie = await logInAs(server.origin, 'aschaefer');
    const [row] = await server.db.query<{ hours: number }>(
      'SELECT extract(epoch FROM expires_at - created_at)::integer / 3600 AS hours FROM session WHERE id = $1',
      [sha256(tokenOf(cookie))],
    );
    assert.equal(row?.hours, 12);
  });

  test('no URL the application makes carries the session id', async () => {
    const form = await openLoginForm(server.origin);
    const res = await postForm(
      server.origin,
      '/login',
      { username: 'mmuster', password: demo.mmuster.password, csrf_token: form.csrfToken },
      { cookie: form.cookie },
    );
    const token = tokenOf(cookieOf(res) as string);
    assert.ok(!(res.headers.get('location') ?? '').includes(token));
    for (const page of ['/entlehnte/2', '/entlehnte/2.xml', '/entlehnte/2.json', '/login', '/login.json']) {
      const answer = await fetch(server.origin + page, { headers: { cookie: `portfolio_session=${token}` } });
      assert.equal(answer.status, 200, page);
      assert.ok(!(await answer.text()).includes(token), page);
      assert.ok(!(answer.headers.get('link') ?? '').includes(token), page);
    }
  });
});

describe('a failed login', () => {
  test('answers the same for an unknown user and a wrong password, after as long', async () => {
    const form = await openLoginForm(server.origin);
    const attempt = async (username: string) => {
      const started = performance.now();
      const res = await postForm(
        server.origin,
        '/login',
        { username, password: 'not-the-password', csrf_token: form.csrfToken },
        { cookie: form.cookie },
      );
      const body = await res.text();
      return {
        status: res.status,
        ms: performance.now() - started,
        body: body.replace(`value="${username}"`, 'value="…"'),
        cookie: res.headers.get('set-cookie'),
      };
    };
    const known: number[] = [];
    const unknown: number[] = [];
    for (let round = 0; round < 5; round++) {
      const a = await attempt('mmuster');
      const b = await attempt('nobody-here');
      assert.deepEqual([a.status, b.status], [403, 403]);
      assert.equal(a.body, b.body);
      assert.deepEqual([a.cookie, b.cookie], [null, null]);
      assert.match(a.body, /<p class="notice" role="status">Unknown user name or wrong password\.<\/p>/);
      known.push(a.ms);
      unknown.push(b.ms);
    }
    const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[2] as number;
    // Without the dummy hash an unknown name would answer in a few milliseconds instead of a scrypt's time.
    const ratio = Math.min(median(known), median(unknown)) / Math.max(median(known), median(unknown));
    assert.ok(
      ratio > 0.6,
      `wrong password ${median(known).toFixed(0)} ms, unknown user ${median(unknown).toFixed(0)} ms`,
    );
  });

  test('fills in the user name again but never the password', async () => {
    const form = await openLoginForm(server.origin);
    const res = await postForm(
      server.origin,
      '/login',
      { username: 'mmuster', password: 'wrong-password', csrf_token: form.csrfToken },
      { cookie: form.cookie },
    );
    const html = await res.text();
    assert.match(html, /name="username" type="text"[^>]* value="mmuster">/);
    assert.doesNotMatch(html, /wrong-password/);
  });

  test("writes error-log lines in mod_auth_basic's words", async () => {
    const form = await openLoginForm(server.origin);
    await (
      await postForm(
        server.origin,
        '/login',
        { username: 'jmueller', password: 'bad-guess-1', csrf_token: form.csrfToken },
        { cookie: form.cookie, referer: `${server.origin}/login` },
      )
    ).arrayBuffer();
    await (
      await postForm(
        server.origin,
        '/login',
        { username: 'mallory', password: 'bad-guess-2', csrf_token: form.csrfToken },
        { cookie: form.cookie },
      )
    ).arrayBuffer();
    await (
      await fetch(`${server.origin}/entlehnte/3.json`, { headers: { authorization: basic('jmueller', 'bad-guess-3') } })
    ).arrayBuffer();
    const log = await waitFor(
      () => server.errorLog(),
      (text) => text.includes('/entlehnte/3'),
    );
    const pid = process.pid;
    assert.match(
      log,
      new RegExp(
        String.raw`^\[[^\]]+\] \[auth_basic:error\] \[pid ${pid}\] \[client 127\.0\.0\.1:\d+\] AH01617: user jmueller: authentication failure for "/login": Password Mismatch, referer: ${server.origin}/login$`,
        'm',
      ),
    );
    assert.match(
      log,
      new RegExp(
        String.raw`^\[[^\]]+\] \[auth_basic:error\] \[pid ${pid}\] \[client 127\.0\.0\.1:\d+\] AH01618: user mallory not found: /login$`,
        'm',
      ),
    );
    assert.match(
      log,
      new RegExp(
        String.raw`^\[[^\]]+\] \[auth_basic:error\] \[pid ${pid}\] \[client 127\.0\.0\.1:\d+\] AH01617: user jmueller: authentication failure for "/entlehnte/3\.json": Password Mismatch$`,
        'm',
      ),
    );
    assert.doesNotMatch(log, /bad-guess/);
  });

  const filter = '/etc/fail2ban/filter.d/apache-auth.conf';
  const fail2banMissing =
    spawnSync('fail2ban-regex', ['--version'], { timeout: 30_000 }).error !== undefined || !existsSync(filter);
  const skip =
    fail2banMissing && !process.env.CI ? 'fail2ban is not installed (apt-get install fail2ban; CI installs it)' : false;

  test("is counted by fail2ban's stock apache-auth filter, in the error log the server wrote", { skip }, async () => {
    assert.ok(
      !fail2banMissing,
      `fail2ban-regex or ${filter} is missing, but CI is set: install it with apt-get install fail2ban`,
    );
    const other = await startTestServer();
    try {
      const form = await openLoginForm(other.origin);
      for (const username of ['mmuster', 'nobody', 'Jürgen Müller']) {
        await (
          await postForm(
            other.origin,
            '/login',
            { username, password: 'wrong-password', csrf_token: form.csrfToken },
            { cookie: form.cookie },
          )
        ).arrayBuffer();
      }
      await (
        await fetch(`${other.origin}/entlehnte/2`, {
          headers: { authorization: basic('bibliothek', 'wrong-password') },
        })
      ).arrayBuffer();
      await waitFor(
        () => other.errorLog(),
        (text) => text.split('\n').length > 4,
      );
      const run = spawnSync('fail2ban-regex', [path.join(other.logDir, 'error.log'), filter], {
        encoding: 'utf8',
        timeout: 60_000,
      });
      assert.equal(run.status, 0, `fail2ban-regex failed: ${run.stderr}`);
      const summary = /^Lines: (\d+) lines, (\d+) ignored, (\d+) matched, (\d+) missed/m.exec(run.stdout);
      assert.ok(summary, run.stdout);
      assert.deepEqual(
        { lines: Number(summary[1]), matched: Number(summary[3]), missed: Number(summary[4]) },
        { lines: 4, matched: 4, missed: 0 },
      );
    } finally {
      await other.close();
    }
  });
});

describe('what the login form refuses', () => {
  test("a POST without the form's token and its cookie: 403, a fresh form, nothing started and nothing logged", async () => {
    const before = server.errorLog();
    const sessionsBefore = await server.db.query('SELECT id FROM session');
    const form = await openLoginForm(server.origin);
    const other = await openLoginForm(server.origin);
    const [issued, nonce] = form.csrfToken.split('.') as [string, string];
    const forged = `${issued}.${nonce}.${'A'.repeat(43)}`;
    // Signed as the server signs, with the site's secret, but issued 31 minutes ago (the idle time is 30).
    const [{ secret }] = (await server.db.query<{ secret: string }>('SELECT secret FROM site_secret')) as [
      { secret: string },
    ];
    const oldIssued = String(Number(issued) - 31 * 60);
    const old = `${oldIssued}.${nonce}.${createHmac('sha256', Buffer.from(secret, 'base64url')).update(`login.${oldIssued}.${nonce}`).digest('base64url')}`;
    for (const [fields, headers] of [
      [{ username: 'mmuster', password: demo.mmuster.password }, { cookie: form.cookie }],
      [{ username: 'mmuster', password: demo.mmuster.password, csrf_token: 'x'.repeat(43) }, { cookie: form.cookie }],
      [{ username: 'mmuster', password: demo.mmuster.password, csrf_token: form.csrfToken }, {}],
      // Another visitor's valid token with this visitor's cookie, a signature made up, a token past its time.
      [{ username: 'mmuster', password: demo.mmuster.password, csrf_token: other.csrfToken }, { cookie: form.cookie }],
      [
        { username: 'mmuster', password: demo.mmuster.password, csrf_token: forged },
        { cookie: `portfolio_login=${forged}` },
      ],
      [{ username: 'mmuster', password: demo.mmuster.password, csrf_token: old }, { cookie: `portfolio_login=${old}` }],
    ] as [Record<string, string>, Record<string, string>][]) {
      const res = await postForm(server.origin, '/login', fields, headers);
      assert.equal(res.status, 403, JSON.stringify(fields));
      assert.match(
        await res.text(),
        /The login form has expired or did not come from this site; please log in again\./,
      );
    }
    assert.deepEqual(await server.db.query('SELECT id FROM session'), sessionsBefore);
    assert.equal(server.errorLog(), before);
  });

  test('a POST from another site (Origin) is 403 before it runs', async () => {
    const form = await openLoginForm(server.origin);
    const res = await postForm(
      server.origin,
      '/login',
      { username: 'mmuster', password: demo.mmuster.password, csrf_token: form.csrfToken },
      { cookie: form.cookie, origin: 'https://evil.example' },
    );
    assert.equal(res.status, 403);
    assert.equal(res.headers.get('set-cookie'), null);
  });

  test('an empty user name or password is 422 and no login attempt', async () => {
    const form = await openLoginForm(server.origin);
    const res = await postForm(
      server.origin,
      '/login',
      { username: 'mmuster', password: '', csrf_token: form.csrfToken },
      { cookie: form.cookie },
    );
    assert.equal(res.status, 422);
    assert.match(await res.text(), /Enter your user name and your password\./);
  });

  test('a body that is not a form is 415', async () => {
    const form = await openLoginForm(server.origin);
    const res = await fetch(`${server.origin}/login.json`, {
      method: 'POST',
      headers: { cookie: form.cookie, 'content-type': 'application/json' },
      body: '{"username":"mmuster"}',
    });
    assert.equal(res.status, 415);
    assert.equal(
      (await readJson(res)).detail,
      'Send the body as application/x-www-form-urlencoded, not application/json.',
    );
  });

  test('a body over 1 MiB is 413', async () => {
    const form = await openLoginForm(server.origin);
    const res = await postForm(
      server.origin,
      '/login.json',
      { username: 'mmuster', password: 'x'.repeat(1024 * 1024), csrf_token: form.csrfToken },
      { cookie: form.cookie },
    );
    assert.equal(res.status, 413);
    assert.equal((await readJson(res)).detail, 'The request body is larger than 1 MiB.');
  });

  test('malformed Basic credentials are 400', async () => {
    const res = await fetch(`${server.origin}/entlehnte/2.json`, { headers: { authorization: 'Basic not-base64!' } });
    assert.equal(res.status, 400);
  });
});

describe('logging out', () => {
  test('GET /logout is 405: only the POST form logs out', async () => {
    const res = await fetch(`${server.origin}/logout`);
    assert.equal(res.status, 405);
    assert.equal(res.headers.get('allow'), 'OPTIONS, POST');
  });

  test("needs the session's CSRF token", async () => {
    const cookie = await logInAs(server.origin, 'jmueller');
    const res = await postForm(server.origin, '/logout', {}, { cookie });
    assert.equal(res.status, 403);
    assert.equal((await sessionRow(cookie))?.account_id, demo.jmueller.id);
  });

  test('ends the session, clears the cookie and the loan list is 403 again', async () => {
    const cookie = await logInAs(server.origin, 'jmueller');
    const page = await (await fetch(`${server.origin}/entlehnte/3`, { headers: { cookie } })).text();
    const csrf =
      /<form method="post" action="logout"[^>]*>\s*<input type="hidden" name="csrf_token" value="([^"]+)">/.exec(
        page,
      )?.[1] as string;
    assert.ok(csrf, page);
    const res = await postForm(server.origin, '/logout', { csrf_token: csrf }, { cookie });
    assert.equal(res.status, 303);
    assert.equal(res.headers.get('location'), `${server.origin}/login?logged_out=1`);
    assert.equal(
      res.headers.get('set-cookie'),
      'portfolio_session=; Max-Age=0; Path=/; Expires=Thu, 01 Jan 1970 00:00:00 GMT; HttpOnly; SameSite=Lax',
    );
    assert.equal(await sessionRow(cookie), null);
    assert.equal((await fetch(`${server.origin}/entlehnte/3`, { headers: { cookie } })).status, 403);
    assert.match(
      await (await fetch(`${server.origin}/login?logged_out=1`)).text(),
      /<p class="notice" role="status">You have logged out\.<\/p>/,
    );
  });
});

describe('time-outs', () => {
  test('an idle session expires after SESSION_IDLE_MINUTES; the login form says so', async () => {
    const other = await startTestServer({ SESSION_IDLE_MINUTES: '5' });
    try {
      const fresh = await logInAs(other.origin, 'mmuster');
      const stale = await logInAs(other.origin, 'mmuster');
      await other.db.query(`UPDATE session SET last_seen_at = now() - interval '4 minutes' WHERE id = $1`, [
        sha256(tokenOf(fresh)),
      ]);
      await other.db.query(`UPDATE session SET last_seen_at = now() - interval '6 minutes' WHERE id = $1`, [
        sha256(tokenOf(stale)),
      ]);
      assert.equal((await fetch(`${other.origin}/entlehnte/2.json`, { headers: { cookie: fresh } })).status, 200);
      assert.equal((await fetch(`${other.origin}/entlehnte/2.json`, { headers: { cookie: stale } })).status, 403);
      const login = await fetch(`${other.origin}/login`, { headers: { cookie: stale } });
      assert.match(
        await login.text(),
        /<p class="notice" role="status">Your session has expired; please log in again\.<\/p>/,
      );
      assert.notEqual(cookieOf(login), stale, 'the form comes with a login token, not with the expired session');
    } finally {
      await other.close();
    }
  });

  test('a request within the idle time-out keeps the session alive', async () => {
    const cookie = await logInAs(server.origin, 'mmuster');
    await server.db.query(`UPDATE session SET last_seen_at = now() - interval '20 minutes' WHERE id = $1`, [
      sha256(tokenOf(cookie)),
    ]);
    assert.equal((await fetch(`${server.origin}/entlehnte/2.json`, { headers: { cookie } })).status, 200);
    const [row] = await server.db.query<{ recent: boolean }>(
      `SELECT last_seen_at > now() - interval '1 minute' AS recent FROM session WHERE id = $1`,
      [sha256(tokenOf(cookie))],
    );
    assert.equal(row?.recent, true);
  });

  test('expired sessions are deleted at the next login and by the periodic sweep', async () => {
    const insertExpired = (id: string) =>
      server.db.query(
        `INSERT INTO session (id, account_id, csrf_token, created_at, last_seen_at, expires_at) VALUES ($1, 2, 'x', now() - interval '2 days', now() - interval '2 days', now() - interval '1 day')`,
        [id],
      );
    await insertExpired(sha256('expired-1'));
    await logInAs(server.origin, 'aschaefer');
    assert.deepEqual(await server.db.query('SELECT id FROM session WHERE id = $1', [sha256('expired-1')]), []);
    await insertExpired(sha256('expired-2'));
    const store = new SessionStore(server.db, { idleMinutes: 30, maxHours: 12 });
    assert.equal(await store.deleteExpired(), 1);
    assert.deepEqual(await server.db.query('SELECT id FROM session WHERE id = $1', [sha256('expired-2')]), []);
  });
});

describe('Basic credentials and public documents', () => {
  test('Basic credentials create no session', async () => {
    const [{ count: before }] = (await server.db.query<{ count: number }>(
      'SELECT count(*)::integer AS count FROM session',
    )) as [{ count: number }];
    const res = await fetch(`${server.origin}/entlehnte/2.json`, {
      headers: { authorization: basic('mmuster', demo.mmuster.password) },
    });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('set-cookie'), null);
    const [{ count: afterwards }] = (await server.db.query<{ count: number }>(
      'SELECT count(*)::integer AS count FROM session',
    )) as [{ count: number }];
    assert.equal(afterwards, before);
  });

  test('GET /login.json tells an API client who its credentials are', async () => {
    const res = await fetch(`${server.origin}/login.json`, {
      headers: { authorization: basic('bibliothek', demo.bibliothek.password) },
    });
    assert.deepEqual(await res.json(), {
      angemeldet: { name: 'bibliothek', rolle: 'librarian', entlehnte: `${server.origin}/entlehnte/1` },
      login: `${server.origin}/login`,
      meldung: null,
    });
  });

  test('public documents neither read nor set the session, with a live cookie or an expired one', async () => {
    const live = await logInAs(server.origin, 'mmuster');
    const expired = await logInAs(server.origin, 'jmueller');
    await server.db.query(`UPDATE session SET last_seen_at = now() - interval '10 minutes' WHERE id = $1`, [
      sha256(tokenOf(live)),
    ]);
    await server.db.query(`UPDATE session SET expires_at = now() - interval '1 second' WHERE id = $1`, [
      sha256(tokenOf(expired)),
    ]);
    const seen = async () => await server.db.query('SELECT id, last_seen_at FROM session ORDER BY id');
    const snapshot = await seen();
    for (const page of [
      '/',
      '/personen',
      '/person/max-muster',
      '/person.php?pid=1',
      '/werk/7',
      '/search?query=any,contains,a',
      '/nothing',
      '/img/max-muster.svg',
    ]) {
      for (const cookie of [live, expired]) {
        const res = await rawRequest(server.origin, page, {
          headers: { cookie, authorization: basic('mmuster', 'wrong-password') },
        });
        assert.equal(res.headers['set-cookie'], undefined, page);
        if (res.status === 200 && !page.startsWith('/img'))
          assert.equal(res.headers['cache-control'], 'public, max-age=0, s-maxage=86400', page);
      }
    }
    assert.deepEqual(await seen(), snapshot, 'no session was touched or deleted');
    assert.doesNotMatch(server.errorLog(), /authentication failure for "\/(?!login|entlehnte)/);
  });

  test('public pages show "Log in" and an empty hidden menu for js/site.js to fill; pages that read the session show who is logged in', async () => {
    const cookie = await logInAs(server.origin, 'mmuster');
    const publicPage = await (await fetch(`${server.origin}/personen`, { headers: { cookie } })).text();
    assert.match(
      publicPage,
      /<details class="account" hidden>\n {4}<summary><span class="who"><span class="as">Logged in as <\/span><strong data-me="name"><\/strong><\/span><\/summary>/,
    );
    assert.match(publicPage, /\n {2}<a class="login" rel="nofollow" href="login">Log in<\/a>\n/);
    assert.doesNotMatch(publicPage, /mmuster/);
    const loans = await (await fetch(`${server.origin}/entlehnte/2`, { headers: { cookie } })).text();
    assert.match(
      loans,
      /<details class="account" data-known>\n {4}<summary><span class="who"><span class="as">Logged in as <\/span><strong data-me="name">mmuster<\/strong><\/span><\/summary>\n {4}<div class="menu">\n {6}<a data-me="loans" rel="nofollow" href="entlehnte\/2">My loans<\/a>\n {6}<form method="post" action="logout" data-me="logout">/,
    );
    assert.match(loans, /<a class="login" rel="nofollow" href="login" hidden>Log in<\/a>/);
    const viaBasic = await (
      await fetch(`${server.origin}/entlehnte/2`, {
        headers: { authorization: basic('mmuster', demo.mmuster.password) },
      })
    ).text();
    assert.match(
      viaBasic,
      /<strong data-me="name">mmuster<\/strong><\/span><\/summary>\n {4}<div class="menu">\n {6}<a data-me="loans" rel="nofollow" href="entlehnte\/2">My loans<\/a>\n {6}<form method="post" action="logout" data-me="logout" hidden>/,
    );
  });

  test("a logged-in user's way back stays a path on this site, whatever it looks like", async () => {
    const cookie = await logInAs(server.origin, 'mmuster');
    const html = await (
      await fetch(`${server.origin}/login?back=/javascript:alert(1)`, { headers: { cookie } })
    ).text();
    assert.match(html, /<a href="\.\/javascript:alert\(1\)">Back to where you were<\/a>/);
  });

  test('a login from a logged-in session replaces it under a new id', async () => {
    const first = await logInAs(server.origin, 'mmuster');
    const page = await (await fetch(`${server.origin}/login`, { headers: { cookie: first } })).text();
    assert.match(page, /<p>You are logged in as <strong>mmuster<\/strong>\.<\/p>/);
    const csrf = /name="csrf_token" value="([^"]+)"/.exec(page)?.[1] as string;
    const res = await postForm(
      server.origin,
      '/login',
      { username: 'aschaefer', password: demo.aschaefer.password, csrf_token: csrf },
      { cookie: first },
    );
    assert.equal(res.status, 303);
    const second = cookieOf(res) as string;
    assert.notEqual(second, first);
    assert.equal(await sessionRow(first), null);
    assert.equal((await sessionRow(second))?.account_id, demo.aschaefer.id);
  });
});
