// Proxy rules (flag P) in front of a real legacy site: PHP's built-in server with a few .php
// pages. Requests pass through with method, body and headers; a dead, resetting or slow
// upstream answers 502 or 504 with an error-log line, and our own pages keep working.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Json, TestServer } from '../helpers.ts';
import { missingTool, rawRequest, startTestServer, waitFor } from '../helpers.ts';

const legacyPages: Record<string, string> = {
  'echo.php': `<?php
header('Content-Type: application/json');
echo json_encode([
  'method' => $_SERVER['REQUEST_METHOD'],
  'uri' => $_SERVER['REQUEST_URI'],
  'get' => $_GET,
  'post' => $_POST,
  'host' => $_SERVER['HTTP_HOST'],
  'forwardedFor' => $_SERVER['HTTP_X_FORWARDED_FOR'] ?? null,
  'forwardedHost' => $_SERVER['HTTP_X_FORWARDED_HOST'] ?? null,
  'forwardedProto' => $_SERVER['HTTP_X_FORWARDED_PROTO'] ?? null,
  'cookie' => $_SERVER['HTTP_COOKIE'] ?? null,
]);
`,
  'moved.php': `<?php
header('Location: /echo.php?from=moved', true, 302);
`,
  'upload.php': `<?php
$body = file_get_contents('php://input');
header('Content-Type: text/plain');
echo strlen($body) . ' ' . sha1($body);
`,
  'download.php': `<?php
header('Content-Type: text/plain');
for ($i = 0; $i < 2000; $i++) { echo str_repeat(chr(97 + $i % 26), 1023), "\\n"; }
`,
  'slow.php': `<?php
sleep(3);
echo 'late';
`,
  'about.html': '<!DOCTYPE html><title>About</title><p>The old about page.</p>\n',
};

let dir: string;
let php: ChildProcess;
let phpPort: number;
let resetter: net.Server;
let server: TestServer;

const skip = missingTool('/usr/bin/php', 'php-cli');

before(async () => {
  if (skip) return;
  dir = mkdtempSync(path.join(os.tmpdir(), 'portfolio-legacy-'));
  for (const [name, text] of Object.entries(legacyPages)) writeFileSync(path.join(dir, name), text);
  phpPort = await findFreePort();
  // Several PHP workers, so the slow page does not hold up the others; they share a process
  // group, so stopPhp() stops them all.
  php = spawn('php', ['-S', `127.0.0.1:${phpPort}`, '-t', dir], {
    env: { ...process.env, PHP_CLI_SERVER_WORKERS: '4' },
    stdio: 'ignore',
    detached: true,
  });
  await waitForPort(phpPort);
  // An upstream that accepts and hangs up at once: a reset, not a refusal.
  resetter = net.createServer((socket) => socket.resetAndDestroy());
  await new Promise<void>((resolve) => resetter.listen(0, '127.0.0.1', resolve));
  const resetPort = (resetter.address() as net.AddressInfo).port;
  writeFileSync(
    path.join(dir, 'rules.json'),
    JSON.stringify({
      rules: [
        { pattern: '^/personen$', substitution: '/personen.php', flags: ['L'] },
        { pattern: '^/(index|personen|person|werk|search)\\.php$', substitution: '-', flags: ['L'] },
        { pattern: '^/reset/(.*)$', substitution: `http://127.0.0.1:${resetPort}/$1`, flags: ['P'] },
        { pattern: '^/(?!(?:css|img)/)(.+)$', substitution: `http://127.0.0.1:${phpPort}/$1`, flags: ['P'] },
      ],
    }),
  );
  server = await startTestServer({ REWRITE_RULES: path.join(dir, 'rules.json'), PROXY_TIMEOUT_MS: '700' });
});
after(async () => {
  if (skip) return;
  await server.close();
  await stopPhp();
  resetter.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('a proxy rule in front of the old PHP site', { skip }, () => {
  test('passes a GET with its query string through, with X-Forwarded-For, -Host and -Proto', async () => {
    const res = await rawRequest(server.origin, '/echo.php?name=M%C3%BCller&page=2', {
      headers: { cookie: 'PHPSESSID=abc' },
    });
    assert.equal(res.status, 200);
    assert.equal(res.headers['content-type'], 'application/json');
    const port = new URL(server.origin).port;
    assert.deepEqual(JSON.parse(res.body) as Json, {
      method: 'GET',
      uri: '/echo.php?name=M%C3%BCller&page=2',
      get: { name: 'Müller', page: '2' },
      post: [],
      host: `127.0.0.1:${port}`,
      forwardedFor: '127.0.0.1',
      forwardedHost: `127.0.0.1:${port}`,
      forwardedProto: 'http',
      cookie: 'PHPSESSID=abc',
    });
  });

  test('passes a POST with a form body through', async () => {
    const res = await fetch(`${server.origin}/echo.php?step=2`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'vorname=J%C3%BCrgen&nachname=M%C3%BCller&werke%5B%5D=7&werke%5B%5D=10',
    });
    assert.equal(res.status, 200);
    const echo = (await res.json()) as Json;
    assert.equal(echo.method, 'POST');
    assert.deepEqual(echo.get, { step: '2' });
    assert.deepEqual(echo.post, { vorname: 'Jürgen', nachname: 'Müller', werke: ['7', '10'] });
  });

  test("passes the upstream's redirect through unchanged", async () => {
    const res = await rawRequest(server.origin, '/moved.php');
    assert.equal(res.status, 302);
    assert.equal(res.headers.location, '/echo.php?from=moved');
  });

  test('keeps a representation-like suffix: /about.html reaches the old site as /about.html', async () => {
    const res = await rawRequest(server.origin, '/about.html');
    assert.equal(res.status, 200);
    assert.equal(res.body, legacyPages['about.html']);
  });

  test('streams a 3 MiB upload and a 2 MB download in both directions', async () => {
    const upload = Buffer.alloc(3 * 1024 * 1024, 'xyz');
    const up = await fetch(`${server.origin}/upload.php`, {
      method: 'POST',
      headers: { 'content-type': 'application/octet-stream' },
      body: upload,
    });
    assert.equal(await up.text(), `${upload.length} ${createHash('sha1').update(upload).digest('hex')}`);
    const down = await rawRequest(server.origin, '/download.php');
    assert.equal(down.status, 200);
    assert.equal(down.body.length, 2000 * 1024);
    assert.equal(down.body.slice(1020, 1026), 'aaa\nbb');
  });

  test('writes an access-log line with the bytes passed on', async () => {
    const res = await rawRequest(server.origin, '/echo.php?log=1', { headers: { 'user-agent': 'proxy-test' } });
    const log = await waitFor(server.accessLog, (text) => text.includes('/echo.php?log=1'));
    const line = log.split('\n').find((l) => l.includes('/echo.php?log=1'));
    assert.match(
      line ?? '',
      new RegExp(
        `^127\\.0\\.0\\.1 - - \\[[^\\]]+\\] "GET /echo\\.php\\?log=1 HTTP/1\\.1" 200 ${Buffer.byteLength(res.body)} "-" "proxy-test"$`,
      ),
    );
  });

  test('leaves our own pages and files to us', async () => {
    const own = await rawRequest(server.origin, '/personen.json');
    assert.equal(own.status, 200);
    assert.equal(own.headers['content-type'], 'application/json; charset=utf-8');
    const script = await rawRequest(server.origin, '/personen.php', { headers: { accept: 'application/json' } });
    assert.equal(script.status, 200);
    assert.equal(script.headers['content-type'], 'application/json; charset=utf-8');
    const css = await rawRequest(server.origin, '/css/site.css');
    assert.equal(css.status, 200);
    assert.equal(css.headers['content-type'], 'text/css; charset=utf-8');
  });
});

describe('a failing upstream', { skip }, () => {
  test('that resets the connection answers 502 and writes an error-log line', async () => {
    const res = await rawRequest(server.origin, '/reset/page.php', { headers: { accept: 'application/json' } });
    assert.equal(res.status, 502);
    assert.equal(res.headers['content-type'], 'application/problem+json; charset=utf-8');
    assert.deepEqual(JSON.parse(res.body), {
      type: 'about:blank',
      title: 'Bad Gateway',
      status: 502,
      detail: 'The server behind this address is not reachable at the moment; please try again later.',
    });
    const log = await waitFor(server.errorLog, (text) => text.includes('/page.php'));
    assert.match(
      log,
      /\[app:error\] \[pid \d+\] \[client 127\.0\.0\.1:\d+\] Proxy error: http:\/\/127\.0\.0\.1:\d+ closed the connection for http:\/\/127\.0\.0\.1:\d+\/page\.php \(ECONNRESET\)\n/,
    );
  });

  test('that is too slow answers 504 after PROXY_TIMEOUT_MS and writes an error-log line', async () => {
    const started = Date.now();
    const res = await rawRequest(server.origin, '/slow.php');
    const waited = Date.now() - started;
    assert.equal(res.status, 504);
    assert.ok(waited >= 650 && waited < 2500, `waited ${waited} ms`);
    const log = await waitFor(server.errorLog, (text) => text.includes('slow.php'));
    assert.ok(
      log.includes(
        `Proxy error: http://127.0.0.1:${phpPort} did not answer http://127.0.0.1:${phpPort}/slow.php within 700 ms (PROXY_TIMEOUT_MS)`,
      ),
      log,
    );
  });

  test('that is stopped answers 502, and the server keeps serving its own pages', async () => {
    await stopPhp();
    const res = await rawRequest(server.origin, '/echo.php');
    assert.equal(res.status, 502);
    assert.equal(res.headers['content-type'], 'text/html; charset=utf-8');
    const log = await waitFor(server.errorLog, (text) => text.includes('refused the connection'));
    assert.ok(
      log.includes(
        `Proxy error: http://127.0.0.1:${phpPort} refused the connection for http://127.0.0.1:${phpPort}/echo.php (ECONNREFUSED)`,
      ),
      log,
    );
    const own = await rawRequest(server.origin, '/personen');
    assert.equal(own.status, 200);
  });
});

async function stopPhp(): Promise<void> {
  if (php.exitCode !== null || php.signalCode !== null) return;
  const exited = new Promise((resolve) => php.once('exit', resolve));
  process.kill(-(php.pid as number), 'SIGTERM');
  await exited;
  // The PHP workers close the listening socket a moment after their parent has gone.
  await waitForPort(phpPort, false);
}

async function findFreePort(): Promise<number> {
  const probe = net.createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as net.AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

async function waitForPort(port: number, listening = true): Promise<void> {
  for (let attempt = 0; attempt < 100; attempt++) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = net.connect(port, '127.0.0.1', () => {
        socket.end();
        resolve(true);
      });
      socket.on('error', () => resolve(false));
    });
    if (open === listening) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(
    listening
      ? `php -S did not listen on port ${port} within 5 s; is php-cli installed?`
      : `php -S still listens on port ${port} after 5 s`,
  );
}
