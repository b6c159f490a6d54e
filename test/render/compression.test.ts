// Documents compressed with brotli or gzip (lib/render/send.ts): only for clients that accept
// it and bodies of 1 KB and more, with Vary: Accept-Encoding and an ETag per encoding that
// If-None-Match matches; a kept document sends the compressed bytes kept beside it.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { after, before, describe, test } from 'node:test';
import { compressAsync, compressSync } from '../../lib/http/compress.ts';
import { createExchange, etagOf, type Target } from '../../lib/http/index.ts';
import { respond } from '../../lib/render/index.ts';
import type { TestServer } from '../helpers.ts';
import { rawBytes, startTestServer } from '../helpers.ts';

/** The body as sent, not decoded (fetch would decompress it). */
const raw = (url: string, headers: Record<string, string> = {}) =>
  rawBytes(new URL(url).origin, url.slice(new URL(url).origin.length), { headers });

describe('compressed documents', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer({ NODE_ENV: 'production' });
  });
  after(() => server.close());

  for (const path of ['/person/max-muster', '/personen.xml', '/personen.json']) {
    test(`${path}: br and gzip decode to the identity's bytes, each with its own ETag`, async () => {
      const plain = await raw(server.origin + path);
      assert.equal(plain.status, 200);
      assert.equal(plain.headers['content-encoding'], undefined);
      assert.ok(plain.body.length >= 1024, `${plain.body.length} bytes`);
      assert.match(plain.headers.vary ?? '', /Accept-Encoding/);
      const etag = plain.headers.etag as string;
      const br = await raw(server.origin + path, { 'accept-encoding': 'br, gzip' });
      assert.deepEqual([br.headers['content-encoding'], br.headers.etag], ['br', etag.replace(/"$/, '-br"')]);
      assert.deepEqual(brotliDecompressSync(br.body), plain.body);
      assert.equal(Number(br.headers['content-length']), br.body.length);
      assert.match(br.headers.vary ?? '', /Accept-Encoding/);
      const gz = await raw(server.origin + path, { 'accept-encoding': 'gzip' });
      assert.deepEqual([gz.headers['content-encoding'], gz.headers.etag], ['gzip', etag.replace(/"$/, '-gz"')]);
      assert.deepEqual(gunzipSync(gz.body), plain.body);
      assert.ok(br.body.length < plain.body.length / 2 && gz.body.length < plain.body.length / 2);
      console.log(`${path}: ${plain.body.length} bytes, gzip ${gz.body.length}, br ${br.body.length}`);
    });
  }

  test('If-None-Match matches the ETag of the encoding asked for, and a 304 says Vary', async () => {
    const path = `${server.origin}/person/max-muster`;
    const br = await raw(path, { 'accept-encoding': 'br' });
    const again = await raw(path, { 'accept-encoding': 'br', 'if-none-match': br.headers.etag as string });
    assert.deepEqual([again.status, again.headers.etag, again.body.length], [304, br.headers.etag, 0]);
    assert.match(again.headers.vary ?? '', /Accept-Encoding/);
    // The br tag names bytes a gzip client would not get: that client gets its own.
    const gz = await raw(path, { 'accept-encoding': 'gzip', 'if-none-match': br.headers.etag as string });
    assert.deepEqual([gz.status, gz.headers['content-encoding']], [200, 'gzip']);
  });

  test('no compression for a client that refuses it, nor for a body under 1 KB', async () => {
    for (const header of ['identity', 'br;q=0, gzip;q=0', '*;q=0', 'deflate']) {
      const res = await raw(`${server.origin}/person/max-muster`, { 'accept-encoding': header });
      assert.equal(res.headers['content-encoding'], undefined, header);
    }
    const star = await raw(`${server.origin}/person/max-muster`, { 'accept-encoding': '*' });
    assert.equal(star.headers['content-encoding'], 'br');
    const small = await raw(`${server.origin}/robots.txt`, { 'accept-encoding': 'br, gzip' });
    assert.equal(small.status, 200);
    assert.ok(small.body.length < 1024, `${small.body.length} bytes`);
    assert.equal(small.headers['content-encoding'], undefined);
    assert.doesNotMatch(small.headers.vary ?? '', /Accept-Encoding/);
  });
});

/** respond() on a server of its own, for what next() gives; its origin, and close(). */
async function respondWith(next: () => Parameters<typeof respond>[1], format: 'json' | 'html') {
  const target = { suffix: format, link: (p: string) => `http://127.0.0.1${p}`, basePath: '' } as unknown as Target;
  const server = http.createServer(
    (req, res) =>
      void respond(createExchange(req, res, null), next(), { format, target, personal: false, sharedSeconds: 0 }),
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => server.close() };
}

describe('a kept document', () => {
  test('sends the compressed bytes kept beside it, asked for once per answer, and none for a 304', async () => {
    const body = Buffer.from(`{"persons": [${Array.from({ length: 200 }, (_, i) => `"person ${i}"`).join(', ')}]}\n`);
    const asked: string[] = [];
    // As lib/scripts/run.ts keeps them: here marked bytes, so that bytes compressed anew would show.
    const kept = {
      doc: { path: '/personen', title: 'Persons', data: null },
      alternates: [],
      body,
      etag: etagOf(body),
      compressed: async (encoding: 'br' | 'gzip') => {
        asked.push(encoding);
        return Buffer.from(`kept ${encoding} bytes`);
      },
    };
    const server = await respondWith(() => kept, 'json');
    try {
      const br = await raw(`${server.origin}/`, { 'accept-encoding': 'br' });
      assert.deepEqual(
        [br.headers['content-encoding'], br.headers.etag, br.body.toString()],
        ['br', kept.etag.replace(/"$/, '-br"'), 'kept br bytes'],
      );
      const gz = await raw(`${server.origin}/`, { 'accept-encoding': 'gzip' });
      assert.deepEqual([gz.headers['content-encoding'], gz.body.toString()], ['gzip', 'kept gzip bytes']);
      const again = await raw(`${server.origin}/`, {
        'accept-encoding': 'br',
        'if-none-match': br.headers.etag as string,
      });
      assert.equal(again.status, 304);
      assert.deepEqual((await raw(`${server.origin}/`)).body, body);
      assert.deepEqual(asked, ['br', 'gzip']);
    } finally {
      server.close();
    }
  });

  test('a public document rendered again with the same ETag takes the compressed bytes of the first; a private one does not', async () => {
    const page = (text: string) => Buffer.from(`<p>${'Hafen und Deich von Lübeck. '.repeat(100)}${text}</p>`);
    const first = page(String(Math.random()));
    // The same ETag over other bytes: bytes compressed anew would decode to these.
    const render = (body: Buffer, priv: boolean) => ({
      doc: { path: '/person/x', title: 'X', data: null, private: priv },
      alternates: [],
      body,
      etag: etagOf(first),
    });
    let next = render(first, false);
    const server = await respondWith(() => next, 'html');
    try {
      assert.deepEqual(brotliDecompressSync((await raw(`${server.origin}/`, { 'accept-encoding': 'br' })).body), first);
      const other = page('other');
      next = render(other, false);
      assert.deepEqual(brotliDecompressSync((await raw(`${server.origin}/`, { 'accept-encoding': 'br' })).body), first);
      next = render(other, true);
      assert.deepEqual(brotliDecompressSync((await raw(`${server.origin}/`, { 'accept-encoding': 'br' })).body), other);
    } finally {
      server.close();
    }
  });
});

describe('compressed bytes kept', () => {
  test("hold their own size, not zlib's 16 KB output chunk", async () => {
    const page = Buffer.from(`<p>${'Werk und Hafen, '.repeat(300)}</p>`);
    for (const encoding of ['br', 'gzip'] as const) {
      for (const compressed of [compressSync(page, encoding), await compressAsync(page, encoding)]) {
        assert.ok(compressed.length < 1024, `${encoding}: ${compressed.length} bytes`);
        assert.equal(
          compressed.buffer.byteLength,
          compressed.length,
          `${encoding}: ${compressed.length} bytes held in ${compressed.buffer.byteLength}`,
        );
        assert.deepEqual(encoding === 'br' ? brotliDecompressSync(compressed) : gunzipSync(compressed), page);
      }
    }
  });
});
