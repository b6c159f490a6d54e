// Behind a reverse proxy (TRUSTED_PROXIES=loopback, the tests' own address): the client address the
// proxy names reaches the access log, the error log, the login throttle and the rewrite rules;
// the proxy's https makes cookies Secure and the https origin acceptable; a forwarded header from
// a peer that is not trusted, or one that cannot be read, changes nothing. And logins that nobody
// can take away from their owner: failures count per account and client (an address, an IPv6 /64),
// after the check, and password checks wait their turn by client, the quietest first, and are
// dropped when their client leaves.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { after, before, beforeEach, describe, test } from 'node:test';
import type { TestServer } from './helpers.ts';
import { rawRequest, readJson, startTestServer, waitFor } from './helpers.ts';
import { basic, demo, openLoginForm, postForm } from './login-helpers.ts';

let server: TestServer;
let direct: TestServer;
let rulesDir: string;

before(async () => {
  // The site's table, and one rule more that answers by the client's address (REMOTE_ADDR).
  rulesDir = mkdtempSync(path.join(os.tmpdir(), 'rules-'));
  const rules = JSON.parse(
    (await import('node:fs')).readFileSync(path.join(process.cwd(), 'rewrite-rules.json'), 'utf8'),
  ) as { rules: unknown[] };
  rules.rules.unshift(
    {
      pattern: '^/intern$',
      substitution: '/index.php',
      flags: ['L'],
      conditions: [{ test: '%{REMOTE_ADDR}', pattern: '=203.0.113.7' }],
    },
    { pattern: '^/intern$', substitution: '-', flags: ['F'] },
  );
  writeFileSync(path.join(rulesDir, 'rules.json'), JSON.stringify(rules));
  server = await startTestServer({
    TRUSTED_PROXIES: 'loopback',
    REWRITE_RULES: path.join(rulesDir, 'rules.json'),
    ALLOWED_HOSTS: 'localhost,127.0.0.1,localhost:8443',
  });
  direct = await startTestServer({}, { db: { db: server.db, url: null, drop: async () => {} } });
});
after(async () => {
  await direct.close();
  await server.close();
  rmSync(rulesDir, { recursive: true, force: true });
});
beforeEach(() => server.db.query('DELETE FROM login_attempt'));

const from = (address: string, more: Record<string, string> = {}) => ({ 'x-forwarded-for': address, ...more });

function tryLogin(
  origin: string,
  username: string,
  password: string,
  headers: Record<string, string> = {},
): Promise<Response> {
  return openLoginForm(origin).then((form) =>
    postForm(origin, '/login', { username, password, csrf_token: form.csrfToken }, { cookie: form.cookie, ...headers }),
  );
}

describe('the client a trusted proxy names', () => {
  test('reaches the access log, the error log and the rewrite rules', async () => {
    await fetch(`${server.origin}/personen`, { headers: from('203.0.113.7') });
    await fetch(`${server.origin}/entlehnte/2.json`, {
      headers: from('198.51.100.23, 203.0.113.9', { authorization: basic('mmuster', 'wrong-password') }),
    });
    const access = await waitFor(server.accessLog, (log) => log.includes('/entlehnte/2.json'));
    assert.match(access, /^203\.0\.113\.7 - - \[[^\]]+\] "GET \/personen HTTP\/1\.1" 200 /m);
    // The proxy nearest the client is the last untrusted address: 203.0.113.9, not what it was told.
    assert.match(access, /^203\.0\.113\.9 - - \[[^\]]+\] "GET \/entlehnte\/2\.json HTTP\/1\.1" 403 /m);
    const errors = await waitFor(server.errorLog, (log) => log.includes('AH01617'));
    assert.match(
      errors,
      /\[auth_basic:error\] \[pid \d+\] \[client 203\.0\.113\.9\] AH01617: user mmuster: authentication failure for "\/entlehnte\/2\.json": Password Mismatch/,
    );
    assert.equal((await fetch(`${server.origin}/intern`, { headers: from('203.0.113.7') })).status, 200);
    assert.equal((await fetch(`${server.origin}/intern`, { headers: from('203.0.113.8') })).status, 403);
    assert.equal((await fetch(`${server.origin}/intern`)).status, 403);
  });

  test('Forwarded (RFC 7239) is read as well, IPv6 and ports included', async () => {
    await fetch(`${server.origin}/werk/7`, {
      headers: { forwarded: 'for="[2001:db8:cafe::17]:4711";proto=https, for=127.0.0.1' },
    });
    const access = await waitFor(server.accessLog, (log) => log.includes('/werk/7 '));
    assert.match(access, /^2001:db8:cafe::17 - - \[[^\]]+\] "GET \/werk\/7 HTTP\/1\.1" 200 /m);
  });

  test('Forwarded beside X-Forwarded-For is not read: a proxy that appends to one passes the other on from the client', async () => {
    await fetch(`${server.origin}/werk/8?both`, { headers: from('198.51.100.77', { forwarded: 'for=127.0.0.1' }) });
    const access = await waitFor(server.accessLog, (log) => log.includes('/werk/8?both'));
    assert.match(access, /^198\.51\.100\.77 - - \[[^\]]+\] "GET \/werk\/8\?both HTTP\/1\.1" 200 /m);
    // The client's own Forwarded cannot make it loopback, which /metrics would answer.
    assert.equal(
      (await fetch(`${server.origin}/metrics`, { headers: from('198.51.100.77', { forwarded: 'for=127.0.0.1' }) }))
        .status,
      404,
    );
  });

  test('over https at the proxy: links are https, the login cookie Secure, the https Origin accepted', async () => {
    const https = { 'x-forwarded-proto': 'https' };
    const person = await rawRequest(server.origin, '/person/max-muster.json', {
      headers: { host: 'localhost', ...https },
    });
    assert.equal(JSON.parse(person.body).image, 'https://localhost/img/max-muster.svg');
    const form = await fetch(`${server.origin}/login`, { headers: https });
    assert.match(form.headers.get('set-cookie') ?? '', /; Secure; SameSite=Lax$/);
    const token = /name="csrf_token" value="([^"]+)"/.exec(await form.text())?.[1] as string;
    const cookie = (form.headers.get('set-cookie') as string).split(';')[0] as string;
    const login = await postForm(
      server.origin,
      '/login',
      { username: 'mmuster', password: demo.mmuster.password, csrf_token: token },
      { cookie, origin: `https://127.0.0.1:${new URL(server.origin).port}`, ...https },
    );
    assert.equal(login.status, 303);
    // Over HTTPS at the root of the host, with the __Host- prefix: no sibling host and no plain HTTP can set it.
    assert.match(
      login.headers.get('set-cookie') ?? '',
      /^__Host-portfolio_session=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; Secure; SameSite=Lax$/,
    );
    const session = /=([^;]+)/.exec(login.headers.get('set-cookie') as string)?.[1] as string;
    const me = (cookie: string) => fetch(`${server.origin}/me.json`, { headers: { cookie, ...https } }).then(readJson);
    assert.equal((await me(`__Host-portfolio_session=${session}`)).angemeldet?.name, 'mmuster');
    assert.equal(
      (await me(`portfolio_session=${session}`)).angemeldet,
      null,
      'the session is read under its prefixed name only',
    );
  });

  test('X-Forwarded-Host is believed from a trusted proxy, and must still be a host served here', async () => {
    const allowed = await rawRequest(server.origin, '/person/max-muster.json', {
      headers: { host: '127.0.0.1', 'x-forwarded-host': 'localhost:8443' },
    });
    assert.equal(JSON.parse(allowed.body).image, 'http://localhost:8443/img/max-muster.svg');
    const forged = await rawRequest(server.origin, '/person/max-muster.json', {
      headers: { host: '127.0.0.1', 'x-forwarded-host': 'evil.example' },
    });
    assert.equal(forged.status, 400);
    // The proxy's port must be named: another one is no origin of this site.
    const port = await rawRequest(server.origin, '/person/max-muster.json', {
      headers: { host: '127.0.0.1', 'x-forwarded-host': 'localhost:8444' },
    });
    assert.equal(port.status, 400);
  });

  test('from a peer that is not trusted, forwarding headers change nothing and forge no address', async () => {
    await fetch(`${direct.origin}/personen?direct=1`, {
      headers: from('203.0.113.7', { 'x-forwarded-proto': 'https', forwarded: 'for=198.51.100.1' }),
    });
    const access = await waitFor(direct.accessLog, (log) => log.includes('direct=1'));
    assert.match(access, /^127\.0\.0\.1 - - \[[^\]]+\] "GET \/personen\?direct=1 /m);
    assert.doesNotMatch(access, /203\.0\.113\.7|198\.51\.100\.1/);
  });

  test('a malformed one from a trusted proxy is ignored, never a 500, and said once a minute at most', async () => {
    for (const header of ['not-an-address', '203.0.113.7, <script>', '127.0.0.1, 999.1.1.1']) {
      const res = await fetch(`${server.origin}/personen?malformed=1`, { headers: from(header) });
      assert.equal(res.status, 200, header);
    }
    const access = await waitFor(server.accessLog, (log) => (log.match(/malformed=1/g) ?? []).length === 3);
    assert.equal((access.match(/^127\.0\.0\.1 - - .*malformed=1/gm) ?? []).length, 3);
    const errors = await waitFor(server.errorLog, (log) => log.includes('which is no address'));
    assert.equal((errors.match(/which is no address/g) ?? []).length, 1);
    assert.match(
      errors,
      /\[app:warn\] \[pid \d+\] \[client 127\.0\.0\.1:\d+\] X-Forwarded-For names "not-an-address", which is no address; the socket's address is used/,
    );
  });
});

describe('logins nobody can take away from their owner', () => {
  test('11 failures for the librarian from other addresses: the right password from a new one logs in', async (t) => {
    const failures = await Promise.all(
      Array.from({ length: 11 }, (_, i) =>
        tryLogin(server.origin, 'bibliothek', 'wrong-password', from(`198.51.100.${i + 1}`)),
      ),
    );
    assert.deepEqual(
      failures.map((r) => r.status),
      Array(11).fill(403),
    );
    const started = performance.now();
    const right = await tryLogin(server.origin, 'bibliothek', demo.bibliothek.password, from('192.0.2.200'));
    t.diagnostic(`the right password after 11 failures elsewhere: ${Math.round(performance.now() - started)} ms`);
    assert.equal(right.status, 303);
  });

  test('100 failures from 100 addresses hold up none of the others', async () => {
    // As the throttle writes them after 100 failed checks (a check is a third of a second of scrypt).
    for (let i = 1; i <= 100; i++) {
      await server.db.query(
        `INSERT INTO login_attempt (key, failures, window_start) VALUES ($1, 1, now()), ($2, 1, now())`,
        [`pair:bibliothek|10.9.0.${i}`, `address:10.9.0.${i}`],
      );
    }
    assert.equal(
      (await tryLogin(server.origin, 'bibliothek', demo.bibliothek.password, from('192.0.2.201'))).status,
      303,
    );
  });

  test('11 failures from one address: that address gets 429 for the account, every other address logs in', async () => {
    for (let i = 0; i < 11; i++) await tryLogin(server.origin, 'jmueller', 'wrong-password', from('203.0.113.66'));
    assert.equal((await tryLogin(server.origin, 'jmueller', demo.jmueller.password, from('203.0.113.66'))).status, 429);
    assert.equal((await tryLogin(server.origin, 'jmueller', demo.jmueller.password, from('203.0.113.67'))).status, 303);
  });

  test('90 bogus Basic requests at once from one address: a login from another is not held up', async (t) => {
    const bogus = Promise.all(
      Array.from({ length: 90 }, () =>
        fetch(`${server.origin}/entlehnte/2.json`, {
          headers: from('203.0.113.99', { authorization: basic('mallory', 'guess') }),
        }),
      ),
    );
    await new Promise((resolve) => setTimeout(resolve, 50));
    const started = performance.now();
    const right = await tryLogin(server.origin, 'mmuster', demo.mmuster.password, from('192.0.2.202'));
    const took = Math.round(performance.now() - started);
    const statuses = (await bogus).map((r) => r.status);
    t.diagnostic(`a login beside 90 bogus requests: ${took} ms; bogus: ${JSON.stringify(count(statuses))}`);
    assert.equal(right.status, 303);
    // The queue of that one address is bounded: the rest are told to come back at once.
    assert.deepEqual(Object.keys(count(statuses)).sort(), ['403', '503']);
  });

  test('20 addresses flooding the password checks: a correct login from another answers within a small ratio of its time alone', async (t) => {
    const alone = await timedLogins(['192.0.2.210', '192.0.2.211', '192.0.2.212']);
    // 16 bogus checks from each of 20 addresses at once, more than the queue holds.
    let full: () => void = () => {};
    const refused = new Promise<void>((resolve) => (full = resolve));
    const flood = Promise.all(
      Array.from({ length: 20 * 16 }, async (_, i) => {
        const res = await fetch(`${server.origin}/entlehnte/2.json`, {
          headers: from(`198.51.100.${100 + (i % 20)}`, { authorization: basic('mallory', 'guess') }),
        });
        await res.arrayBuffer();
        if (res.status === 503) full();
        return res.status;
      }),
    );
    await Promise.race([refused, flood]);
    const under = await timedLogins(['192.0.2.213', '192.0.2.214', '192.0.2.215']);
    const statuses = count(await flood);
    const ratio = under.ms / alone.ms;
    t.diagnostic(
      `a correct login alone: ${alone.ms.toFixed(0)} ms, beside 20 addresses' flood: ${under.ms.toFixed(0)} ms (${ratio.toFixed(2)}x); flood: ${JSON.stringify(statuses)}`,
    );
    assert.deepEqual(
      [alone.statuses, under.statuses],
      [
        [303, 303, 303],
        [303, 303, 303],
      ],
    );
    assert.deepEqual(Object.keys(statuses).sort(), ['403', '503']);
    // It waits for one running check to end at most, then runs beside the other: well under 5x
    // (the turns by address in a round made it wait behind every flooding address: 25x).
    assert.ok(ratio < 5, `${ratio.toFixed(2)}x its time alone`);
  });

  test('the addresses of one IPv6 /64 are one client: one line of checks, one count; IPv4-mapped IPv6 is IPv4', async () => {
    const statuses = await Promise.all(
      Array.from({ length: 24 }, async (_, i) => {
        const res = await fetch(`${server.origin}/entlehnte/2.json`, {
          headers: from(`2001:db8:77:1:${(i + 1).toString(16)}::${i + 1}`, {
            authorization: basic('mallory', 'guess'),
          }),
        });
        await res.arrayBuffer();
        return res.status;
      }),
    );
    const mapped = await fetch(`${server.origin}/entlehnte/2.json`, {
      headers: from('::ffff:203.0.113.80', { authorization: basic('mallory', 'guess') }),
    });
    assert.equal(mapped.status, 403);
    // At most 16 wait beside the two that run: the others are answered 503 at once.
    const counted = count(statuses);
    assert.deepEqual(Object.keys(counted).sort(), ['403', '503']);
    const rows = await server.db.query<{ key: string; failures: number }>(
      'SELECT key, failures FROM login_attempt ORDER BY key',
    );
    assert.deepEqual(rows, [
      { key: 'address:2001:db8:77:1::/64', failures: counted['403'] },
      { key: 'address:203.0.113.80', failures: 1 },
      { key: 'pair:mallory|2001:db8:77:1::/64', failures: counted['403'] },
      { key: 'pair:mallory|203.0.113.80', failures: 1 },
    ]);
  });

  test('a client that closes its connection while its check waits: the check is dropped and never runs', async () => {
    const before = await checkCounts();
    // Two bogus checks from one address take both slots, then a third from it waits behind them.
    const bogus = Promise.all(
      Array.from(
        { length: 2 },
        async () =>
          (
            await fetch(`${server.origin}/entlehnte/2.json`, {
              headers: from('203.0.113.120', { authorization: basic('mallory', 'guess') }),
            })
          ).status,
      ),
    );
    await until(async () => (await checkCounts()).checked - before.checked === 2);
    const url = new URL(`${server.origin}/entlehnte/2.json`);
    const leaving = http.get({
      host: url.hostname,
      port: url.port,
      path: url.pathname,
      headers: from('203.0.113.120', { authorization: basic('leaves-early', 'guess') }),
    });
    leaving.on('error', () => {});
    // It cannot have its turn before one of the two ends.
    await until(async () => (await checkCounts()).waiting === 1);
    leaving.destroy();
    assert.deepEqual(await bogus, [403, 403]);
    const after = await checkCounts();
    assert.deepEqual(
      { checked: after.checked - before.checked, left: after.left - before.left, waiting: after.waiting },
      { checked: 2, left: 1, waiting: 0 },
    );
    assert.doesNotMatch(server.errorLog(), /leaves-early/);
    assert.deepEqual(await server.db.query(`SELECT key FROM login_attempt WHERE key LIKE 'pair:leaves-early%'`), []);
  });

  test('14 parallel requests with correct Basic credentials: 14 answers 200', async (t) => {
    const started = performance.now();
    const answers = await Promise.all(
      Array.from({ length: 14 }, () =>
        fetch(`${server.origin}/entlehnte/2.json`, {
          headers: { authorization: basic('mmuster', demo.mmuster.password) },
        }),
      ),
    );
    t.diagnostic(`14 parallel Basic requests: all answered in ${Math.round(performance.now() - started)} ms`);
    assert.deepEqual(
      answers.map((r) => r.status),
      Array(14).fill(200),
    );
  });
});

/** Correct logins from each address in turn: their statuses and the median time of their POSTs. */
async function timedLogins(addresses: readonly string[]): Promise<{ statuses: number[]; ms: number }> {
  const statuses: number[] = [];
  const times: number[] = [];
  for (const address of addresses) {
    const form = await openLoginForm(server.origin);
    const started = performance.now();
    const res = await postForm(
      server.origin,
      '/login',
      { username: 'mmuster', password: demo.mmuster.password, csrf_token: form.csrfToken },
      { cookie: form.cookie, ...from(address) },
    );
    await res.arrayBuffer();
    times.push(performance.now() - started);
    statuses.push(res.status);
  }
  return { statuses, ms: [...times].sort((a, b) => a - b)[Math.floor(times.length / 2)] as number };
}

/** Polls every 10 ms until ready() says yes, 5 s at most. */
async function until(ready: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 500 && !(await ready()); i++) await new Promise((resolve) => setTimeout(resolve, 10));
}

/** From /metrics: password checks run and waiting, and logins not checked as their client left. */
async function checkCounts(): Promise<{ checked: number; waiting: number; left: number }> {
  const text = await (await fetch(`${server.origin}/metrics`)).text();
  const value = (name: string) => Number(new RegExp(`^${name.replace(/[{}]/g, '\\$&')} (\\S+)$`, 'm').exec(text)?.[1]);
  return {
    checked: value('portfolio_password_checks_total'),
    waiting: value('portfolio_password_checks_waiting'),
    left: value('portfolio_logins_refused_total{reason="left"}'),
  };
}

function count(values: readonly number[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const v of values) counts[v] = (counts[v] ?? 0) + 1;
  return counts;
}
