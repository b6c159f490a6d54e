// What a cache in front reads and is told (docs/operations.md, An edge cache): public documents
// carry a shared lifetime, their surrogate keys and the data version they were read at; private
// ones none of it; each change purges the keys it touched at every PURGE_URLS cache before it
// answers, with the version after it; a cache that cannot be reached fails no change and is
// asked again until it answers. The caches are plain HTTP listeners on loopback that record.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { asUser, personBody, werkBody } from '../change-helpers.ts';
import type { TestServer } from '../helpers.ts';
import { startTestServer, waitFor } from '../helpers.ts';
import { basic, demo, logInAs } from '../login-helpers.ts';

interface Purge {
  method: string;
  keys: string[];
  surrogateKeys: string[];
  version: bigint;
  at: number;
}

/** A loopback listener that records each request as a purge and answers status. */
async function listener(status = 200): Promise<{
  url: string;
  purges: Purge[];
  close: () => Promise<void>;
  setStatus: (s: number) => void;
}> {
  const purges: Purge[] = [];
  let answer = status;
  const server = http.createServer((req, res) => {
    purges.push({
      method: req.method ?? '',
      keys: String(req.headers.xkey ?? '').split(' '),
      surrogateKeys: String(req.headers['surrogate-key'] ?? '').split(' '),
      version: BigInt(String(req.headers['x-data-version'] ?? '-1')),
      at: performance.now(),
    });
    res.statusCode = answer;
    res.end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/`,
    purges,
    setStatus: (s) => {
      answer = s;
    },
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

describe('documents for a shared cache', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer();
  });
  after(() => server.close());

  const headersOf = async (path: string, init: RequestInit = {}) => {
    const res = await fetch(server.origin + path, { redirect: 'manual', ...init });
    await res.arrayBuffer();
    assert.ok(res.status < 400, `${path}: ${res.status}`);
    return res.headers;
  };

  test('each public document keeps a day in a shared cache and names what it shows; none says its version without caches to purge', async () => {
    const [maxId] = await server.db.query<{ id: number }>("SELECT id FROM person WHERE slug = 'max-muster'");
    const [werk] = await server.db.query<{ id: number; person_id: number }>(
      'SELECT id, person_id FROM werk ORDER BY id LIMIT 1',
    );
    const expected: [string, string][] = [
      ['/person/max-muster', `all person-${maxId?.id}`],
      ['/person/max-muster.xml', `all person-${maxId?.id}`],
      [`/werk/${werk?.id}.json`, `all werk-${werk?.id} person-${werk?.person_id}`],
      ['/personen', 'all persons'],
      ['/personen.json?offset=20', 'all persons'],
      ['/', 'all persons works'],
      ['/search?query=any,contains,haus', 'all persons works'],
      ['/feed', 'all works'],
      ['/person/max-muster/feed', `all person-${maxId?.id}`],
      ['/sitemap.xml', 'all persons works'],
      ['/robots.txt', 'all'],
      ['/openapi.json', 'all'],
      [`/person.php?pid=${maxId?.id}`, `all person-${maxId?.id}`],
    ];
    for (const [path, keys] of expected) {
      const headers = await headersOf(path);
      assert.equal(headers.get('cache-control'), 'public, max-age=0, s-maxage=86400', path);
      assert.equal(headers.get('xkey'), keys, path);
      assert.equal(headers.get('surrogate-key'), keys, path);
      assert.equal(headers.get('x-data-version'), null, path);
      assert.equal(headers.get('set-cookie'), null, path);
    }
  });

  test('private documents carry no keys and are never shared, whatever the request looks like', async () => {
    const cookie = await logInAs(server.origin, 'mmuster');
    const authorization = basic('mmuster', demo.mmuster.password);
    const cases: [string, RequestInit][] = [
      ['/entlehnte/2.json', { headers: { authorization } }],
      ['/entlehnte/2', { headers: { cookie } }],
      ['/me.json', { headers: { cookie } }],
      ['/person/max-muster/bearbeiten', { headers: { cookie } }],
      ['/login', {}],
    ];
    for (const [path, init] of cases) {
      const headers = await headersOf(path, init);
      assert.equal(headers.get('cache-control'), 'private, no-store', path);
      assert.equal(headers.get('xkey'), null, path);
      assert.equal(headers.get('surrogate-key'), null, path);
    }
    // A public document asked for with a session cookie is the public one: the cookie is not read.
    const withCookie = await headersOf('/person/max-muster', { headers: { cookie } });
    assert.equal(withCookie.get('cache-control'), 'public, max-age=0, s-maxage=86400');
    assert.equal(withCookie.get('set-cookie'), null);
    // Errors are not kept: a 404 now may be a person soon.
    const missing = await fetch(`${server.origin}/person/noch-niemand`);
    await missing.arrayBuffer();
    assert.equal(missing.status, 404);
    assert.equal(missing.headers.get('cache-control'), 'no-store');
    assert.equal(missing.headers.get('xkey'), null);
  });

  test('SHARED_CACHE_SECONDS=0 leaves public documents to be revalidated on every use', async () => {
    const other = await startTestServer({ SHARED_CACHE_SECONDS: '0' });
    try {
      const res = await fetch(`${other.origin}/person/max-muster`);
      await res.arrayBuffer();
      assert.equal(res.headers.get('cache-control'), 'public, no-cache');
      assert.equal(res.headers.get('xkey'), 'all person-1');
    } finally {
      await other.close();
    }
  });
});

describe('purging what a change touched', () => {
  let server: TestServer;
  let caches: Awaited<ReturnType<typeof listener>>[];
  before(async () => {
    caches = [await listener(), await listener()];
    server = await startTestServer({ PURGE_URLS: caches.map((c) => c.url).join(',') });
  });
  after(async () => {
    await server.close();
    for (const cache of caches) await cache.close();
  });

  /** The version a public read names now. */
  const versionNow = async () => {
    const res = await fetch(`${server.origin}/personen.json`);
    await res.arrayBuffer();
    return BigInt(res.headers.get('x-data-version') ?? '-1');
  };

  /** Runs a change and returns its answer with the purge each cache got for it, which came before the answer. */
  const changed = async (run: () => Promise<Response>) => {
    const before = await versionNow();
    const counts = caches.map((c) => c.purges.length);
    const res = await run();
    await res.arrayBuffer();
    const answered = performance.now();
    const purges = caches.map((c, i) => c.purges.slice(counts[i]));
    for (const got of purges) {
      assert.equal(got.length, 1, `one purge per cache: ${JSON.stringify(got, (_, v) => String(v))}`);
      const [purge] = got as [Purge];
      assert.equal(purge.method, 'PURGE');
      assert.ok(purge.at < answered, 'the cache is told before the change is answered');
      assert.ok(purge.version > before, `the purge's version ${purge.version} is past the one read before, ${before}`);
      assert.deepEqual(purge.surrogateKeys, purge.keys);
    }
    return { res, keys: [...(purges[0]?.[0]?.keys ?? [])].sort() };
  };

  test('public reads name the data version they were read at, and it moves with a change', async () => {
    const first = await versionNow();
    assert.ok(first > 0n);
    const res = await fetch(`${server.origin}/person/max-muster.json`);
    await res.arrayBuffer();
    assert.equal(res.headers.get('x-data-version'), String(first));
    const cookie = await logInAs(server.origin, 'mmuster');
    const mine = await fetch(`${server.origin}/me.json`, { headers: { cookie } });
    await mine.arrayBuffer();
    assert.equal(mine.headers.get('x-data-version'), null, 'a private document names none');
    const changed = await asUser(server.origin, 'mmuster', {
      method: 'POST',
      path: '/person/max-muster/werke',
      format: 'json',
      body: werkBody('json', { titel: 'Versions-Probe', jahr: 2020, art: 'Buch', beschreibung: '' }),
    });
    await changed.arrayBuffer();
    assert.equal(changed.status, 201);
    const after = await fetch(`${server.origin}/person/max-muster.json`);
    await after.arrayBuffer();
    assert.ok(BigInt(after.headers.get('x-data-version') ?? '0') > first, 'the change moved it');
  });

  test('each change purges the keys of what it touched, from the person to the lists', async () => {
    const [person] = await server.db.query<{ id: number }>("SELECT id FROM person WHERE slug = 'max-muster'");
    const pid = person?.id as number;
    const created = await changed(() =>
      asUser(server.origin, 'mmuster', {
        method: 'POST',
        path: '/person/max-muster/werke',
        format: 'json',
        body: werkBody('json', { titel: 'Purge-Probe', jahr: 2020, art: 'Buch', beschreibung: '' }),
      }),
    );
    assert.equal(created.res.status, 201);
    const wid = Number(created.res.headers.get('location')?.split('/').pop());
    assert.deepEqual(created.keys, [`person-${pid}`, 'persons', `werk-${wid}`, 'works'].sort());

    const edited = await changed(() =>
      asUser(server.origin, 'mmuster', {
        method: 'PUT',
        path: `/werk/${wid}`,
        format: 'json',
        body: werkBody('json', { titel: 'Purge-Probe 2', jahr: 2021, art: 'Buch', beschreibung: '' }),
      }),
    );
    assert.equal(edited.res.status, 200);
    assert.deepEqual(edited.keys, [`person-${pid}`, 'persons', `werk-${wid}`, 'works'].sort());

    const deleted = await changed(() =>
      asUser(server.origin, 'mmuster', { method: 'DELETE', path: `/werk/${wid}`, format: 'json' }),
    );
    assert.equal(deleted.res.status, 204);
    assert.deepEqual(deleted.keys, [`person-${pid}`, 'persons', `werk-${wid}`, 'works'].sort());

    const newPerson = await changed(() =>
      asUser(server.origin, 'bibliothek', {
        method: 'POST',
        path: '/personen',
        format: 'json',
        body: personBody('json', { vorname: 'Purga', nachname: 'Probe', username: 'purga' }),
      }),
    );
    assert.equal(newPerson.res.status, 201);
    assert.deepEqual(newPerson.keys, ['persons']);
    const newId = Number(newPerson.res.headers.get('location')?.split('/').pop());

    const renamed = await changed(() =>
      asUser(server.origin, 'bibliothek', {
        method: 'PUT',
        path: `/person/${newId}`,
        format: 'json',
        body: personBody('json', { vorname: 'Purga', nachname: 'Probe-Neu', username: 'purga' }),
      }),
    );
    assert.equal(renamed.res.status, 200);
    assert.deepEqual(renamed.keys, [`person-${newId}`, 'persons', 'works'].sort());

    const gone = await changed(() =>
      asUser(server.origin, 'bibliothek', { method: 'DELETE', path: `/person/${newId}`, format: 'json' }),
    );
    assert.equal(gone.res.status, 204);
    assert.deepEqual(gone.keys, [`person-${newId}`, 'persons', 'works'].sort());
  });

  test('a refused change purges nothing', async () => {
    const counts = caches.map((c) => c.purges.length);
    const res = await asUser(server.origin, 'jmueller', {
      method: 'PUT',
      path: '/person/max-muster',
      format: 'json',
      body: personBody('json', { vorname: 'Max', nachname: 'Fremd' }),
    });
    await res.arrayBuffer();
    assert.equal(res.status, 403);
    assert.deepEqual(
      caches.map((c) => c.purges.length),
      counts,
    );
  });
});

describe('a cache that cannot be reached', () => {
  test('fails no change, is logged, and gets the keys once it answers again', async () => {
    const cache = await listener(503);
    const server = await startTestServer({ PURGE_URLS: cache.url });
    try {
      const res = await asUser(server.origin, 'mmuster', {
        method: 'POST',
        path: '/person/max-muster/werke',
        format: 'json',
        body: werkBody('json', { titel: 'Trotzdem gespeichert', jahr: 2020, art: 'Buch', beschreibung: '' }),
      });
      await res.arrayBuffer();
      assert.equal(res.status, 201, 'the change is made whatever the cache answers');
      await waitFor(server.errorLog, (log) =>
        /Purging 4 surrogate keys at http:\/\/127\.0\.0\.1:\d+ failed \(answered 503\), try 1/.test(log),
      );
      const waiting = async () =>
        Number(
          /^portfolio_purge_keys_waiting (\d+)$/m.exec(await (await fetch(`${server.origin}/metrics`)).text())?.[1],
        );
      assert.equal(await waiting(), 4, 'the metrics show the keys waiting');
      // The cache answers again: the same keys arrive without another change.
      cache.setStatus(200);
      const answered = await waitFor(
        () => cache.purges.length,
        (n) => n >= 2,
        10_000,
      );
      assert.ok(answered >= 2);
      const last = cache.purges[cache.purges.length - 1] as Purge;
      assert.deepEqual(last.keys.sort(), (cache.purges[0] as Purge).keys.sort());
      assert.match(server.errorLog(), /\[app:warn\]/);
      assert.equal(await waiting(), 0);
    } finally {
      await server.close();
      await cache.close();
    }
  });
});
