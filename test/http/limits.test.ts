// Slow and oversized input against the configured server (lib/http/server.ts): slow headers are
// cut off, oversized bodies, headers and addresses are refused without being read to the end,
// and a thousand idle keep-alive connections do not starve anyone else.
import assert from 'node:assert/strict';
import net from 'node:net';
import { performance } from 'node:perf_hooks';
import { after, before, describe, test } from 'node:test';
import type { TestServer } from '../helpers.ts';
import { rawRequest, startTestServer, waitFor } from '../helpers.ts';

// The security headers every answer carries, also the ones the HTTP parser's refusals get.
const security =
  "content-security-policy: default-src 'self'; img-src 'self' https: http: data:; style-src 'self'; frame-ancestors 'none'; form-action 'self'\r\n" +
  'x-content-type-options: nosniff\r\nreferrer-policy: same-origin\r\n';

const headersTimeoutMs = 1000;
let server: TestServer;
let port: number;

before(async () => {
  server = await startTestServer({ NODE_ENV: 'production' }, { limits: { headersTimeoutMs } });
  port = Number(new URL(server.origin).port);
});
after(() => server.close());

interface RawExchange {
  /** Everything the server sent. */
  received: string;
  /** Milliseconds from connecting until the server closed the connection. */
  closedAfterMs: number;
  /** Bytes of the request the socket accepted before it closed. */
  written: number;
}

/**
 * Opens a connection, writes head, then calls feed every intervalMs until the server closes the
 * connection or limitMs passes; resolves with what came back.
 */
function exchange(
  head: string,
  options: { feed?: () => string | Buffer; intervalMs?: number; limitMs?: number } = {},
): Promise<RawExchange> {
  return new Promise((resolve) => {
    const started = performance.now();
    const socket = net.connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    let written = 0;
    let timer: NodeJS.Timeout | undefined;
    const send = (data: string | Buffer) => {
      if (!socket.writable) return;
      written += Buffer.byteLength(data);
      socket.write(data);
    };
    socket.once('connect', () => {
      send(head);
      if (options.feed)
        timer = setInterval(() => send((options.feed as () => string | Buffer)()), options.intervalMs ?? 100);
    });
    const limit = setTimeout(() => socket.destroy(), options.limitMs ?? 10_000);
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', () => {});
    socket.once('close', () => {
      clearInterval(timer);
      clearTimeout(limit);
      resolve({
        received: Buffer.concat(chunks).toString('latin1'),
        closedAfterMs: performance.now() - started,
        written,
      });
    });
  });
}

const statusLine = (received: string) => received.slice(0, received.indexOf('\r\n'));

describe('slow clients', () => {
  test('headers sent one line every 200 ms are cut off with 408 once headersTimeout has passed', async () => {
    const result = await exchange('GET /personen HTTP/1.1\r\nHost: 127.0.0.1\r\n', {
      feed: () => 'X-Slow: 1\r\n',
      intervalMs: 200,
    });
    assert.equal(
      result.received,
      `HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n${security}\r\n`,
    );
    // Node checks the time-out once a second, so the cut comes between one and two time-outs.
    assert.ok(
      result.closedAfterMs >= headersTimeoutMs && result.closedAfterMs < headersTimeoutMs + 1500,
      `${result.closedAfterMs} ms`,
    );
    const log = await waitFor(server.accessLog, (text) => text.includes('" 408 '));
    assert.match(log, /^127\.0\.0\.1 - - \[[^\]]+\] "-" 408 - "-" "-"$/m);
  });

  test('a connection that never sends a byte is closed after headersTimeout too', async () => {
    const result = await exchange('');
    assert.equal(statusLine(result.received), 'HTTP/1.1 408 Request Timeout');
    assert.ok(result.closedAfterMs < headersTimeoutMs + 1500, `${result.closedAfterMs} ms`);
  });

  test('while a slow client is held, everyone else is answered at once', async () => {
    const slow = exchange('GET / HTTP/1.1\r\n', { feed: () => 'X: y\r\n', intervalMs: 300 });
    const started = performance.now();
    const res = await fetch(`${server.origin}/personen.json`);
    assert.equal(res.status, 200);
    assert.ok(performance.now() - started < 500);
    assert.equal(statusLine((await slow).received), 'HTTP/1.1 408 Request Timeout');
  });
});

describe('oversized input', () => {
  const formHead = (length: number) =>
    `POST /login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: ${length}\r\n\r\n`;
  const megabyte = Buffer.alloc(1024 * 1024, 'a');

  test('a declared body over 1 MiB is 413 and the connection closes long before the body could arrive', async () => {
    const declared = 100 * 1024 * 1024;
    const result = await exchange(formHead(declared), { feed: () => megabyte, intervalMs: 20, limitMs: 5000 });
    assert.equal(statusLine(result.received), 'HTTP/1.1 413 Payload Too Large');
    assert.match(result.received, /\r\nconnection: close\r\n/i);
    assert.ok(result.written < 16 * 1024 * 1024, `${result.written} bytes were taken of ${declared}`);
  });

  test('a declared body over 1 MiB is 413 even where nothing would read it', async () => {
    const res = await rawRequest(server.origin, '/personen.json', {
      headers: { 'content-length': String(2 * 1024 * 1024) },
    }).catch((err: Error) => err);
    // The server answers before the body is sent and closes; the client sees the 413 or the close.
    if (res instanceof Error) assert.match(res.message, /socket hang up|ECONNRESET|EPIPE/);
    else assert.equal(res.status, 413);
    const log = await waitFor(server.accessLog, (text) => text.includes('"GET /personen.json HTTP/1.1" 413'));
    assert.match(log, /"GET \/personen\.json HTTP\/1\.1" 413 \d+ "-" "-"/);
  });

  test('a chunked body is cut off with 413 once it passes 1 MiB', async () => {
    const head =
      'POST /login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\nTransfer-Encoding: chunked\r\n\r\n';
    const chunk = `${(64 * 1024).toString(16)}\r\n${'a'.repeat(64 * 1024)}\r\n`;
    const result = await exchange(head, { feed: () => chunk, intervalMs: 5, limitMs: 8000 });
    assert.equal(statusLine(result.received), 'HTTP/1.1 413 Payload Too Large');
    assert.ok(result.written < 8 * 1024 * 1024, `${result.written} bytes were taken`);
  });

  test('headers over 16 KiB are 431, logged with the request line', async () => {
    const result = await exchange(
      `GET /personen?big=1 HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ${'b'.repeat(20_000)}\r\n\r\n`,
    );
    assert.equal(
      result.received,
      `HTTP/1.1 431 Request Header Fields Too Large\r\nConnection: close\r\nContent-Length: 0\r\n${security}\r\n`,
    );
    const log = await waitFor(server.accessLog, (text) => text.includes('big=1'));
    assert.match(log, /"GET \/personen\?big=1 HTTP\/1\.1" 431 - "-" "-"/);
  });

  test('an address over 8192 characters is 414, also one too long for the parser', async () => {
    assert.equal((await rawRequest(server.origin, `/search?query=${'a'.repeat(9000)}`)).status, 414);
    const result = await exchange(`GET /search?query=${'q'.repeat(40_000)} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
    assert.equal(statusLine(result.received), 'HTTP/1.1 414 URI Too Long');
    // The log keeps the first 8192 bytes of such a line.
    const log = await waitFor(server.accessLog, (text) => text.includes('" 414 - '));
    assert.match(log, new RegExp(`"GET /search\\?query=q{8174}" 414 - "-" "-"`));
  });
});

describe('idle keep-alive connections', () => {
  test('a thousand idle keep-alive connections do not starve other clients', async () => {
    const idle: net.Socket[] = [];
    try {
      // Each connection makes one request, keeps the connection open and then says nothing.
      await Promise.all(
        Array.from(
          { length: 1000 },
          () =>
            new Promise<void>((resolve, reject) => {
              const socket = net.connect(port, '127.0.0.1', () =>
                socket.write('GET /css/site.css HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n'),
              );
              idle.push(socket);
              socket.once('data', () => resolve());
              socket.once('error', reject);
            }),
        ),
      );
      assert.equal(idle.filter((s) => !s.destroyed).length, 1000);
      const latencies: number[] = [];
      for (let round = 0; round < 10; round++) {
        await Promise.all(
          Array.from({ length: 20 }, async () => {
            const started = performance.now();
            const res = await fetch(`${server.origin}/person/max-muster.json`);
            assert.equal(res.status, 200);
            await res.arrayBuffer();
            latencies.push(performance.now() - started);
          }),
        );
      }
      latencies.sort((a, b) => a - b);
      assert.equal(latencies.length, 200);
      assert.ok((latencies[189] as number) < 1000, `95th percentile ${latencies[189]} ms`);
      // The connections were really held open while the others were served.
      assert.ok(idle.filter((s) => !s.destroyed).length >= 990);
    } finally {
      for (const socket of idle) socket.destroy();
    }
  });
});
