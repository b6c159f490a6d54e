// Conditional requests and caching headers (RFC 9110 sections 13.1.2 and 15.4.5, RFC 9111):
// a 304 carries only validators and caching headers, and a per-user document can opt out of
// shared caches.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { TestServer } from '../helpers.ts';
import { fixtureEnv, startTestServer } from '../helpers.ts';

describe('conditional requests', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer();
  });
  after(() => server.close());

  const get = (target: string, headers: Record<string, string> = {}, method = 'GET') =>
    fetch(server.origin + target, { method, headers });

  test('a 304 to a negotiated request carries ETag, Cache-Control and Vary, and nothing of the body', async () => {
    const first = await get('/person/max-muster', { accept: 'application/json' });
    const etag = first.headers.get('etag') as string;
    const again = await get('/person/max-muster', { accept: 'application/json', 'if-none-match': etag });
    assert.equal(again.status, 304);
    assert.deepEqual(
      [again.headers.get('etag'), again.headers.get('cache-control'), again.headers.get('vary')],
      [etag, 'public, max-age=0, s-maxage=86400', 'Accept'],
    );
    assert.deepEqual(
      [again.headers.get('content-type'), again.headers.get('content-length'), again.headers.get('link')],
      [null, null, null],
    );
    assert.equal(await again.text(), '');
  });

  test('If-None-Match compares weakly: W/ and a list of tags match, * matches any representation', async () => {
    const etag = (await get('/person/max-muster.json')).headers.get('etag') as string;
    for (const header of [`W/${etag}`, `"x", ${etag}`, '*']) {
      assert.equal((await get('/person/max-muster.json', { 'if-none-match': header })).status, 304, header);
    }
    assert.equal((await get('/person/max-muster.json', { 'if-none-match': '"x", W/"y"' })).status, 200);
  });

  test('the ETag of a representation is the same on every request and changes with the document', async () => {
    const before = (await get('/person/max-muster.json')).headers.get('etag');
    assert.equal((await get('/person/max-muster.json')).headers.get('etag'), before);
    await server.db.query(`UPDATE person SET vorname = 'Maximilian' WHERE slug = 'max-muster'`);
    const after = await get('/person/max-muster.json', { 'if-none-match': before as string });
    assert.equal(after.status, 200);
    assert.notEqual(after.headers.get('etag'), before);
  });
});

describe('per-user documents', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer(fixtureEnv);
  });
  after(() => server.close());

  test('a script can answer with Cache-Control: private, no-store instead of the public default', async () => {
    const res = await fetch(`${server.origin}/konto.php`, { headers: { accept: 'application/json' } });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('cache-control'), 'private, no-store');
    assert.deepEqual(await res.json(), { name: 'mmuster' });
  });
});
