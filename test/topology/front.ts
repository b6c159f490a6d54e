// Test support for the topology tests: a self-signed certificate, nginx and HAProxy started from
// the configs in deploy/ (only addresses and paths changed), and a load generator that drives the
// mixed traffic of a library catalogue's users through them over TLS, each request naming itself
// in User-Agent.
//
// Two layers of proxies, as behind a CDN: the load generator (on 127.0.0.1) plays the outer one
// and says in X-Forwarded-For which client each request comes from; nginx or HAProxy believe
// 127.0.0.1 only, and reach the instances from 127.0.0.2 (proxyAddress), the one address the
// instances trust. Some requests also carry what a forging client would send (an address of its
// choice in front, Forwarded, X-Forwarded-Host): it must change nothing.
import assert from 'node:assert/strict';
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import net from 'node:net';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { root } from '../helpers.ts';

/** A key and a self-signed certificate for localhost in dir; the PEM of both for HAProxy. */
export function makeCertificate(dir: string): { cert: string; key: string; pem: string } {
  const cert = path.join(dir, 'site.crt');
  const key = path.join(dir, 'site.key');
  const pem = path.join(dir, 'site.pem');
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-days',
      '1',
      '-subj',
      '/CN=localhost',
      '-addext',
      'subjectAltName=DNS:localhost',
      '-keyout',
      key,
      '-out',
      cert,
    ],
    { stdio: 'ignore' },
  );
  writeFileSync(pem, readFileSync(cert, 'utf8') + readFileSync(key, 'utf8'));
  return { cert, key, pem };
}

/** A loopback port nobody listens on right now. */
export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** text with each [from, to] replaced once; a from that is not there fails, so a changed config is noticed. */
export function edit(text: string, changes: [string | RegExp, string][]): string {
  let result = text;
  for (const [from, to] of changes) {
    const before = result;
    result = result.replace(from, to);
    assert.notEqual(result, before, `the shipped config no longer has ${String(from)}`);
  }
  return result;
}

/** The address nginx and HAProxy reach the instances from: TRUSTED_PROXIES of the instances. */
export const proxyAddress = '127.0.0.2';

export interface Front {
  /** https://localhost:<port> */
  origin: string;
  stop: () => Promise<void>;
  log: () => string;
}

/**
 * deploy/nginx/portfolio.conf on loopback ports (TLS on port), in front of the given instance
 * ports; changes are further edits of the site a test makes (each must apply, as edit() checks).
 */
export async function startNginx(
  dir: string,
  tls: { cert: string; key: string },
  port: number,
  upstreams: [number, number],
  changes: [string | RegExp, string][] = [],
): Promise<Front> {
  const plain = await freePort();
  const site = edit(readFileSync(path.join(root, 'deploy/nginx/portfolio.conf'), 'utf8'), [
    ['server 127.0.0.1:8081 ', `server 127.0.0.1:${upstreams[0]} `],
    ['server 127.0.0.1:8082 ', `server 127.0.0.1:${upstreams[1]} `],
    [/listen 80;/, `listen 127.0.0.1:${plain};`],
    [/listen \[::\]:80;/, ''],
    [/listen 443 ssl http2;/, `listen 127.0.0.1:${port} ssl http2;`],
    [/listen \[::\]:443 ssl http2;/, ''],
    ['/etc/ssl/certs/example.org.pem', tls.cert],
    ['/etc/ssl/private/example.org.key', tls.key],
    ['proxy_pass http://portfolio;', `proxy_pass http://portfolio;\n        proxy_bind ${proxyAddress};`],
    ...changes,
  ]);
  writeFileSync(path.join(dir, 'site.conf'), site);
  writeFileSync(
    path.join(dir, 'nginx.conf'),
    `worker_processes 2;
pid ${dir}/nginx.pid;
error_log ${dir}/nginx-error.log warn;
events { worker_connections 1024; }
http {
  # The outer proxy: the load generator.
  set_real_ip_from 127.0.0.1;
  real_ip_header X-Forwarded-For;
  real_ip_recursive on;
  log_format upstreams '$remote_addr "$request" $status upstream=$upstream_addr/$upstream_status';
  access_log ${dir}/nginx-access.log upstreams;
  client_body_temp_path ${dir}/body; proxy_temp_path ${dir}/proxy; fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi; scgi_temp_path ${dir}/scgi;
  include ${dir}/site.conf;
}
`,
  );
  const child = spawn('/usr/sbin/nginx', ['-p', dir, '-c', path.join(dir, 'nginx.conf'), '-g', 'daemon off;'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return started(
    child,
    port,
    () => readFile(path.join(dir, 'nginx-access.log')) + readFile(path.join(dir, 'nginx-error.log')),
  );
}

/** deploy/haproxy/haproxy.cfg on loopback ports (TLS on port), in front of the given instance ports. */
export async function startHaproxy(
  dir: string,
  tls: { pem: string },
  port: number,
  upstreams: [number, number],
): Promise<Front> {
  const plain = await freePort();
  const config = edit(readFileSync(path.join(root, 'deploy/haproxy/haproxy.cfg'), 'utf8'), [
    ['bind :80\n', `bind 127.0.0.1:${plain}\n`],
    ['bind :443 ssl crt /etc/haproxy/certs/example.org.pem', `bind 127.0.0.1:${port} ssl crt ${tls.pem}`],
    ['server app1 127.0.0.1:8081', `server app1 127.0.0.1:${upstreams[0]}`],
    ['server app2 127.0.0.1:8082', `server app2 127.0.0.1:${upstreams[1]}`],
    // The outer proxy (the load generator) names the client.
    [
      'default_backend portfolio',
      'http-request set-src hdr_ip(x-forwarded-for,-1) if { src 127.0.0.1 }\n    default_backend portfolio',
    ],
    ['balance roundrobin', `balance roundrobin\n    source ${proxyAddress}`],
  ]);
  const file = path.join(dir, 'haproxy.cfg');
  writeFileSync(file, config);
  const child = spawn('/usr/sbin/haproxy', ['-db', '-f', file], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  return started(child, port, () => output);
}

async function started(child: ChildProcess, port: number, log: () => string): Promise<Front> {
  const exited = new Promise((resolve) => child.once('exit', resolve));
  for (let i = 0; i < 100 && child.exitCode === null && !(await canConnect(port)); i++)
    await new Promise((resolve) => setTimeout(resolve, 100));
  if (child.exitCode !== null || !(await canConnect(port))) throw new Error(`the front did not start:\n${log()}`);
  return {
    origin: `https://localhost:${port}`,
    log,
    stop: async () => {
      child.kill('SIGTERM');
      await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 5000))]);
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    },
  };
}

/** Whether something accepts connections on 127.0.0.1:port. */
export function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1', () => {
      socket.destroy();
      resolve(true);
    });
    socket.on('error', () => resolve(false));
  });
}

function readFile(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}

export type Kind = 'read' | 'search' | 'login' | 'change';

export interface Outcome {
  id: string;
  kind: Kind;
  method: string;
  path: string;
  /** The address in X-Forwarded-For. */
  claimed: string;
  /** The status, or the socket error's code. */
  status: number | string;
  ok: boolean;
  start: number;
  end: number;
}

interface Session {
  cookie: string;
  csrf: string;
  user: 'bibliothek' | 'mmuster';
  secure: boolean;
}

const words = [
  'muster',
  'meer',
  'haus',
  'zitronen',
  'müller',
  'schäfer',
  'liegende',
  'deich',
  'foto',
  'stillleben',
  'xq',
];
const passwords = { bibliothek: 'bibliothek-demo', mmuster: 'mmuster-demo' } as const;
const pick = <T>(items: readonly T[]): T => items[Math.floor(Math.random() * items.length)] as T;

/** A client address from the documentation ranges, IPv4 or IPv6. */
function claimAddress(): string {
  const n = 1 + Math.floor(Math.random() * 250);
  return pick([`198.51.100.${n}`, `203.0.113.${n}`, `2001:db8::${n.toString(16)}`]);
}

/**
 * Mixed traffic through front for durationMs (or until maxRequests): public reads in all three
 * formats, searches, logins through the form (some with a wrong password) and changes made in a
 * logged-in session (a new work, then a new title for it). Returns every request's outcome.
 */
export async function driveTraffic(
  origin: string,
  ca: string,
  options: { clients: number; durationMs: number; maxRequests: number },
): Promise<{ outcomes: Outcome[]; sessions: Session[] }> {
  const agent = new https.Agent({ keepAlive: true, ca, maxSockets: options.clients * 2 });
  const outcomes: Outcome[] = [];
  const sessions: Session[] = [];
  const started = performance.now();
  // Ids of this run: the instances' logs also hold the lines of runs before.
  const run = randomBytes(3).toString('hex');
  let next = 0;
  const host = new URL(origin).host;

  const send = (kind: Kind, method: string, target: string, headers: Record<string, string> = {}, body?: string) =>
    new Promise<{ outcome: Outcome; body: string; headers: Record<string, string | string[] | undefined> }>(
      (resolve) => {
        const id = `${run}-${next++}`;
        const claimed = claimAddress();
        const start = performance.now();
        const finish = (
          status: number | string,
          text: string,
          responseHeaders: Record<string, string | string[] | undefined>,
        ) => {
          const outcome = {
            id,
            kind,
            method,
            path: target,
            claimed,
            status,
            ok: typeof status === 'number' && status < 500,
            start,
            end: performance.now(),
          };
          outcomes.push(outcome);
          resolve({ outcome, body: text, headers: responseHeaders });
        };
        // One request in ten forges: what the client sent comes before what the outer proxy adds.
        const forged =
          Math.random() < 0.1
            ? {
                'x-forwarded-for': `${proxyAddress}, ${claimed}`,
                forwarded: `for=${proxyAddress}`,
                'x-forwarded-host': 'evil.example',
              }
            : { 'x-forwarded-for': claimed };
        const req = https.request(
          `${origin}${target}`,
          {
            // localhost is the site's name; the fronts listen on 127.0.0.1 only.
            method,
            agent,
            servername: 'localhost',
            family: 4,
            timeout: 15_000,
            headers: { ...forged, 'user-agent': `topology/${id}`, host, ...headers },
          },
          (res) => {
            let text = '';
            res.setEncoding('utf8');
            res.on('data', (chunk: string) => {
              text += chunk;
            });
            res.on('end', () => finish(res.statusCode ?? 0, text, res.headers));
            res.on('error', (err: NodeJS.ErrnoException) => finish(err.code ?? err.message, '', {}));
          },
        );
        req.on('timeout', () => req.destroy(Object.assign(new Error('timed out'), { code: 'TIMEOUT' })));
        req.on('error', (err: NodeJS.ErrnoException) => finish(err.code ?? err.message, '', {}));
        req.end(body);
      },
    );

  const read = () => {
    const suffix = pick(['', '', '.json', '.xml']);
    return send(
      'read',
      'GET',
      pick([
        `/person/${1 + Math.floor(Math.random() * 14)}${suffix}`,
        `/werk/${1 + Math.floor(Math.random() * 70)}${suffix}`,
        `/personen${suffix}`,
        `/index${suffix}`,
      ]),
    );
  };
  const search = () =>
    send(
      'search',
      'GET',
      `/search?query=any,contains,${encodeURIComponent(pick(words))}&tab=default_tab&search_scope=default_scope&vid=portfolio&offset=0`,
    );
  const login = async () => {
    const user = pick(['bibliothek', 'mmuster'] as const);
    const form = await send('login', 'GET', '/login');
    const token = /name="csrf_token" value="([^"]+)"/.exec(form.body)?.[1];
    const cookie = String(form.headers['set-cookie'] ?? '').split(';')[0] ?? '';
    if (!token) return;
    const wrong = Math.random() < 0.2;
    const fields = new URLSearchParams({
      username: user,
      password: wrong ? 'not-the-password' : passwords[user],
      csrf_token: token,
    });
    const res = await send(
      'login',
      'POST',
      '/login',
      { cookie, origin, 'content-type': 'application/x-www-form-urlencoded' },
      fields.toString(),
    );
    const setCookie = [res.headers['set-cookie'] ?? []].flat().find((c) => /^(__Host-)?portfolio_session=/.test(c));
    if (wrong || res.outcome.status !== 303 || !setCookie) return;
    const session = setCookie.split(';')[0] as string;
    const page = await send('login', 'GET', new URL(String(res.headers.location ?? '/'), origin).pathname, {
      cookie: session,
    });
    const csrf = /name="csrf_token" value="([^"]+)"/.exec(page.body)?.[1];
    if (csrf) sessions.push({ cookie: session, csrf, user, secure: /;\s*Secure/i.test(setCookie) });
  };
  const change = async () => {
    const session = pick(sessions);
    const headers = {
      cookie: session.cookie,
      'x-csrf-token': session.csrf,
      origin,
      'content-type': 'application/json',
      accept: 'application/json',
    };
    const created = await send(
      'change',
      'POST',
      '/person/max-muster/werke',
      headers,
      JSON.stringify({ titel: `Topologie ${next}`, jahr: 2026 }),
    );
    const location = created.headers.location;
    if (created.outcome.status !== 201 || typeof location !== 'string') return;
    await send(
      'change',
      'PUT',
      new URL(location, origin).pathname,
      headers,
      JSON.stringify({ titel: `Topologie ${next} (neu)`, jahr: 2026, art: 'Test' }),
    );
  };

  const client = async () => {
    while (performance.now() - started < options.durationMs && outcomes.length < options.maxRequests) {
      const roll = Math.random();
      if (roll < 0.015 || sessions.length === 0) await login();
      else if (roll < 0.12) await change();
      else if (roll < 0.32) await search();
      else await read();
    }
  };
  await Promise.all(Array.from({ length: options.clients }, client));
  agent.destroy();
  return { outcomes, sessions };
}

/** The expected status of each kind of request: anything else is a failure of the topology. */
export function unexpected(outcome: Outcome): boolean {
  if (!outcome.ok) return true;
  const status = outcome.status as number;
  if (outcome.kind === 'login') return ![200, 303, 403].includes(status);
  if (outcome.kind === 'change') return ![200, 201].includes(status);
  return status !== 200;
}

/** Percentile of the durations, in ms. */
export function percentile(outcomes: Outcome[], p: number): number {
  const sorted = outcomes.map((o) => o.end - o.start).sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}
