// The front: URL styles, representation choice, headers every document carries,
// methods, conditional requests and the addresses that must never reach a file.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { TestServer } from './helpers.ts';
import { rawRequest, readJson, startTestServer } from './helpers.ts';

let server: TestServer;

before(async () => {
  server = await startTestServer();
});
after(() => server.close());

const get = (path: string, headers: Record<string, string> = {}, method = 'GET') =>
  fetch(server.origin + path, { headers, method, redirect: 'manual' });

describe('representation choice', () => {
  const cases: [string, Record<string, string>, string][] = [
    ['no Accept header', {}, 'text/html; charset=utf-8'],
    ['Accept */*', { accept: '*/*' }, 'text/html; charset=utf-8'],
    [
      "a browser's Accept header",
      { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' },
      'text/html; charset=utf-8',
    ],
    ['Accept application/xml', { accept: 'application/xml' }, 'application/xml; charset=utf-8'],
    ['Accept text/xml', { accept: 'text/xml' }, 'application/xml; charset=utf-8'],
    ['Accept application/json', { accept: 'application/json' }, 'application/json; charset=utf-8'],
    [
      'q-values: JSON preferred over HTML',
      { accept: 'text/html;q=0.5, application/json' },
      'application/json; charset=utf-8',
    ],
    [
      'equal q: the more specific type wins',
      { accept: 'application/*;q=0.8, application/json;q=0.8, text/*;q=0.1' },
      'application/json; charset=utf-8',
    ],
    [
      'equal q and specificity: server order HTML, XML, JSON',
      { accept: 'application/json, application/xml' },
      'application/xml; charset=utf-8',
    ],
  ];
  for (const [name, headers, type] of cases) {
    test(`${name} gives ${type.split(';')[0]}`, async () => {
      const res = await get('/person/max-muster', headers);
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('content-type'), type);
      // Accept-Encoding too where the body is large enough to be compressed.
      assert.match(res.headers.get('vary') ?? '', /^Accept(, Accept-Encoding)?$/);
    });
  }

  test('a suffix wins over Accept and carries no Vary', async () => {
    const res = await get('/person/max-muster.json', { accept: 'application/xml' });
    assert.equal(res.headers.get('content-type'), 'application/json; charset=utf-8');
    assert.equal(res.headers.get('vary'), null);
  });

  test('suffixes work on every rewritten resource URL', async () => {
    for (const path of [
      '/personen.xml',
      '/werk/1.html',
      '/werk/1.json',
      '/index.json',
      '/search.xml?query=any,contains,max',
    ]) {
      const res = await get(path);
      assert.equal(res.status, 200, path);
      assert.equal(
        res.headers.get('content-type')?.split(';')[0],
        { html: 'text/html', xml: 'application/xml', json: 'application/json' }[
          path.split('?')[0]?.split('.').pop() as string
        ],
        path,
      );
    }
  });

  test('answers 406 listing the alternatives with their URLs when nothing is acceptable', async () => {
    const res = await get('/person/max-muster', { accept: 'image/png' });
    assert.equal(res.status, 406);
    assert.equal(res.headers.get('content-type'), 'text/html; charset=utf-8');
    const html = await res.text();
    for (const suffix of ['html', 'xml', 'json'])
      assert.ok(html.includes(`href="${server.origin}/person/max-muster.${suffix}"`), suffix);
  });

  test('the 406 list keeps the query, and a script URL lists its own forms', async () => {
    for (const [path, stem, query] of [
      ['/search?query=any,contains,haus', '/search', '?query=any,contains,haus'],
      ['/person.php?pid=1', '/person.php', '?pid=1'],
    ] as const) {
      const res = await get(path, { accept: 'application/problem+json' });
      assert.equal(res.status, 406);
      const hrefs = (await readJson(res)).alternates.map((a: { href: string }) => a.href) as string[];
      assert.deepEqual(
        hrefs,
        ['html', 'xml', 'json'].map((s) => `${server.origin}${stem}.${s}${query}`),
      );
      for (const href of hrefs) assert.equal((await fetch(href)).status, 200, href);
    }
  });

  test('406 as problem details when the client takes problem+json', async () => {
    const res = await get('/person/max-muster', { accept: 'application/problem+json' });
    assert.equal(res.status, 406);
    const problem = await readJson(res);
    assert.deepEqual(
      problem.alternates.map((a: { href: string }) => a.href),
      ['html', 'xml', 'json'].map((s) => `${server.origin}/person/max-muster.${s}`),
    );
  });
});

describe('URL styles', () => {
  const pairs: [string, string][] = [
    ['/', '/index.php'],
    ['/personen', '/personen.php'],
    ['/personen?offset=1', '/personen.php?offset=1'],
    ['/werk/1', '/werk.php?id=1'],
    ['/search?query=any,contains,m', '/search.php?query=any,contains,m'],
  ];
  for (const [clean, script] of pairs) {
    test(`${clean} and ${script} answer the same document`, async () => {
      const a = await get(clean, { accept: 'application/json' });
      const b = await get(script, { accept: 'application/json' });
      assert.equal(a.status, 200);
      assert.equal(b.status, 200);
      assert.equal(await a.text(), await b.text());
    });
  }

  test('a trailing slash redirects to the one URL of the resource', async () => {
    const res = await get('/personen/');
    assert.equal(res.status, 301);
    assert.equal(res.headers.get('location'), `${server.origin}/personen`);
  });

  test('a redirect location is percent-encoded once', async () => {
    const res = await rawRequest(server.origin, '/person/max%20muster/?x=%C3%BC');
    assert.equal(res.status, 301);
    assert.equal(res.headers.location, `${server.origin}/person/max%20muster?x=%C3%BC`);
  });

  test('a redirect escapes the path once: /a%20b/ answers 301 to /a%20b', async () => {
    const res = await rawRequest(server.origin, '/a%20b/');
    assert.equal(res.status, 301);
    assert.equal(res.headers.location, `${server.origin}/a%20b`);
  });

  for (const target of [
    '/foo.php',
    '/../server.ts',
    '/%2e%2e/server.ts',
    '/person.php%00',
    '/person.php%00.json',
    '/scripts/person.ts',
    '/server.ts',
    '/lib/db.ts',
    '/etc/passwd',
    '/nothing',
  ]) {
    test(`${target} is 404, never a file read`, async () => {
      const res = await rawRequest(server.origin, target);
      assert.equal(res.status, 404);
      assert.doesNotMatch(res.body, /import |export |SELECT /);
    });
  }

  test('hidden files are forbidden', async () => {
    assert.equal((await rawRequest(server.origin, '/.env')).status, 403);
    assert.equal((await rawRequest(server.origin, '/.git/config')).status, 403);
  });

  test('a malformed percent-encoding is 400', async () => {
    assert.equal((await rawRequest(server.origin, '/person/%E0%A4%A')).status, 400);
  });

  test('an over-long URL is 414', async () => {
    assert.equal((await rawRequest(server.origin, '/person/' + 'a'.repeat(9000))).status, 414);
  });

  test('pictures are served from public/', async () => {
    const res = await get('/img/max-muster.svg');
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'image/svg+xml');
    assert.match(await res.text(), /<svg/);
  });
});

describe('headers and methods', () => {
  test('HEAD answers the headers of GET without a body', async () => {
    const getRes = await rawRequest(server.origin, '/person/max-muster.json');
    const head = await rawRequest(server.origin, '/person/max-muster.json', { method: 'HEAD' });
    assert.equal(head.status, 200);
    assert.equal(head.body, '');
    assert.equal(head.headers['content-length'], getRes.headers['content-length']);
    assert.equal(head.headers.etag, getRes.headers.etag);
  });

  test('OPTIONS answers 204 with Allow', async () => {
    const res = await get('/person/max-muster', {}, 'OPTIONS');
    assert.equal(res.status, 204);
    assert.equal(res.headers.get('allow'), 'GET, HEAD, OPTIONS, PUT, DELETE');
  });

  test('an unsupported method is 405 with Allow', async () => {
    for (const method of ['POST', 'PUT', 'DELETE', 'PATCH']) {
      const res = await get('/search', { accept: 'application/json' }, method);
      assert.equal(res.status, 405, method);
      assert.equal(res.headers.get('allow'), 'GET, HEAD, OPTIONS');
      assert.equal((await readJson(res)).status, 405);
    }
  });

  test('If-None-Match with the ETag answers 304 for GET and HEAD', async () => {
    const first = await get('/person/max-muster.xml');
    const etag = first.headers.get('etag') as string;
    assert.match(etag, /^"[A-Za-z0-9_-]{27}"$/);
    for (const method of ['GET', 'HEAD']) {
      const again = await get('/person/max-muster.xml', { 'if-none-match': etag }, method);
      assert.equal(again.status, 304, method);
      assert.equal(again.headers.get('etag'), etag);
      assert.equal(await again.text(), '');
    }
    assert.equal((await get('/person/max-muster.xml', { 'if-none-match': '"other"' })).status, 200);
  });

  test('each representation has its own strong ETag', async () => {
    const tags = new Set<string | null>();
    for (const suffix of ['html', 'xml', 'json'])
      tags.add((await get(`/person/max-muster.${suffix}`)).headers.get('etag'));
    assert.equal(tags.size, 3);
  });

  test('public documents are cacheable for a short while with revalidation', async () => {
    assert.equal((await get('/personen')).headers.get('cache-control'), 'public, max-age=0, s-maxage=86400');
  });

  test('no public GET carries Set-Cookie', async () => {
    for (const path of [
      '/',
      '/personen',
      '/person/max-muster',
      '/person.php?pid=1',
      '/werk/1',
      '/search',
      '/search?query=any,contains,a',
      '/img/max-muster.svg',
      '/nothing',
      '/person.php?pid=x',
    ]) {
      for (const suffix of ['', '.json']) {
        const target = suffix && path.includes('?') ? path.replace('?', `${suffix}?`) : path + suffix;
        const res = await rawRequest(server.origin, target);
        assert.equal(res.headers['set-cookie'], undefined, target);
      }
    }
  });
});

describe('absolute URLs come from BASE_URL or an allowed Host only', () => {
  test('a Host that is not allowed is 400 and never reaches a link', async () => {
    const res = await rawRequest(server.origin, '/person/max-muster.json', { headers: { host: 'evil.example' } });
    assert.equal(res.status, 400);
    assert.doesNotMatch(res.body, /evil\.example\/werk/);
  });

  test('an allowed Host builds the links', async () => {
    const port = new URL(server.origin).port;
    const res = await rawRequest(server.origin, '/person/max-muster.json', { headers: { host: `localhost:${port}` } });
    assert.equal(res.status, 200);
    assert.match(JSON.parse(res.body).werk[0].url, new RegExp(`^http://localhost:${port}/werk/\\d+$`));
  });

  test('BASE_URL wins over any Host', async () => {
    const other = await startTestServer({ BASE_URL: 'https://portfolio.example.org' });
    try {
      const res = await rawRequest(other.origin, '/person/max-muster.json', { headers: { host: 'evil.example' } });
      assert.equal(res.status, 200);
      const person = JSON.parse(res.body);
      assert.equal(person.image, 'https://portfolio.example.org/img/max-muster.svg');
      assert.match(person.werk[0].url, /^https:\/\/portfolio\.example\.org\/werk\/\d+$/);
    } finally {
      await other.close();
    }
  });
});
