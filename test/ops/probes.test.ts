// /healthz, /readyz and /metrics (lib/ops): answered before the Host check, without sessions,
// out of the access log unless LOG_PROBES=1; /metrics only for METRICS_ALLOW, a 404 like any
// other for everyone else; /readyz 503 when a migration is missing.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { TestServer } from '../helpers.ts';
import { rawRequest, startTestServer, waitFor } from '../helpers.ts';

let server: TestServer;
before(async () => {
  server = await startTestServer({ TRUSTED_PROXIES: 'loopback' });
});
after(() => server.close());

describe('/healthz', () => {
  test('says ok with no database, no session and no access-log line, whatever the Host', async () => {
    const res = await rawRequest(server.origin, '/healthz', { headers: { host: 'not-served.example' } });
    assert.equal(res.status, 200);
    assert.equal(res.body, 'ok\n');
    assert.equal(res.headers['content-type'], 'text/plain; charset=utf-8');
    assert.equal(res.headers['cache-control'], 'no-store');
    assert.equal(res.headers['set-cookie'], undefined);
    assert.equal(res.headers['x-content-type-options'], 'nosniff');
    // A request after it is logged; the probe before it is not.
    await rawRequest(server.origin, '/person/1?after-healthz');
    const log = await waitFor(server.accessLog, (text) => text.includes('after-healthz'));
    assert.doesNotMatch(log, /GET \/healthz/);
  });

  test('takes GET and HEAD only', async () => {
    const res = await rawRequest(server.origin, '/healthz', { method: 'POST' });
    assert.equal(res.status, 405);
    assert.equal(res.headers.allow, 'GET, HEAD');
    assert.equal((await rawRequest(server.origin, '/healthz', { method: 'HEAD' })).status, 200);
  });
});

describe('/readyz', () => {
  test('is ready with the database reachable and every migration applied, and 503 with one missing', async () => {
    const ready = await rawRequest(server.origin, '/readyz');
    assert.equal(ready.status, 200);
    assert.equal(ready.body, 'ready\n');
    await server.db.query(`DELETE FROM schema_migrations WHERE version = '007_site_secret'`);
    try {
      const seen = await pollStatus('/readyz', 503);
      assert.equal(seen.body, 'not ready: migrations not applied: 007_site_secret\n');
    } finally {
      await server.db.query(`INSERT INTO schema_migrations (version) VALUES ('007_site_secret')`);
    }
    assert.equal((await pollStatus('/readyz', 200)).body, 'ready\n');
  });
});

describe('/metrics', () => {
  test('counts requests by script, method and status, with latency, logins and sessions, for loopback', async () => {
    await rawRequest(server.origin, '/person/1');
    await rawRequest(server.origin, '/person/999999');
    await rawRequest(server.origin, '/login', {
      method: 'POST',
      headers: { authorization: `Basic ${Buffer.from('nobody:wrong-password').toString('base64')}` },
    });
    const res = await rawRequest(server.origin, '/metrics');
    assert.equal(res.status, 200);
    assert.equal(res.headers['content-type'], 'text/plain; version=0.0.4; charset=utf-8');
    const value = (line: string) =>
      Number(new RegExp(`^${line.replace(/[{}]/g, '\\$&')} (\\S+)$`, 'm').exec(res.body)?.[1]);
    assert.ok(value('portfolio_http_requests_total{route="person",method="GET",status="200"}') >= 1, res.body);
    assert.ok(value('portfolio_http_requests_total{route="person",method="GET",status="404"}') >= 1);
    assert.ok(value('portfolio_http_request_duration_seconds_count{route="person"}') >= 2);
    assert.match(res.body, /^portfolio_sessions\{kind="signed_in"\} \d+$/m);
    assert.match(res.body, /^portfolio_logins_refused_total\{reason="throttled"\} 0$/m);
    assert.match(res.body, /^portfolio_log_failed_writes_total 0$/m);
    // The demo data: 14 persons and 70 works in the search's index, read once at the start.
    assert.equal(value('portfolio_search_index_rows{kind="personen"}'), 14);
    assert.equal(value('portfolio_search_index_rows{kind="werke"}'), 70);
    assert.ok(value('portfolio_search_index_bytes') > 0);
    assert.equal(value('portfolio_search_index_reads_total{kind="reload"}'), 1);
    assert.match(res.body, /^nodejs_eventloop_lag_p99_seconds [\d.e-]+$/m);
    assert.match(res.body, /^nodejs_heap_size_used_bytes \d+$/m);
    if (server.db.kind === 'postgres') assert.match(res.body, /^portfolio_db_connections\{state="total"\} \d+$/m);
    if (server.db.kind === 'postgres') assert.match(res.body, /^portfolio_db_pipeline_retries_total \d+$/m);
  });

  test('counts the searches made on the word index, not those a kept result answers', async () => {
    const searches = async () =>
      Number(/^portfolio_searches_total (\d+)$/m.exec((await rawRequest(server.origin, '/metrics')).body)?.[1]);
    const before = await searches();
    assert.ok(Number.isInteger(before));
    const first = await rawRequest(server.origin, '/search.json?query=any,contains,nebel%20hafen');
    const again = await rawRequest(server.origin, '/search.json?query=any,contains,nebel%20hafen');
    assert.equal(first.status, 200);
    assert.equal(again.body, first.body);
    assert.equal(await searches(), before + 1);
    await rawRequest(server.origin, '/search.json?query=any,contains,haus');
    assert.equal(await searches(), before + 2);
  });

  test("is the site's usual 404 for a client behind a trusted proxy, or outside METRICS_ALLOW", async () => {
    const forwarded = await rawRequest(server.origin, '/metrics', { headers: { 'x-forwarded-for': '203.0.113.5' } });
    const nothing = await rawRequest(server.origin, '/metricz', { headers: { 'x-forwarded-for': '203.0.113.5' } });
    assert.equal(forwarded.status, 404);
    assert.equal(forwarded.headers['content-type'], nothing.headers['content-type']);
    assert.equal(forwarded.body, nothing.body.replaceAll('/metricz', '/metrics'));
    const other = await startTestServer({ METRICS_ALLOW: '10.0.0.0/8' });
    try {
      assert.equal((await rawRequest(other.origin, '/metrics')).status, 404);
      assert.equal((await rawRequest(other.origin, '/healthz')).status, 200);
    } finally {
      await other.close();
    }
  });

  test('with LOG_PROBES=1 the probes reach the access log', async () => {
    const logged = await startTestServer({ LOG_PROBES: '1' });
    try {
      await rawRequest(logged.origin, '/healthz');
      await rawRequest(logged.origin, '/readyz');
      const log = await waitFor(logged.accessLog, (text) => text.includes('/readyz'));
      assert.match(log, /"GET \/healthz HTTP\/1\.1" 200 3 /);
      assert.match(log, /"GET \/readyz HTTP\/1\.1" 200 6 /);
    } finally {
      await logged.close();
    }
  });
});

/** The probe's answer once it has the status (answers are reused for a second). */
async function pollStatus(target: string, status: number): Promise<{ status: number; body: string }> {
  for (let i = 0; i < 30; i++) {
    const res = await rawRequest(server.origin, target);
    if (res.status === status) return res;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${target} did not answer ${status} within 3 s`);
}
