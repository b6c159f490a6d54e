// A response's header block stays well under the 4 KB a proxy's buffer holds, whatever the
// address asked for: the Link header keeps to its budget (the canonical URL, the alternates, then
// the pages while they fit), its URLs write commas as %2C, and a redirect's Location is bounded
// (docs/robustness.md, Response headers).
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import type { TestServer } from './helpers.ts';
import { readJson, startTestServer } from './helpers.ts';
import { cookieOf, demo, openLoginForm, postForm } from './login-helpers.ts';

let server: TestServer;
before(async () => {
  server = await startTestServer();
  // 25 works with a word of their own: three pages of hits.
  await server.db.query(
    `INSERT INTO werk (person_id, titel) SELECT 1, 'Kopfzeilenstudie ' || g FROM generate_series(1, 25) AS g`,
  );
});
after(() => server?.close());

interface Head {
  status: number;
  /** The status line and the headers as sent, with the blank line that ends them. */
  bytes: number;
  headers: Map<string, string>;
}

/** The response's head as the bytes on the wire (Node's own client refuses one over 16 KB). */
function headOf(target: string, headers: Record<string, string> = {}): Promise<Head> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(new URL(server.origin).port), '127.0.0.1', () => {
      const lines = Object.entries({ host: new URL(server.origin).host, connection: 'close', ...headers }).map(
        ([name, value]) => `${name}: ${value}\r\n`,
      );
      socket.write(`GET ${target} HTTP/1.1\r\n${lines.join('')}\r\n`);
    });
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('end', () => {
      const text = Buffer.concat(chunks).toString('latin1');
      const end = text.indexOf('\r\n\r\n');
      const [statusLine = '', ...fields] = text.slice(0, end).split('\r\n');
      const parsed = new Map(
        fields.map((f) => [f.slice(0, f.indexOf(':')).toLowerCase(), f.slice(f.indexOf(':') + 1).trim()]),
      );
      resolve({ status: Number(statusLine.split(' ')[1]), bytes: end + 4, headers: parsed });
    });
  });
}

/** The Link header's relations in their order, as [rel, URL]. */
function relations(link: string | undefined): [string, string][] {
  return [...(link ?? '').matchAll(/<([^>]*)>; rel="([^"]+)"/g)].map((m) => [m[2] as string, m[1] as string]);
}

const search = 'query=any,contains,kopfzeilenstudie&tab=default_tab&search_scope=default_scope&vid=portfolio';
const excluding = (...values: string[]) => values.map((v) => `&facet=creator,exclude,${v}`).join('');

describe('a search with long facet values', () => {
  // Searches that made header blocks of 13 to 87 KB: a few long facet values, written up to seven
  // times in Link. Those whose links would pass 1,536 characters are 400 now.
  const hostile: [string, string, number][] = [
    [
      'three facet values of 400 characters',
      `/search?${search}&offset=10${excluding(...[1, 2, 3].map((i) => String(i).repeat(400)))}`,
      200,
    ],
    [
      'four facet values of 400 characters',
      `/search?${search}&offset=10${excluding(...[1, 2, 3, 4].map((i) => String(i).repeat(400)))}`,
      400,
    ],
    [
      'ten facet values of 400 characters',
      `/search?${search}&offset=10${excluding(...Array.from({ length: 10 }, (_, i) => String(i).repeat(400)))}`,
      400,
    ],
    [
      'ten facet values that triple when encoded',
      `/search.json?${search}&offset=10${excluding(...Array.from({ length: 10 }, (_, i) => i + '@'.repeat(399)))}`,
      400,
    ],
    [
      'five terms of 200 characters that triple when encoded',
      `/search?${Array.from({ length: 5 }, () => `query=any,contains,k${'@'.repeat(199)}`).join('&')}`,
      400,
    ],
    [
      'the search form with ten facet values of 400 characters',
      `/search?term=kopfzeilenstudie${excluding(...Array.from({ length: 10 }, (_, i) => String(i).repeat(400)))}`,
      400,
    ],
  ];
  for (const [name, target, status] of hostile) {
    test(`${name}: the whole header block is under 4 KB`, async () => {
      const head = await headOf(target);
      assert.equal(head.status, status);
      assert.ok(head.bytes < 4096, `${head.bytes} bytes`);
    });
  }

  test('whose links would pass 1,536 characters is 400 naming the parameters and the limit', async () => {
    const res = await fetch(
      `${server.origin}/search.json?${search}${excluding(...[1, 2, 3, 4].map((i) => String(i).repeat(400)))}`,
    );
    assert.equal(res.status, 400);
    assert.equal(
      (await readJson(res)).detail,
      'The parameters query and facet make this search 1792 characters long as its links write it, more than 1536; use fewer or shorter terms and facet values.',
    );
  });

  test('a facet value longer than any the data holds is 400 naming the limit', async () => {
    for (const [name, max] of [
      ['rtype', 100],
      ['creator', 401],
    ] as const) {
      const res = await fetch(`${server.origin}/search.json?${search}&facet=${name},include,${'w'.repeat(max + 1)}`);
      assert.equal(res.status, 400);
      assert.equal(
        (await readJson(res)).detail,
        `Parameter facet: a value of ${name} is at most ${max} characters, not ${max + 1}.`,
      );
      assert.equal(
        (await fetch(`${server.origin}/search.json?${search}&facet=${name},include,${'w'.repeat(max)}`)).status,
        200,
      );
    }
  });

  test('leaves the pages that do not fit out of Link; the body still links them', async () => {
    const facets = excluding('x'.repeat(300), 'y'.repeat(300));
    const at = (offset: number, suffix = '') =>
      `${server.origin}/search${suffix}?${search}${facets}${offset ? `&offset=${offset}` : ''}`;
    const head = await headOf(`/search.json?${search}${facets}&offset=10`);
    assert.equal(head.status, 200);
    // The canonical URL and one alternate fit in 2 KB; the other alternates and the pages do not.
    assert.deepEqual(
      relations(head.headers.get('link')),
      [
        ['canonical', at(10)],
        ['alternate', at(10, '.html')],
      ].map(([rel, url]) => [rel, url?.replaceAll(',', '%2C')]),
    );
    const body = await readJson(await fetch(`${server.origin}/search.json?${search}${facets}&offset=10`));
    assert.deepEqual([body.previous, body.next], [at(0), at(20)]);
  });

  test('a shorter search has its canonical URL, its alternates and its next and previous pages', async () => {
    const facets = excluding('x'.repeat(130));
    const at = (offset: number, suffix = '') =>
      `${server.origin}/search${suffix}?${search}${facets}${offset ? `&offset=${offset}` : ''}`.replaceAll(',', '%2C');
    const head = await headOf(`/search?${search}${facets}&offset=10`, { accept: 'application/json' });
    assert.deepEqual(relations(head.headers.get('link')), [
      ['canonical', at(10)],
      ['alternate', at(10, '.html')],
      ['alternate', at(10, '.xml')],
      ['alternate', at(10, '.json')],
      ['next', at(20)],
      ['prev', at(0)],
    ]);
  });

  test('a search of usual length has every page in Link, next first', async () => {
    const at = (offset: number) =>
      `${server.origin}/search?${search}${offset ? `&offset=${offset}` : ''}`.replaceAll(',', '%2C');
    const head = await headOf(`/search?${search}&offset=10`, { accept: 'application/json' });
    assert.deepEqual(
      relations(head.headers.get('link')).filter(([rel]) => rel !== 'alternate'),
      [
        ['canonical', at(10)],
        ['next', at(20)],
        ['prev', at(0)],
        ['first', at(0)],
        ['last', at(20)],
      ],
    );
  });
});

describe('commas in Link', () => {
  test('are written %2C in its URLs, so that splitting the header at commas gives whole links; the body keeps them readable', async () => {
    const res = await fetch(`${server.origin}/search.json?${search}&facet=rtype,exclude,Roman`);
    const link = res.headers.get('link') as string;
    const parts = link.split(',');
    assert.equal(parts.length, 4 + 3);
    for (const part of parts)
      assert.match(
        part.trim(),
        /^<http:\/\/127\.0\.0\.1:\d+\/search(\.\w+)?\?query=any%2Ccontains%2Ckopfzeilenstudie&tab=default_tab&search_scope=default_scope&vid=portfolio&facet=rtype%2Cexclude%2CRoman(&offset=\d+)?>; rel="[a-z]+"(; type="[a-z/]+")?$/,
      );
    const body = await readJson(res);
    assert.equal(body.url, `${server.origin}/search?${search}&facet=rtype,exclude,Roman`);
  });
});

describe('a redirect', () => {
  test('to an address too long for a Location is 414; a shorter one is sent', async () => {
    const near = `x=${'a'.repeat(1900)}`;
    const sent = await headOf(`/personen/?${near}`);
    assert.equal(sent.status, 301);
    assert.equal(sent.headers.get('location'), `${server.origin}/personen?${near}`);
    const far = await headOf(`/personen/?x=${'a'.repeat(7900)}`, { accept: 'application/json' });
    assert.equal(far.status, 414);
    assert.equal(far.headers.get('location'), undefined);
    assert.ok(far.bytes < 1024, `${far.bytes} bytes`);
    const problem = await readJson(
      await fetch(`${server.origin}/personen/?x=${'a'.repeat(7900)}`, {
        headers: { accept: 'application/json' },
        redirect: 'manual',
      }),
    );
    assert.equal(
      problem.detail,
      `This address redirects to one of ${server.origin.length + 7912} characters, more than the 2048 a redirect may carry; shorten its query.`,
    );
  });

  test('after a login, to a way back too long for a Location, leads to the own loan list instead', async () => {
    const form = await openLoginForm(server.origin);
    // 1,000 characters as sent; 6,000 as a URL writes them.
    const back = `/personen?q=${'ü'.repeat(988)}`;
    const res = await postForm(
      server.origin,
      '/login',
      { username: 'mmuster', password: demo.mmuster.password, csrf_token: form.csrfToken, back },
      { cookie: form.cookie },
    );
    assert.equal(res.status, 303);
    assert.equal(res.headers.get('location'), `${server.origin}/entlehnte/${demo.mmuster.id}`);
    assert.ok(cookieOf(res));
  });
});
