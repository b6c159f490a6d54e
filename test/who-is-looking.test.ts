// Public documents are the same bytes for everyone, logged in or not, so shared caches and ETags
// keep working; who is looking comes from /me.json, private and never stored (docs/interface.md,
// Who the page header shows).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { TestServer } from './helpers.ts';
import { readJson, startTestServer } from './helpers.ts';
import { basic, demo, logInAs } from './login-helpers.ts';

let server: TestServer;
let cookie: string;

before(async () => {
  server = await startTestServer();
  cookie = await logInAs(server.origin, 'mmuster');
});
after(() => server.close());

test('a public document is the same bytes and ETag with and without a login, and sets no cookie', async () => {
  for (const path of ['/', '/personen', '/person/max-muster', '/werk/2', '/search?query=any,contains,Meer']) {
    const anonymous = await fetch(server.origin + path);
    const user = await fetch(server.origin + path, { headers: { cookie } });
    const librarian = await fetch(server.origin + path, {
      headers: { authorization: basic('bibliothek', demo.bibliothek.password) },
    });
    const answers = await Promise.all(
      [anonymous, user, librarian].map(async (res) => ({
        status: res.status,
        etag: res.headers.get('etag'),
        cacheControl: res.headers.get('cache-control'),
        setCookie: res.headers.get('set-cookie'),
        body: await res.text(),
      })),
    );
    assert.equal(answers[0]?.status, 200, path);
    assert.equal(answers[0]?.cacheControl, 'public, max-age=0, s-maxage=86400', path);
    assert.equal(answers[0]?.setCookie, null, path);
    assert.match(answers[0]?.etag ?? '', /^"/, path);
    assert.deepEqual(answers[1], answers[0], path);
    assert.deepEqual(answers[2], answers[0], path);
  }
});

test('/me.json names who is looking, privately and never stored', async () => {
  const anonymous = await fetch(`${server.origin}/me.json`);
  assert.equal(anonymous.headers.get('cache-control'), 'private, no-store');
  assert.equal(anonymous.headers.get('etag'), null);
  assert.deepEqual(await readJson(anonymous), { angemeldet: null, login: `${server.origin}/login` });

  const user = await fetch(`${server.origin}/me.json`, { headers: { cookie } });
  assert.equal(user.headers.get('cache-control'), 'private, no-store');
  assert.equal(user.headers.get('access-control-allow-origin'), null, 'no other site may read the token');
  const me = await readJson(user);
  assert.match(me.angemeldet.csrf_token, /^[A-Za-z0-9_-]{20,}$/);
  assert.deepEqual(
    { ...me.angemeldet, csrf_token: '…' },
    {
      name: 'mmuster',
      rolle: 'user',
      entlehnte: `${server.origin}/entlehnte/2`,
      person: `${server.origin}/person/max-muster`,
      csrf_token: '…',
    },
  );
  // The token is the one the log-out button needs: it ends the session.
  const logout = await fetch(`${server.origin}/logout`, {
    method: 'POST',
    redirect: 'manual',
    headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
    body: `csrf_token=${me.angemeldet.csrf_token}`,
  });
  assert.equal(logout.status, 303);
  assert.equal((await readJson(await fetch(`${server.origin}/me.json`, { headers: { cookie } }))).angemeldet, null);

  const viaBasic = await readJson(
    await fetch(`${server.origin}/me.json`, {
      headers: { authorization: basic('bibliothek', demo.bibliothek.password) },
    }),
  );
  assert.deepEqual(viaBasic.angemeldet, {
    name: 'bibliothek',
    rolle: 'librarian',
    entlehnte: `${server.origin}/entlehnte/1`,
    person: null,
    csrf_token: null,
  });
  assert.deepEqual(
    [(await fetch(`${server.origin}/me.xml`)).status, (await fetch(`${server.origin}/me.html`)).status],
    [406, 406],
  );
});
