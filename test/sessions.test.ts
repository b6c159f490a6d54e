// Sessions under attack: fixation, cross-site posts, open redirects through the login's way
// back, password guessing (429, also across worker processes sharing the database, and never for
// an account that has not been failing from the address) and forged Host headers. lib/auth/session.ts, lib/auth/request-auth.ts, lib/auth/login-throttle.ts, scripts/login.ts.
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import type { TestDb, TestServer } from './helpers.ts';
import { openTestDb, rawRequest, readJson, startTestServer, waitFor } from './helpers.ts';
import { basic, cookieOf, demo, logInAs, openLoginForm, postForm } from './login-helpers.ts';

let db: TestDb;
let server: TestServer;
// A second process of the same site on the same database, as with WEB_CONCURRENCY=2.
let twin: TestServer;

before(async () => {
  db = await openTestDb();
  server = await startTestServer({ NODE_ENV: 'production' }, { db });
  twin = await startTestServer({ NODE_ENV: 'production' }, { db });
});
after(async () => {
  await twin.close();
  await server.close();
  await db.drop();
});
beforeEach(() => server.db.query('DELETE FROM login_attempt'));

async function tryLogin(origin: string, username: string, password: string): Promise<Response> {
  const form = await openLoginForm(origin);
  return postForm(origin, '/login', { username, password, csrf_token: form.csrfToken }, { cookie: form.cookie });
}

async function loanListStatus(cookie: string): Promise<number> {
  return (await fetch(`${server.origin}/entlehnte/2.json`, { headers: { cookie } })).status;
}

describe('session fixation', () => {
  test('a session id the browser brings is never adopted: the login starts a new one', async () => {
    const planted = `portfolio_session=${'A'.repeat(43)}`;
    const form = await openLoginForm(server.origin, planted);
    assert.notEqual(form.cookie, planted, 'an unknown id gets a fresh anonymous session');
    const res = await postForm(
      server.origin,
      '/login',
      { username: 'mmuster', password: demo.mmuster.password, csrf_token: form.csrfToken },
      { cookie: form.cookie },
    );
    assert.equal(res.status, 303);
    const session = cookieOf(res) as string;
    assert.notEqual(session, form.cookie);
    assert.equal(await loanListStatus(session), 200);
    assert.equal(await loanListStatus(planted), 403);
    // The anonymous session an attacker could have planted is gone, not promoted.
    assert.equal(await loanListStatus(form.cookie), 403);
  });

  test("a planted cookie without the form's token cannot log anyone in", async () => {
    const planted = `portfolio_session=${'B'.repeat(43)}`;
    const res = await postForm(
      server.origin,
      '/login',
      { username: 'mmuster', password: demo.mmuster.password, csrf_token: 'guess' },
      { cookie: planted },
    );
    assert.equal(res.status, 403);
    assert.equal(await loanListStatus(planted), 403);
  });
});

describe('cross-site posts', () => {
  for (const origin of ['http://evil.example', 'null', 'http://127.0.0.1.evil.example', 'https://127.0.0.1']) {
    test(`a login posted from ${origin} is 403 and starts no session`, async () => {
      const form = await openLoginForm(server.origin);
      const before = await server.db.query('SELECT id FROM session WHERE account_id IS NOT NULL');
      const res = await postForm(
        server.origin,
        '/login',
        { username: 'mmuster', password: demo.mmuster.password, csrf_token: form.csrfToken },
        { cookie: form.cookie, origin },
      );
      assert.equal(res.status, 403);
      assert.equal(res.headers.get('set-cookie'), null);
      assert.deepEqual(await server.db.query('SELECT id FROM session WHERE account_id IS NOT NULL'), before);
    });
  }

  test('a log-out posted from another site is 403 and the session lives on', async () => {
    const cookie = await logInAs(server.origin, 'mmuster');
    const page = await (await fetch(`${server.origin}/entlehnte/2`, { headers: { cookie } })).text();
    const csrfToken = /name="csrf_token" value="([^"]+)"/.exec(page)?.[1] as string;
    const res = await postForm(
      server.origin,
      '/logout',
      { csrf_token: csrfToken },
      { cookie, origin: 'http://evil.example' },
    );
    assert.equal(res.status, 403);
    assert.equal(await loanListStatus(cookie), 200);
  });
});

describe('the way back after the login', () => {
  const hostile = [
    'https://evil.example/',
    '//evil.example/',
    '///evil.example/',
    '/\\evil.example',
    '\\\\evil.example',
    '/%2F%2Fevil.example',
    'javascript:alert(1)',
    'http:evil.example',
    '/\t/evil.example',
    '/\r\nLocation: https://evil.example',
    ' //evil.example',
    '/%0d%0aSet-Cookie:x=1',
    'data:text/html,<script>alert(1)</script>',
    '/login?back=//evil.example',
  ];
  for (const back of hostile) {
    test(`${JSON.stringify(back)} leads to a page of this site`, async () => {
      const form = await openLoginForm(server.origin);
      const res = await postForm(
        server.origin,
        '/login',
        { username: 'mmuster', password: demo.mmuster.password, csrf_token: form.csrfToken, back },
        { cookie: form.cookie },
      );
      assert.equal(res.status, 303);
      const location = res.headers.get('location') as string;
      assert.equal(new URL(location).origin, server.origin, location);
      assert.doesNotMatch(location, /evil\.example\/|\r|\n|javascript:|data:/i);
      assert.equal(res.headers.getSetCookie().length, 1);
    });
  }
});

describe('repeated failed logins', () => {
  test('more than 10 failures for an account from one address: 429 from there, even with the right password', async () => {
    const attempts = await Promise.all(
      Array.from({ length: 12 }, () => tryLogin(server.origin, 'mmuster', 'wrong-password')),
    );
    // Counted once their password checks failed: guesses sent together are checked, at most as many
    // as wait in one address's line (lib/auth/check-queue.ts).
    assert.deepEqual(
      attempts.map((r) => r.status),
      Array(12).fill(403),
    );
    const right = await tryLogin(server.origin, 'mmuster', demo.mmuster.password);
    assert.equal(right.status, 429);
    // The seconds until the window that began with the first failure ends.
    const [window] = await server.db.query<{ left: number }>(
      `SELECT ceil(extract(epoch FROM window_start + interval '15 minutes' - now()))::int AS left FROM login_attempt WHERE key = 'pair:mmuster|127.0.0.1'`,
    );
    const retryAfter = Number(right.headers.get('retry-after'));
    assert.ok(
      Math.abs(retryAfter - (window as { left: number }).left) <= 1,
      `${retryAfter} s, the window ends in ${window?.left} s`,
    );
    assert.match(
      await right.text(),
      /Too many failed logins for this account from your address; try again in 15 minutes\./,
    );
    // Basic credentials are the same door.
    const viaBasic = await fetch(`${server.origin}/entlehnte/2.json`, {
      headers: { authorization: basic('mmuster', demo.mmuster.password) },
    });
    assert.equal(viaBasic.status, 429);
    assert.equal(
      (await readJson(viaBasic)).detail,
      'Too many failed logins for this account from your address; try again in 15 minutes.',
    );
    const log = await waitFor(server.errorLog, (text) => text.includes('refused for'));
    assert.match(
      log,
      /\[app:error\] \[pid \d+\] \[client 127\.0\.0\.1:\d+\] login for user mmuster from 127\.0\.0\.1 refused for \d+ s: 12 failed logins for user mmuster from 127\.0\.0\.1 within 900 s/,
    );
    // Every failure is also in fail2ban's words.
    assert.equal(
      (log.match(/AH01617: user mmuster: authentication failure for "\/login": Password Mismatch/g) ?? []).length,
      12,
    );
  });

  test('another account from the same address is not held up', async () => {
    await Promise.all(Array.from({ length: 11 }, () => tryLogin(server.origin, 'mmuster', 'wrong-password')));
    assert.equal((await tryLogin(server.origin, 'jmueller', demo.jmueller.password)).status, 303);
  });

  test('once the 15 minutes are over, the account logs in again', async () => {
    await Promise.all(Array.from({ length: 11 }, () => tryLogin(server.origin, 'mmuster', 'wrong-password')));
    assert.equal((await tryLogin(server.origin, 'mmuster', demo.mmuster.password)).status, 429);
    await server.db.query(`UPDATE login_attempt SET window_start = now() - interval '15 minutes 1 second'`);
    assert.equal((await tryLogin(server.origin, 'mmuster', demo.mmuster.password)).status, 303);
  });

  test('the count is shared by every process on the database', async () => {
    const first = await Promise.all(
      Array.from({ length: 6 }, () => tryLogin(server.origin, 'jmueller', 'wrong-password')),
    );
    const second = await Promise.all(
      Array.from({ length: 4 }, () => tryLogin(twin.origin, 'jmueller', 'wrong-password')),
    );
    assert.deepEqual(
      [...first, ...second].map((r) => r.status),
      Array(10).fill(403),
    );
    assert.equal((await tryLogin(twin.origin, 'jmueller', demo.jmueller.password)).status, 429);
    assert.equal((await tryLogin(server.origin, 'jmueller', demo.jmueller.password)).status, 429);
  });

  test('100 failures from one address hold up only the account failing from there: the right password for another logs in', async () => {
    // As the throttle writes them after 100 failed checks for mmuster (each a third of a second of scrypt).
    await server.db.query(
      `INSERT INTO login_attempt (key, failures, window_start) VALUES ('address:127.0.0.1', 100, now()), ('pair:mmuster|127.0.0.1', 100, now())`,
    );
    assert.equal((await tryLogin(server.origin, 'aschaefer', demo.aschaefer.password)).status, 303);
    const viaBasic = await fetch(`${server.origin}/entlehnte/3.json`, {
      headers: { authorization: basic('jmueller', demo.jmueller.password) },
    });
    assert.equal(viaBasic.status, 200);
    const failing = await tryLogin(server.origin, 'mmuster', demo.mmuster.password);
    assert.equal(failing.status, 429);
    assert.match(
      await failing.text(),
      /Too many failed logins for this account from your address; try again in 15 minutes\./,
    );
  });

  test('from an address with 100 failures, a wrong password is checked and 403; the third failure of an account holds it up while the address stays noisy', async () => {
    await server.db.query(
      `INSERT INTO login_attempt (key, failures, window_start) VALUES ('address:127.0.0.1', 100, now() - interval '14 minutes')`,
    );
    const wrong = await Promise.all(
      Array.from({ length: 3 }, () => tryLogin(server.origin, 'jmueller', 'wrong-password')),
    );
    assert.deepEqual(
      wrong.map((r) => r.status),
      [403, 403, 403],
    );
    const held = await tryLogin(server.origin, 'jmueller', demo.jmueller.password);
    assert.equal(held.status, 429);
    // Until the address's window ends, about a minute from now, not the account's 15 minutes.
    const [window] = await server.db.query<{ left: number }>(
      `SELECT ceil(extract(epoch FROM window_start + interval '15 minutes' - now()))::int AS left FROM login_attempt WHERE key = 'address:127.0.0.1'`,
    );
    const retryAfter = Number(held.headers.get('retry-after'));
    assert.ok(
      retryAfter <= 60 && Math.abs(retryAfter - (window as { left: number }).left) <= 1,
      `${retryAfter} s, the address's window ends in ${window?.left} s`,
    );
    // Another test's line for jmueller may be there already: wait for this one's.
    const log = await waitFor(server.errorLog, (text) =>
      text.includes('failed logins for user jmueller from 127.0.0.1, and'),
    );
    assert.match(
      log,
      /login for user jmueller from 127\.0\.0\.1 refused for \d+ s: 3 failed logins for user jmueller from 127\.0\.0\.1, and 103 from 127\.0\.0\.1 within 900 s/,
    );
    await server.db.query(
      `UPDATE login_attempt SET window_start = now() - interval '15 minutes 1 second' WHERE key = 'address:127.0.0.1'`,
    );
    assert.equal((await tryLogin(server.origin, 'jmueller', demo.jmueller.password)).status, 303);
  });

  test('empty Basic credentials are no login: answered as anonymous, with no check, no count and no log line', async () => {
    const logBefore = server.errorLog();
    const statuses = await Promise.all(
      Array.from({ length: 120 }, (_, i) => {
        const authorization = ['Basic Og==', basic('mmuster', ''), basic('', 'a-password'), basic('  ', 'a-password')][
          i % 4
        ] as string;
        return fetch(`${server.origin}/entlehnte/2.json`, { headers: { authorization } }).then(
          async (res) => (await res.arrayBuffer(), res.status),
        );
      }),
    );
    assert.deepEqual(statuses, Array(120).fill(403));
    assert.deepEqual(await server.db.query('SELECT key FROM login_attempt'), []);
    assert.equal(server.errorLog(), logBefore);
    const json = await readJson(
      await fetch(`${server.origin}/login.json`, { headers: { authorization: 'Basic Og==' } }),
    );
    assert.equal(json.angemeldet, null);
  });

  test('a successful login starts its account over from that address, and nothing more', async () => {
    await tryLogin(server.origin, 'aschaefer', 'wrong-password');
    assert.equal((await tryLogin(server.origin, 'aschaefer', demo.aschaefer.password)).status, 303);
    const rows = await server.db.query<{ key: string; failures: number }>(
      'SELECT key, failures FROM login_attempt ORDER BY key',
    );
    assert.deepEqual(rows, [{ key: 'address:127.0.0.1', failures: 1 }]);
  });
});

describe('forged Host headers', () => {
  const forged = [
    'evil.example',
    '127.0.0.1@evil.example',
    'evil.example:80',
    '127.0.0.1.evil.example',
    'localhost:8080@evil.example',
    '127.0.0.1/evil.example',
    '127.0.0.1 evil.example',
    '[::1]evil.example',
  ];
  for (const host of forged) {
    test(`Host: ${host} is 400 and never reaches a link`, async () => {
      for (const target of [
        '/person/max-muster',
        '/personen',
        '/login',
        '/person/max-muster/',
        '/search?query=any,contains,x',
      ]) {
        const res = await rawRequest(server.origin, target, { headers: { host, accept: 'application/json' } });
        assert.equal(res.status, 400, target);
        assert.doesNotMatch(JSON.stringify(res.headers), /evil/, target);
        // The message names the refused host for the operator; the body holds no link at all.
        const problem = JSON.parse(res.body);
        assert.deepEqual(Object.keys(problem), ['type', 'title', 'status', 'detail']);
        assert.doesNotMatch(res.body, /https?:\/\//, target);
      }
    });
  }

  test('X-Forwarded-Host and Forwarded are ignored: links keep the allowed Host', async () => {
    const res = await rawRequest(server.origin, '/person/max-muster.json', {
      headers: {
        host: '127.0.0.1',
        'x-forwarded-host': 'evil.example',
        forwarded: 'host=evil.example',
        'x-forwarded-proto': 'https',
      },
    });
    assert.equal(res.status, 200);
    assert.equal(JSON.parse(res.body).image, 'http://127.0.0.1/img/max-muster.svg');
    assert.doesNotMatch(JSON.stringify(res.headers) + res.body, /evil/);
  });
});
