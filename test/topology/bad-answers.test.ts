// One client's bad requests through the shipped nginx site must not cost anyone else an answer
// (docs/operations.md, Behind a reverse proxy). nginx counts an answer whose headers do not fit
// its 4 KB buffer as a failure of the instance; with max_fails=1 four anonymous requests every
// 9 s took both instances out, and 70% of everyone's requests were 502. Here the searches that
// made such answers go through nginx beside ordinary reads, and then, with nginx's buffer made
// smaller than some answers, answers it cannot read: only those requests may fail.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { after, before, describe, test, type TestContext } from 'node:test';
import type { TestDb } from '../helpers.ts';
import { backend, missingTool, openTestDb } from '../helpers.ts';
import type { Program } from '../program.ts';
import { startProgram } from '../program.ts';
import type { Front } from './front.ts';
import { freePort, makeCertificate, proxyAddress, startNginx } from './front.ts';

const skip =
  backend !== 'postgres'
    ? 'two instances on one database need PostgreSQL; run with DATABASE_URL'
    : missingTool('/usr/sbin/nginx', 'nginx');

let dir: string;
let tls: ReturnType<typeof makeCertificate>;
let ca: string;
let db: TestDb;
const instances: Program[] = [];
const fronts: Front[] = [];
/** The TLS ports of the two nginx fronts, chosen before the instances start. */
const nginxPorts: number[] = [];

before(async () => {
  if (skip) return;
  dir = mkdtempSync(path.join(os.tmpdir(), 'portfolio-bad-answers-'));
  tls = makeCertificate(dir);
  ca = readFileSync(tls.cert, 'utf8');
  db = await openTestDb();
  nginxPorts.push(await freePort(), await freePort());
  // The Host nginx passes on names its own port, which the instances serve only when it is allowed.
  const allowed = ['localhost', '127.0.0.1', ...nginxPorts.map((port) => `localhost:${port}`)].join(',');
  for (let i = 0; i < 2; i++)
    instances.push(
      await startProgram({
        DATABASE_URL: db.url as string,
        WEB_CONCURRENCY: '2',
        TRUSTED_PROXIES: proxyAddress,
        ALLOWED_HOSTS: allowed,
      }),
    );
});

after(async () => {
  for (const front of fronts) await front.stop();
  for (const program of instances) program.remove();
  await db?.drop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

interface Answer {
  target: string;
  /** The status, or the socket error's code. */
  status: number | string;
  /** The status line and headers the client got from nginx, with the blank line after them. */
  headerBytes: number;
}

/** GET through the front; agent undefined: a connection of its own, as a new client opens one. */
function get(origin: string, target: string, agent?: https.Agent): Promise<Answer> {
  return new Promise((resolve) => {
    const req = https.get(
      `${origin}${target}`,
      { agent: agent ?? false, ca, servername: 'localhost', family: 4, timeout: 15_000 },
      (res) => {
        const fields = res.rawHeaders.reduce((sum, text) => sum + text.length, 0) + (res.rawHeaders.length / 2) * 4;
        const headerBytes = `HTTP/${res.httpVersion} ${res.statusCode} ${res.statusMessage}\r\n`.length + fields + 2;
        res.resume();
        res.on('end', () => resolve({ target, status: res.statusCode ?? 0, headerBytes }));
        res.on('error', (err: NodeJS.ErrnoException) =>
          resolve({ target, status: err.code ?? err.message, headerBytes: 0 }),
        );
      },
    );
    req.on('timeout', () => req.destroy(Object.assign(new Error('timed out'), { code: 'TIMEOUT' })));
    req.on('error', (err: NodeJS.ErrnoException) =>
      resolve({ target, status: err.code ?? err.message, headerBytes: 0 }),
    );
  });
}

const pick = <T>(items: readonly T[]): T => items[Math.floor(Math.random() * items.length)] as T;
const searchOf = (word: string) =>
  `/search?query=any,contains,${word}&tab=default_tab&search_scope=default_scope&vid=portfolio`;
const facets = (count: number) =>
  Array.from({ length: count }, (_, i) => `&facet=creator,exclude,${String(i).repeat(400)}`).join('');

/**
 * Ordinary reads from four kept-alive clients until the time is up, and every 9 s the four
 * requests of a hostile client, each on a connection of its own (so that both nginx workers
 * get some). Returns both sides' answers.
 */
async function drive(
  origin: string,
  options: { seconds: number; reads: () => string; hostile: readonly string[] },
): Promise<{ others: Answer[]; hostile: Answer[] }> {
  const agent = new https.Agent({ keepAlive: true, maxSockets: 4 });
  const start = performance.now();
  const end = start + options.seconds * 1000;
  const others: Answer[] = [];
  const hostile: Answer[] = [];
  const client = async () => {
    while (performance.now() < end && others.length < 50_000) others.push(await get(origin, options.reads(), agent));
  };
  const attacker = async () => {
    for (let at = 0; at < options.seconds; at += 9) {
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, start + at * 1000 - performance.now())));
      hostile.push(...(await Promise.all(options.hostile.map((target) => get(origin, target)))));
    }
  };
  await Promise.all([client(), client(), client(), client(), attacker()]);
  agent.destroy();
  return { others, hostile };
}

function report(t: TestContext, name: string, run: { others: Answer[]; hostile: Answer[] }): void {
  const share = (answers: Answer[], status: number) =>
    `${answers.filter((a) => a.status === status).length} of ${answers.length}`;
  t.diagnostic(
    `${name}: others' 502s ${share(run.others, 502)}; the hostile requests' 502s ${share(run.hostile, 502)}`,
  );
  t.diagnostic(
    `${name}: the largest header block ${Math.max(...[...run.others, ...run.hostile].map((a) => a.headerBytes))} bytes`,
  );
}

// Three bursts of the hostile client, at 0, 9 and 18 s.
const seconds = 20;
const words = ['muster', 'meer', 'haus', 'deich', 'nebel'];

describe('the shipped nginx site in front of two instances', { skip }, () => {
  test('hostile search URLs cost nobody else an answer, and every header block stays under 4 KB', async (t) => {
    const [a, b] = instances as [Program, Program];
    const nginx = await startNginx(mkdtempSync(path.join(dir, 'kit-')), tls, nginxPorts[0] as number, [
      Number(new URL(a.origin).port),
      Number(new URL(b.origin).port),
    ]);
    fronts.push(nginx);
    // Searches whose header blocks were up to 31 KB, and a redirect to an address of 8 KB.
    const hostile = [
      searchOf('haus') + facets(3),
      searchOf('haus') + facets(4),
      searchOf('haus') + facets(10),
      `/personen/?x=${'a'.repeat(7900)}`,
    ];
    const reads = () =>
      pick([
        `/person/${1 + Math.floor(Math.random() * 14)}`,
        `/werk/${1 + Math.floor(Math.random() * 70)}.json`,
        searchOf(pick(words)),
      ]);
    const run = await drive(nginx.origin, { seconds, reads, hostile });
    report(t, 'hostile searches', run);

    assert.deepEqual(run.others.filter((answer) => answer.status !== 200).slice(0, 5), [], nginx.log().slice(-3000));
    assert.ok(run.others.length > 100, `${run.others.length} ordinary requests`);
    // Answered by the instances (a long search, 400 for those over the bounds, 414), never by nginx.
    assert.deepEqual(
      run.hostile.map((answer) => answer.status),
      [0, 9, 18].flatMap(() => [200, 400, 400, 414]),
    );
    for (const answer of [...run.others, ...run.hostile])
      assert.ok(answer.headerBytes < 4096, `${answer.target.slice(0, 80)}: ${answer.headerBytes} bytes`);
  });

  test('an answer nginx cannot read fails that request only, not the instance for everybody', async (t) => {
    const [a, b] = instances as [Program, Program];
    // A buffer of 1.5 KB: a person's or a work's headers fit, a search with long facet values' do not.
    const nginx = await startNginx(
      mkdtempSync(path.join(dir, 'small-buffer-')),
      tls,
      nginxPorts[1] as number,
      [Number(new URL(a.origin).port), Number(new URL(b.origin).port)],
      [['proxy_read_timeout 60s;', 'proxy_read_timeout 60s;\n        proxy_buffer_size 1536;']],
    );
    fronts.push(nginx);
    const reads = () =>
      pick([`/person/${1 + Math.floor(Math.random() * 14)}`, `/werk/${1 + Math.floor(Math.random() * 70)}.json`]);
    const run = await drive(nginx.origin, {
      seconds,
      reads,
      hostile: Array.from({ length: 4 }, () => searchOf('haus') + facets(3)),
    });
    report(t, 'answers too big for the buffer', run);

    // Each of those answers was one nginx could not read, and it said so.
    assert.deepEqual([...new Set(run.hostile.map((answer) => answer.status))], [502]);
    assert.match(nginx.log(), /upstream sent too big header/);
    // Nobody else's request failed, and no instance was ever taken out.
    assert.deepEqual(run.others.filter((answer) => answer.status !== 200).slice(0, 5), [], nginx.log().slice(-3000));
    assert.ok(run.others.length > 100, `${run.others.length} ordinary requests`);
    assert.doesNotMatch(nginx.log(), /no live upstreams/);
  });
});
