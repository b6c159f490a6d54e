// Varnish in front of two instances on one PostgreSQL, with the kit's VCL (deploy/varnish; only
// the instances' addresses changed): 30 s of reads from many clients and changes by logged-in
// users through the cache. Every read that starts after a change was answered shows it; the
// repeated public pages come from the cache; no private document, and no cookie, reaches another
// client; odd Accept, Accept-Encoding and cookies store nothing wrong; a purge from an address
// that is not an instance is refused. The hit ratio and the origin's load with and without the
// cache are printed (docs/operations.md, An edge cache).
import assert from 'node:assert/strict';
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { after, before, describe, test } from 'node:test';
import sharp from 'sharp';
import { asUser, werkBody } from '../change-helpers.ts';
import type { TestDb } from '../helpers.ts';
import { backend, missingTool, openTestDb, root } from '../helpers.ts';
import { basic, demo, logInAs } from '../login-helpers.ts';
import type { Program } from '../program.ts';
import { startProgram } from '../program.ts';
import { canConnect, edit, freePort } from './front.ts';

const skip =
  backend !== 'postgres'
    ? 'two instances on one database need PostgreSQL; run with DATABASE_URL'
    : missingTool('/usr/sbin/varnishd', 'varnish varnish-modules');

const loadMs = Number(process.env.EDGE_SECONDS ?? 30) * 1000;
let dir: string;
let db: TestDb;
let varnish: ChildProcess | null = null;
let varnishPort = 0;
let cache = '';
const instances: Program[] = [];
const relays: http.Server[] = [];
/** What reached the instances through the relays: whether it carried a cookie, and how it was answered. */
const relayed: { url: string; cookie: boolean; cacheControl: string }[] = [];

/** Milliseconds the relays hold back an answer to a request whose address has slow=1 in it. */
const holdMs = 1500;

/**
 * A loopback relay to an instance's port that passes everything through as it is, but holds back
 * the answer to a request with slow=1 in its address for holdMs: a page rendered before a change
 * that reaches the cache after the change's purge. Returns its port.
 */
async function relay(port: number): Promise<number> {
  const server = http.createServer((req, res) => {
    const upstream = http.request(
      { host: '127.0.0.1', port, path: req.url, method: req.method, headers: req.headers },
      (answer) => {
        relayed.push({
          url: req.url ?? '',
          cookie: req.headers.cookie !== undefined,
          cacheControl: String(answer.headers['cache-control'] ?? ''),
        });
        const pass = () => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        };
        if (req.url?.includes('slow=1')) setTimeout(pass, holdMs);
        else pass();
      },
    );
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  relays.push(server);
  return (server.address() as AddressInfo).port;
}

/** varnishstat's counters of this Varnish. */
function counters(): Record<string, number> {
  const out = execFileSync('varnishstat', ['-n', path.join(dir, 'varnish'), '-1', '-j'], { encoding: 'utf8' });
  const parsed = JSON.parse(out) as { counters?: Record<string, { value: number }> } & Record<string, unknown>;
  const source = (parsed.counters ?? parsed) as Record<string, { value?: number }>;
  const values: Record<string, number> = {};
  for (const [name, counter] of Object.entries(source))
    if (typeof counter?.value === 'number') values[name] = counter.value;
  return values;
}

/** Asks ok() every 200 ms until it says true, for at most ms; whether it did. */
async function poll(ok: () => Promise<boolean>, ms: number): Promise<boolean> {
  const end = performance.now() + ms;
  while (performance.now() < end) {
    if (await ok().catch(() => false)) return true;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return false;
}

/** Requests that reached an instance with cookies and were answered with a public document. */
function cookiesForPublic(): string[] {
  return relayed.filter((r) => r.cookie && r.cacheControl.startsWith('public')).map((r) => r.url);
}

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });

function request(
  origin: string,
  target: string,
  options: { method?: string; headers?: Record<string, string>; body?: string; localAddress?: string } = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      origin + target,
      {
        method: options.method ?? 'GET',
        headers: options.headers,
        agent: options.localAddress ? undefined : agent,
        localAddress: options.localAddress,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString() }),
        );
        res.on('error', reject);
      },
    );
    req.setTimeout(10_000, () => req.destroy(new Error(`${target}: no answer in 10 s`)));
    req.on('error', reject);
    req.end(options.body);
  });
}

before(async () => {
  if (skip) return;
  dir = mkdtempSync(path.join(os.tmpdir(), 'portfolio-edge-'));
  db = await openTestDb();
  varnishPort = await freePort();
  cache = `http://127.0.0.1:${varnishPort}`;
  for (let i = 0; i < 2; i++) {
    instances.push(
      await startProgram({
        DATABASE_URL: db.url as string,
        PURGE_URLS: `${cache}/`,
        // Each instance a folder of its own, as on two machines.
        PICTURES_DIR: mkdtempSync(path.join(dir, 'bilder-')),
        ALLOWED_HOSTS: `127.0.0.1,127.0.0.1:${varnishPort}`,
      }),
    );
  }
  // Varnish reaches each instance through a relay of the test's that can hold an answer back.
  const ports = await Promise.all(instances.map((p) => relay(Number(new URL(p.origin).port))));
  const vcl = edit(readFileSync(path.join(root, 'deploy/varnish/portfolio.vcl'), 'utf8'), [
    [
      'backend instance1 { .host = "127.0.0.1"; .port = "8080"; .probe = ready; }',
      ports
        .map((port, i) => `backend instance${i + 1} { .host = "127.0.0.1"; .port = "${port}"; .probe = ready; }`)
        .join('\n'),
    ],
    ['site.add_backend(instance1);', 'site.add_backend(instance1);\n    site.add_backend(instance2);'],
  ]);
  writeFileSync(path.join(dir, 'portfolio.vcl'), vcl);
  varnish = spawn(
    'varnishd',
    [
      '-F',
      '-j',
      'none',
      '-n',
      path.join(dir, 'varnish'),
      '-a',
      `127.0.0.1:${varnishPort}`,
      '-f',
      path.join(dir, 'portfolio.vcl'),
      '-s',
      'malloc,64m',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  varnish.stdout?.on('data', (c: Buffer) => (output += c));
  varnish.stderr?.on('data', (c: Buffer) => (output += c));
  if (!(await poll(() => canConnect(varnishPort), 20_000))) throw new Error(`varnishd did not start:\n${output}`);
  // Both instances healthy in the probe's eyes before the load.
  const ready = async () => (await request(cache, '/person/max-muster.json')).status === 200;
  if (!(await poll(ready, 20_000))) throw new Error(`Varnish does not reach the instances:\n${output}`);
});

after(async () => {
  varnish?.kill('SIGTERM');
  for (const server of relays) {
    server.closeAllConnections();
    server.close();
  }
  for (const program of instances) program.remove();
  await db?.drop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('behind Varnish with the kit', { skip }, () => {
  test('a purge from an address that is not an instance is refused; from an instance it is taken', async () => {
    const foreign = await request(cache, '/', { method: 'PURGE', headers: { xkey: 'all' }, localAddress: '127.0.0.2' });
    assert.equal(foreign.status, 403);
    const own = await request(cache, '/', { method: 'PURGE', headers: { xkey: 'nothing-has-this-key' } });
    assert.equal(own.status, 200);
  });

  test('odd Accept, Accept-Encoding and cookies store nothing for others that they should not get', async () => {
    const cookie = await logInAs(cache, 'mmuster');
    const asked: [Record<string, string>, RegExp][] = [
      [{ accept: 'application/json' }, /^application\/json/],
      [{ accept: 'image/png, */*;q=0.1' }, /^text\/html/],
      [{ accept: 'application/xml', cookie }, /^application\/xml/],
      [{ accept: 'text/html', cookie: 'portfolio_session=forged; other=1' }, /^text\/html/],
      [{ accept: '' }, /^text\/html/],
      [{ accept: 'application/json', 'accept-encoding': 'br' }, /^application\/json/],
      [{ accept: 'text/html', 'accept-encoding': 'identity' }, /^text\/html/],
    ];
    for (let round = 0; round < 2; round++) {
      for (const [headers, type] of asked) {
        const res = await request(cache, '/person/max-muster', { headers });
        assert.equal(res.status, 200);
        assert.match(String(res.headers['content-type']), type, JSON.stringify(headers));
        assert.equal(res.headers['set-cookie'], undefined, 'no public page carries a cookie');
        if (!headers['accept-encoding']) assert.equal(res.headers['content-encoding'], undefined);
        assert.equal(res.headers['cache-control'], 'public, max-age=0, s-maxage=86400');
        assert.equal(res.headers.xkey, undefined, 'the keys stay in the cache');
        assert.equal(res.headers['x-data-version'], undefined);
      }
    }
    // A private page read with a cookie is not given to the next client without one.
    const mine = await request(cache, '/entlehnte/2.json', { headers: { cookie } });
    assert.equal(mine.status, 200);
    const theirs = await request(cache, '/entlehnte/2.json');
    assert.equal(theirs.status, 403);
    const me = await request(cache, '/me.json', { headers: { cookie } });
    assert.match(me.body, /mmuster/);
    assert.doesNotMatch((await request(cache, '/me.json')).body, /mmuster/);
    assert.deepEqual(cookiesForPublic(), [], 'no public document was asked for with cookies');
    assert.ok(
      relayed.some((r) => r.cookie && r.url === '/entlehnte/2.json'),
      'the private one was asked for with them',
    );
  });

  test('a page rendered before a change that reaches the cache after its purge is not kept', async () => {
    const [werk] = await db.db.query<{ id: number }>(
      "SELECT w.id FROM werk w JOIN person p ON p.id = w.person_id WHERE p.slug = 'max-muster' ORDER BY w.id DESC LIMIT 1",
    );
    const page = `/werk/${werk?.id}.json?slow=1`;
    const titleNow = async () => JSON.parse((await request(cache, page)).body).titel as string;
    // Rendered now, held back by the relay while the change commits and purges.
    const early = titleNow();
    await new Promise((resolve) => setTimeout(resolve, holdMs / 3));
    const changed = await asUser((instances[0] as Program).origin, 'mmuster', {
      method: 'PUT',
      path: `/werk/${werk?.id}`,
      format: 'json',
      body: werkBody('json', { titel: 'Wächter 1', jahr: 2020, art: 'Buch', beschreibung: '' }),
    });
    await changed.arrayBuffer();
    assert.equal(changed.status, 200);
    assert.notEqual(await early, 'Wächter 1', 'the early read was rendered before the change');
    assert.equal(await titleNow(), 'Wächter 1', 'the next read shows the change');
    assert.equal(await titleNow(), 'Wächter 1');
  });

  test('a picture uploaded through one instance is served by the other and through the cache', async () => {
    const [a, b] = instances as [Program, Program];
    const png = await sharp({ create: { width: 320, height: 200, channels: 3, background: '#447722' } })
      .png()
      .toBuffer();
    const before = (await request(cache, '/person/max-muster.json')).body;
    const res = await fetch(`${a.origin}/person/max-muster/bild`, {
      method: 'POST',
      body: png,
      headers: {
        authorization: basic('mmuster', demo.mmuster.password),
        'content-type': 'image/png',
        accept: 'application/json',
      },
    });
    assert.equal(res.status, 200);
    const image = new URL(((await res.json()) as { image: string }).image).pathname;
    assert.match(image, /^\/bilder\/[0-9a-f]{32}-480\.webp$/);
    // The person's page through the cache shows it at once: the change purged it.
    assert.notEqual(before, (await request(cache, '/person/max-muster.json')).body);
    assert.match((await request(cache, '/person/max-muster.json')).body, new RegExp(image.slice(8)));
    const fromB = await fetch(b.origin + image);
    assert.equal(fromB.status, 200);
    const bytes = Buffer.from(await fromB.arrayBuffer());
    const meta = await sharp(bytes).metadata();
    assert.deepEqual([meta.format, meta.width], ['webp', 480]);
    for (let i = 0; i < 3; i++) {
      const cached = await fetch(cache + image);
      assert.equal(cached.status, 200);
      assert.equal(cached.headers.get('cache-control'), 'public, max-age=31536000, immutable');
      assert.ok(Buffer.from(await cached.arrayBuffer()).equals(bytes));
    }
    // The instances saw it twice: B's own request, and the cache's first.
    const asked = () => instances.reduce((n, p) => n + p.readLog('access.log').split(image).length - 1, 0);
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.equal(asked(), 2, 'the cache answers the picture after the first time');
  });

  test(`${loadMs / 1000} s of reads and changes: every read shows the changes answered before it, the cache answers the repeated pages, nothing private is shared`, async (t) => {
    const [werk] = await db.db.query<{ id: number }>(
      "SELECT w.id FROM werk w JOIN person p ON p.id = w.person_id WHERE p.slug = 'max-muster' ORDER BY w.id LIMIT 1",
    );
    const wid = werk?.id as number;
    // Each change gives the work a higher number in its title; acknowledged is the highest answered.
    let acknowledged = 0;
    const titleOf = (n: number) => `Kachel ${n}`;
    const seen = (body: string) => Math.max(0, ...[...body.matchAll(/Kachel (\d+)/g)].map((m) => Number(m[1])));
    const stale: string[] = [];
    const leaks: string[] = [];
    const failures: string[] = [];
    let reads = 0;
    let changes = 0;
    const changeMs: number[] = [];
    const pages = [
      `/werk/${wid}.json`,
      `/werk/${wid}`,
      '/person/max-muster.json',
      '/person/max-muster',
      '/personen',
      '/personen.json',
      '/',
      '/feed',
      '/search?query=any,contains,haus',
      '/person/juergen-mueller',
      '/sitemap.xml',
    ];
    const shows = (page: string) => page.startsWith('/werk/') || page.startsWith('/person/max-muster');
    const users = [
      { name: 'mmuster', uid: 2 },
      { name: 'jmueller', uid: 3 },
    ] as const;
    const cookies = await Promise.all(users.map((u) => logInAs(cache, u.name)));
    const stats0 = counters();
    const originBefore = instances.map((p) => p.readLog('access.log').split('\n').length);
    const begun = performance.now();
    const until = begun + loadMs;

    const reader = async (client: number) => {
      for (let i = 0; performance.now() < until && i < 100_000; i++) {
        const page = pages[(client * 7 + i) % pages.length] as string;
        const floor = acknowledged;
        const res = await request(cache, page).catch(
          (err: Error): Answer => ({ status: 0, headers: {}, body: err.message }),
        );
        reads++;
        if (res.status !== 200) failures.push(`${page}: ${res.status} ${res.body.slice(0, 200)}`);
        if (res.headers['set-cookie']) leaks.push(`${page} came with a cookie to an anonymous client`);
        if (/mmuster|jmueller/.test(res.body) && !page.startsWith('/person/')) leaks.push(`${page} names a user`);
        if (shows(page) && seen(res.body) < floor) stale.push(`${page} showed ${seen(res.body)} after ${floor}`);
      }
    };
    // Logged-in users read their own loan list and account through the cache: each sees only theirs.
    const borrower = async (u: 0 | 1) => {
      const { name, uid } = users[u];
      for (let i = 0; performance.now() < until && i < 20_000; i++) {
        const res = await request(cache, i % 2 ? `/entlehnte/${uid}.json` : '/me.json', {
          headers: { cookie: cookies[u] as string },
        });
        if (res.status !== 200) failures.push(`${name}'s own page: ${res.status}`);
        const other = (users[1 - u] as (typeof users)[number]).name;
        if (res.body.includes(other)) leaks.push(`${name} was shown ${other}'s document`);
        const stranger = await request(cache, `/entlehnte/${uid}.json`);
        if (stranger.status !== 403) leaks.push(`an anonymous client got /entlehnte/${uid}.json: ${stranger.status}`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    };
    const writer = async () => {
      for (let n = 1; performance.now() < until && n < 1000; n++) {
        const sent = performance.now();
        const res = await asUser(cache, 'mmuster', {
          method: 'PUT',
          path: `/werk/${wid}`,
          format: 'json',
          body: werkBody('json', { titel: titleOf(n), jahr: 2020, art: 'Buch', beschreibung: '' }),
        });
        await res.arrayBuffer();
        changeMs.push(performance.now() - sent);
        if (res.status !== 200) failures.push(`change ${n}: ${res.status}`);
        else acknowledged = n;
        changes++;
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    };
    await Promise.all([...Array.from({ length: 12 }, (_, c) => reader(c)), borrower(0), borrower(1), writer()]);
    const seconds = (performance.now() - begun) / 1000;
    const stats = counters();
    const delta = (name: string) => (stats[name] ?? 0) - (stats0[name] ?? 0);
    const hits = delta('MAIN.cache_hit');
    const misses = delta('MAIN.cache_miss');
    const originRequests = instances.reduce(
      (sum, p, i) => sum + p.readLog('access.log').split('\n').length - (originBefore[i] as number),
      0,
    );
    // The same readers straight at the instances, for a third of the time: the origin's load without the cache.
    const direct = { reads: 0, begun: performance.now() };
    const directUntil = direct.begun + loadMs / 3;
    await Promise.all(
      Array.from({ length: 12 }, async (_, client) => {
        for (let i = 0; performance.now() < directUntil && i < 100_000; i++) {
          const origin = (instances[i % 2] as Program).origin;
          const res = await request(origin, pages[(client * 7 + i) % pages.length] as string);
          if (res.status !== 200) failures.push(`direct: ${res.status}`);
          direct.reads++;
        }
      }),
    );
    const directSeconds = (performance.now() - direct.begun) / 1000;
    const ratio = hits / (hits + misses);
    t.diagnostic(
      `through Varnish: ${Math.round(reads / seconds)} reads/s by 12 clients, ${changes} changes, hit ratio ${(ratio * 100).toFixed(1)}% (${hits} hits, ${misses} misses, ${delta('MAIN.s_pass')} passes), origin ${Math.round(originRequests / seconds)} requests/s`,
    );
    // A purge on its own, as an instance sends it after a change.
    const purgeMs: number[] = [];
    for (let i = 0; i < 20; i++) {
      const sent = performance.now();
      const res = await request(cache, '/', { method: 'PURGE', headers: { xkey: `werk-${wid} works` } });
      purgeMs.push(performance.now() - sent);
      assert.equal(res.status, 200);
    }
    const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;
    t.diagnostic(
      `a change through Varnish, purge included: median ${median(changeMs).toFixed(0)} ms; a purge alone at Varnish: median ${median(purgeMs).toFixed(1)} ms`,
    );
    t.diagnostic(
      `straight at the instances: ${Math.round(direct.reads / directSeconds)} reads/s by 12 clients, all of them at the origin`,
    );
    assert.deepEqual(failures.slice(0, 10), []);
    assert.deepEqual(stale.slice(0, 10), [], `${stale.length} stale reads`);
    assert.deepEqual(leaks.slice(0, 10), []);
    assert.deepEqual(cookiesForPublic().slice(0, 10), []);
    assert.ok(changes >= 10, `${changes} changes`);
    assert.ok(acknowledged >= 10);
    assert.ok(ratio > 0.9, `hit ratio ${ratio}`);
  });
});
