// Files of public/ through `send`: the common types, Range, validators, immutable caching for
// content-hash names, compression of text, hidden files and traversal refused, and a 200 MB file
// streamed from disk by the built program while its memory stays where it was.
import assert from 'node:assert/strict';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { after, before, describe, test } from 'node:test';
import type { TestServer } from '../helpers.ts';
import { rawBytes, rawRequest, root, startTestServer } from '../helpers.ts';
import type { OwnProgram } from '../program.ts';
import { startOwnProgram } from '../program.ts';

const bytesOf = (origin: string, target: string, headers: Record<string, string> = {}, method = 'GET') =>
  rawBytes(origin, target, { headers, method });

describe('files of public/', () => {
  let server: TestServer;
  let publicDir: string;
  const css = `body { color: #222; }\n${'.rule-x { margin: 0 auto; padding: 1rem; }\n'.repeat(100)}`;
  const binary = Buffer.from(Array.from({ length: 5000 }, (_, i) => (i * 7919) % 256));

  before(async () => {
    publicDir = mkdtempSync(path.join(os.tmpdir(), 'portfolio-public-'));
    cpSync(path.join(root, 'public'), publicDir, { recursive: true });
    mkdirSync(path.join(publicDir, 'files'));
    writeFileSync(path.join(publicDir, 'css/big.css'), css);
    writeFileSync(path.join(publicDir, 'css/app.3f2a9c1b7e4d5a60.css'), css);
    for (const name of ['a.gif', 'a.pdf', 'a.woff2', 'a.avif', 'a.zip'])
      writeFileSync(path.join(publicDir, 'files', name), binary);
    writeFileSync(path.join(publicDir, 'files/.secret'), 'hidden');
    server = await startTestServer({ PUBLIC_DIR: publicDir });
  });
  after(async () => {
    await server.close();
    rmSync(publicDir, { recursive: true, force: true });
  });

  test('the common types come from the mime table', async () => {
    const expected: Record<string, string> = {
      'a.gif': 'image/gif',
      'a.pdf': 'application/pdf',
      'a.woff2': 'font/woff2',
      'a.avif': 'image/avif',
      'a.zip': 'application/zip',
    };
    for (const [name, type] of Object.entries(expected)) {
      const res = await bytesOf(server.origin, `/files/${name}`);
      assert.equal(res.status, 200, name);
      assert.equal(res.headers['content-type'], type, name);
      assert.deepEqual(res.body, binary, name);
      assert.equal(res.headers['accept-ranges'], 'bytes', name);
    }
  });

  test('Range: one range is 206 with Content-Range, an unsatisfiable one 416', async () => {
    const part = await bytesOf(server.origin, '/files/a.pdf', { range: 'bytes=100-199' });
    assert.equal(part.status, 206);
    assert.equal(part.headers['content-range'], `bytes 100-199/${binary.length}`);
    assert.deepEqual(part.body, binary.subarray(100, 200));
    const tail = await bytesOf(server.origin, '/files/a.pdf', { range: 'bytes=-10' });
    assert.deepEqual([tail.status, tail.body], [206, binary.subarray(binary.length - 10)]);
    const outside = await bytesOf(server.origin, '/files/a.pdf', {
      range: 'bytes=999999-',
      accept: 'application/json',
    });
    assert.equal(outside.status, 416);
    assert.equal(outside.headers['content-range'], `bytes */${binary.length}`);
    assert.equal(JSON.parse(outside.body.toString()).status, 416);
    assert.equal(outside.headers.etag, undefined);
  });

  test('Last-Modified and ETag answer conditional requests with 304', async () => {
    const first = await bytesOf(server.origin, '/files/a.gif');
    assert.match(first.headers.etag ?? '', /^"[0-9a-f]+-[0-9a-f]+"$/);
    assert.ok(first.headers['last-modified']);
    assert.equal(first.headers['cache-control'], 'public, max-age=3600');
    const byTag = await bytesOf(server.origin, '/files/a.gif', { 'if-none-match': first.headers.etag as string });
    assert.deepEqual([byTag.status, byTag.body.length], [304, 0]);
    const byDate = await bytesOf(server.origin, '/files/a.gif', {
      'if-modified-since': first.headers['last-modified'] as string,
    });
    assert.equal(byDate.status, 304);
    assert.equal((await bytesOf(server.origin, '/files/a.gif', { 'if-none-match': '"other"' })).status, 200);
    // If-Range with a tag that no longer holds sends the whole file.
    const stale = await bytesOf(server.origin, '/files/a.gif', { range: 'bytes=0-9', 'if-range': '"old"' });
    assert.deepEqual([stale.status, stale.body.length], [200, binary.length]);
  });

  test('a content-hash name is immutable, a plain one revalidated', async () => {
    assert.equal(
      (await bytesOf(server.origin, '/css/app.3f2a9c1b7e4d5a60.css')).headers['cache-control'],
      'public, max-age=31536000, immutable',
    );
    assert.equal((await bytesOf(server.origin, '/css/big.css')).headers['cache-control'], 'public, max-age=3600');
  });

  test('text is compressed for a client that accepts it, with Vary and its own ETag that If-None-Match matches', async () => {
    const plain = await bytesOf(server.origin, '/css/big.css');
    assert.equal(plain.headers['content-encoding'], undefined);
    assert.equal(plain.headers.vary, 'Accept-Encoding');
    assert.equal(plain.body.toString(), css);
    const etag = plain.headers.etag as string;
    const br = await bytesOf(server.origin, '/css/big.css', { 'accept-encoding': 'gzip, br' });
    assert.deepEqual(
      [br.headers['content-encoding'], br.headers.vary, br.headers.etag],
      ['br', 'Accept-Encoding', etag.replace(/"$/, '-br"')],
    );
    assert.equal(brotliDecompressSync(br.body).toString(), css);
    assert.ok(br.body.length < css.length / 5, `${br.body.length} bytes`);
    assert.equal(Number(br.headers['content-length']), br.body.length);
    const gz = await bytesOf(server.origin, '/css/big.css', { 'accept-encoding': 'gzip, br;q=0' });
    assert.deepEqual([gz.headers['content-encoding'], gz.headers.etag], ['gzip', etag.replace(/"$/, '-gz"')]);
    assert.equal(gunzipSync(gz.body).toString(), css);
    const again = await bytesOf(server.origin, '/css/big.css', {
      'accept-encoding': 'br',
      'if-none-match': br.headers.etag as string,
    });
    assert.deepEqual([again.status, again.headers.etag, again.headers.vary], [304, br.headers.etag, 'Accept-Encoding']);
    // HEAD tells the compressed length without the body.
    const head = await bytesOf(server.origin, '/css/big.css', { 'accept-encoding': 'br' }, 'HEAD');
    assert.deepEqual([head.headers['content-length'], head.body.length], [br.headers['content-length'], 0]);
  });

  test('tiny text and compressed types are sent as they are', async () => {
    const tiny = await bytesOf(server.origin, '/img/person.svg', { 'accept-encoding': 'br, gzip' });
    assert.deepEqual([tiny.status, tiny.headers['content-encoding']], [200, undefined]);
    const gif = await bytesOf(server.origin, '/files/a.gif', { 'accept-encoding': 'br, gzip' });
    assert.deepEqual([gif.headers['content-encoding'], gif.headers.vary], [undefined, undefined]);
    assert.deepEqual(gif.body, binary);
  });

  test('hidden files, traversal and folders stay refused', async () => {
    assert.equal((await rawRequest(server.origin, '/files/.secret')).status, 403);
    for (const target of [
      '/files/..%2f..%2fetc/passwd',
      '/files/%2e%2e/%2e%2e/etc/passwd',
      '/files',
      '/css/',
      '/files/a.gif/x',
    ]) {
      const res = await rawRequest(server.origin, target);
      assert.ok([301, 404].includes(res.status), `${target}: ${res.status}`);
      assert.doesNotMatch(res.body, /root:/);
    }
  });

  test('the access log counts the bytes a streamed file sent', async () => {
    await bytesOf(server.origin, '/files/a.zip?count');
    const { waitFor } = await import('../helpers.ts');
    await waitFor(server.accessLog, (log) => log.includes(`"GET /files/a.zip?count HTTP/1.1" 200 ${binary.length} `));
  });
});

describe('a 200 MB file', () => {
  let own: OwnProgram;
  let publicDir: string;
  const size = 200 * 1024 * 1024;

  before(async () => {
    publicDir = mkdtempSync(path.join(os.tmpdir(), 'portfolio-public-'));
    cpSync(path.join(root, 'public'), publicDir, { recursive: true });
    // Sparse: 200 MB to read, nothing written to the disk.
    writeFileSync(path.join(publicDir, 'big.bin'), '');
    truncateSync(path.join(publicDir, 'big.bin'), size);
    own = await startOwnProgram({ PUBLIC_DIR: publicDir });
  });
  after(async () => {
    await own?.close();
    rmSync(publicDir, { recursive: true, force: true });
  });

  test('is streamed from disk: the server process does not grow by the file', async () => {
    const pid = own.program.child.pid as number;
    const rss = () => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]) * 1024;
    // Warm up: the first requests load what any file's request loads, a megabyte of it streamed.
    await bytesOf(own.program.origin, '/css/site.css');
    assert.equal(
      (await bytesOf(own.program.origin, '/big.bin', { range: 'bytes=0-1048575' })).body.length,
      1024 * 1024,
    );
    const before = rss();
    let peak = before;
    let received = 0;
    await new Promise<void>((resolve, reject) => {
      http
        .get(`${own.program.origin}/big.bin`, (res) => {
          assert.equal(res.statusCode, 200);
          assert.equal(Number(res.headers['content-length']), size);
          res.on('data', (chunk: Buffer) => {
            received += chunk.length;
            peak = Math.max(peak, rss());
          });
          res.on('end', resolve);
          res.on('error', reject);
        })
        .on('error', reject);
    });
    assert.equal(received, size);
    const grown = peak - before;
    console.log(
      `RSS before ${(before / 2 ** 20).toFixed(1)} MiB, peak while serving 200 MB ${(peak / 2 ** 20).toFixed(1)} MiB (+${(grown / 2 ** 20).toFixed(1)} MiB)`,
    );
    // Whole in memory it would grow by 200 MB at least; streamed it stays within a few buffers
    // and the young generation's growth (1.8 MiB with PGlite, 34 MiB with pg in one run).
    assert.ok(grown < 100 * 2 ** 20, `RSS grew by ${(grown / 2 ** 20).toFixed(1)} MiB`);
  });
});
