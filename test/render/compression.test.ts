// Documents compressed with brotli or gzip (lib/render/respond.ts): only for clients that accept
// it and bodies of 1 KB and more, with Vary: Accept-Encoding and an ETag per encoding that
// If-None-Match matches; a kept document keeps its compressed bytes beside the others.
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
const raw = (url: string, headers: Record<string, string> = {}) => rawBytes(new URL(url).origin, url.slice(new URL(url).origin.length), { headers });

describe('compressed documents', () => {
  let server: TestServer;
  before(async () => { server = await startTestServer({ NODE_ENV: 'production' }); });
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

describe('a kept document', () => {
  test('is compressed once per encoding: later answers send the bytes kept beside it', async () => {
    const body = Buffer.from(`{"persons": [${Array.from({ length: 200 }, (_, i) => `"person ${i}"`).join(', ')}]}\n`);
    type Kept = Parameters<typeof respond>[1] & { encoded?: Partial<Record<'br' | 'gzip', { body: Buffer; etag: string }>> };
    const kept: Kept = { doc: { path: '/personen', title: 'Persons', data: {} }, alternates: [], body, etag: etagOf(body) };
    const target = { suffix: 'json', link: (p: string) => `http://127.0.0.1${p}`, basePath: '' } as unknown as Target;
    const server = http.createServer((req, res) => void respond(createExchange(req, res, null), kept, { format: 'json', target, personal: false }));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const first = await raw(`${origin}/`, { 'accept-encoding': 'br' });
      assert.deepEqual(brotliDecompressSync(first.body), body);
      const br = kept.encoded?.br;
      assert.ok(br && kept.encoded);
      assert.deepEqual(br.body, first.body);
      // Were it compressed again, the client would get the real bytes, not these.
      kept.encoded.br = { ...br, body: Buffer.from('kept bytes') };
      const second = await raw(`${origin}/`, { 'accept-encoding': 'br' });
      assert.equal(second.body.toString(), 'kept bytes');
      assert.equal(kept.encoded?.gzip, undefined);
      await raw(`${origin}/`, { 'accept-encoding': 'gzip' });
      const gzip = (kept.encoded as NonNullable<Kept['encoded']>).gzip;
      assert.deepEqual(gunzipSync(gzip?.body ?? Buffer.alloc(0)), body);
    } finally {
      server.close();
    }
  });

  test('a public document rendered again with the same bytes (same ETag) takes the compressed bytes of the first; a private one does not', async () => {
    const body = Buffer.from(`<p>${'Hafen und Deich von Lübeck. '.repeat(100)}${Math.random()}</p>`);
    type Made = Parameters<typeof respond>[1] & { encoded?: Partial<Record<'br' | 'gzip', { body: Buffer; etag: string }>> };
    const render = (priv: boolean): Made => ({ doc: { path: '/person/x', title: 'X', data: {}, private: priv }, alternates: [], body, etag: etagOf(body) });
    let next = render(false);
    const target = { suffix: 'html', link: (p: string) => `http://127.0.0.1${p}`, basePath: '' } as unknown as Target;
    const server = http.createServer((req, res) => void respond(createExchange(req, res, null), next, { format: 'html', target, personal: false }));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const first = next;
      assert.deepEqual(brotliDecompressSync((await raw(`${origin}/`, { 'accept-encoding': 'br' })).body), body);
      const kept = first.encoded?.br;
      assert.ok(kept);
      // The bytes kept for this ETag; a document compressed again would send the real ones.
      kept.body = Buffer.from('kept for this ETag');
      next = render(false);
      assert.equal((await raw(`${origin}/`, { 'accept-encoding': 'br' })).body.toString(), 'kept for this ETag');
      next = render(true);
      assert.deepEqual(brotliDecompressSync((await raw(`${origin}/`, { 'accept-encoding': 'br' })).body), body);
    } finally {
      server.close();
    }
  });
});

describe('compressed bytes kept', () => {
  test('hold their own size, not zlib\'s 16 KB output chunk', async () => {
    const page = Buffer.from(`<p>${'Werk und Hafen, '.repeat(300)}</p>`);
    for (const encoding of ['br', 'gzip'] as const) {
      for (const compressed of [compressSync(page, encoding), await compressAsync(page, encoding)]) {
        assert.ok(compressed.length < 1024, `${encoding}: ${compressed.length} bytes`);
        assert.equal(compressed.buffer.byteLength, compressed.length, `${encoding}: ${compressed.length} bytes held in ${compressed.buffer.byteLength}`);
        assert.deepEqual(encoding === 'br' ? brotliDecompressSync(compressed) : gunzipSync(compressed), page);
      }
    }
  });
});
