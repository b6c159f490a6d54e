// The process model (lib/http/cluster.ts) on the real program: `npm start` as operators run it.
// With PostgreSQL, WEB_CONCURRENCY=2 workers: a worker killed under load is replaced and only its
// requests in flight fail and no connection is left hanging; SIGHUP reopens the logs in every
// worker; /metrics adds up every worker's; SIGUSR2 replaces the workers under load without a
// failed request. On both backends, SIGTERM lets a slow request finish, /readyz says 503 from
// then on, and the process exits 0; PGlite refuses more than one worker.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import http from 'node:http';
import { readdirSync, readFileSync, readlinkSync, renameSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { after, before, describe, test } from 'node:test';
import { startArguments } from '../../bin/build.ts';
import type { OwnProgram, Program } from '../program.ts';
import { startOwnProgram } from '../program.ts';
import { backend, fixtureEnv, rawRequest, root, waitFor } from '../helpers.ts';

const programEnv = {
  ...fixtureEnv,
  NODE_ENV: 'production',
  PORT: '0',
  HOST: '127.0.0.1',
};
const onPostgres =
  backend === 'postgres' ? {} : { skip: 'WEB_CONCURRENCY > 1 needs PostgreSQL; run with DATABASE_URL' };

let own: OwnProgram;
let running: Program;

before(async () => {
  // DEMO_DATA empty: the configuration's own default, as an operator's start would have it.
  own = await startOwnProgram({ ...programEnv, DEMO_DATA: '', WEB_CONCURRENCY: backend === 'postgres' ? '2' : '1' });
  running = own.program;
});
after(() => own.close());

describe('worker processes', () => {
  test('a worker killed under load is replaced, and only requests in flight on it fail', onPostgres, async () => {
    const [victim] = workerPids(running.output());
    assert.ok(victim, running.output());
    let killedAt = 0;
    let noticedAt = Infinity;
    const outcomes = await runLoad(running.origin, {
      concurrency: 8,
      durationMs: 2500,
      maxRequests: 3000,
      at: 1000,
      action: async () => {
        process.kill(victim, 'SIGKILL');
        killedAt = performance.now();
        // From the primary's log line on, no connection goes to the dead worker any more.
        await waitFor(
          () => running.readLog('error.log'),
          (text) => text.includes(`worker ${victim} died`),
          5000,
        );
        noticedAt = performance.now();
      },
    });
    const failed = outcomes.filter((o) => !o.ok);
    const afterwards = outcomes.filter((o) => o.start > noticedAt);
    assert.ok(outcomes.filter((o) => o.ok && o.end < killedAt).length >= 20, `${outcomes.length} requests`);
    // In flight on the victim: sent before the primary knew it was dead, ended after the kill.
    // A connection being handed to it at that instant is lost with it, so it ends in a time-out.
    for (const o of failed) {
      assert.ok(
        o.start < noticedAt && o.end > killedAt,
        `a request sent ${(o.start - killedAt).toFixed(1)} ms after the kill failed`,
      );
      assert.ok(['ECONNRESET', 'TIMEOUT'].includes(String(o.status)), String(o.status));
    }
    // At most the 8 in flight at the kill, and those sent before the primary knew: a client whose
    // request failed sends its next at once, and it may be handed to the dead worker too.
    const sentMeanwhile = outcomes.filter((o) => o.start > killedAt && o.start < noticedAt).length;
    assert.ok(
      failed.length <= 8 + sentMeanwhile,
      `${failed.length} failed, ${sentMeanwhile} sent between the kill and the primary's notice`,
    );
    assert.ok(afterwards.length >= 20, `${afterwards.length} requests after the primary noticed`);
    assert.deepEqual(
      afterwards.filter((o) => !o.ok),
      [],
    );
    const log = running.readLog('error.log');
    assert.match(
      log,
      new RegExp(
        `\\[app:error\\] \\[pid ${running.child.pid}\\] worker ${victim} died \\(signal SIGKILL\\); started worker (\\d+) in its place\\n`,
      ),
    );
    const replacement = Number(/started worker (\d+) in its place/.exec(log)?.[1]);
    await waitFor(running.output, (text) => workerPids(text).includes(replacement), 10_000);
    assert.deepEqual(workerPids(running.output()).filter((pid) => isAlive(pid)).length, 2);
    // Connections that were on their way to the victim are closed by the primary, not left hanging.
    assert.deepEqual(closeWaitSockets(running.child.pid as number), []);
  });

  test('are forks of the built server with the flags of npm start, as the primary is', onPostgres, async () => {
    const commandLine = (pid: number) =>
      readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean).slice(1);
    const workers = workerPids(running.output()).filter(isAlive);
    assert.equal(workers.length, 2, running.output());
    assert.deepEqual(commandLine(running.child.pid as number), startArguments());
    for (const pid of workers) assert.deepEqual(commandLine(pid), startArguments());
  });

  test('SIGHUP to the primary makes every worker reopen its logs, so logrotate can move them', onPostgres, async () => {
    const moved = path.join(running.logDir, 'error.log.1');
    renameSync(path.join(running.logDir, 'error.log'), moved);
    process.kill(running.child.pid as number, 'SIGHUP');
    await new Promise((resolve) => setTimeout(resolve, 300));
    const before = readFileSync(moved, 'utf8');
    const pids = new Set<number>();
    // Connections go round-robin; the error-log lines of /boom name the worker that served them.
    for (let i = 0; i < 40 && pids.size < 2; i++) {
      await rawRequest(running.origin, `/boom?hup=${i}`, { headers: { connection: 'close' } });
      const fresh = await waitFor(
        () => running.readLog('error.log'),
        (text) => text.includes(`/boom?hup=${i}`) || text.includes('boom.ts'),
      );
      for (const match of fresh.matchAll(/\[pid (\d+)\] \[client [^\]]+\] TypeError/g)) pids.add(Number(match[1]));
    }
    assert.equal(pids.size, 2, `error-log lines came from ${[...pids].join(', ')}`);
    for (const pid of pids) assert.ok(workerPids(running.output()).includes(pid), `pid ${pid} is a worker`);
    assert.equal(readFileSync(moved, 'utf8'), before, 'nothing more was written to the moved file');
  });
});

describe('the metrics of worker processes', () => {
  test("are every worker's added up, whichever worker is asked", onPostgres, async () => {
    const before = await answeredSlow();
    // New connections go to the workers in turn.
    for (let i = 0; i < 10; i++)
      assert.equal(
        (await rawRequest(running.origin, '/slow.json?ms=1', { headers: { connection: 'close' } })).status,
        200,
      );
    assert.equal(await answeredSlow(), before + 10);
  });
});

describe('a rolling reload (SIGUSR2, npm run reload)', () => {
  test(
    'replaces every worker under load without a failed request, on new and kept-alive connections, and keeps their counts',
    onPostgres,
    async () => {
      const old = workerPids(running.output()).filter(isAlive);
      assert.equal(old.length, 2);
      const before = await answeredSlow();
      const reload = spawn(process.execPath, ['--import', 'tsx', 'bin/reload.ts'], {
        cwd: root,
        env: { ...process.env, LOG_DIR: running.logDir, PID_FILE: '' },
      });
      // PID_FILE='' turns the pid file off: the reload says so and exits 2.
      assert.equal(await new Promise((resolve) => reload.once('exit', resolve)), 2);
      let reloadExit: unknown = null;
      const load = (keepAlive: boolean) =>
        runLoad(running.origin, {
          concurrency: 4,
          durationMs: 4000,
          maxRequests: 4000,
          at: 500,
          keepAlive,
          action: async () => {
            if (keepAlive) return;
            const child = spawn(process.execPath, ['--import', 'tsx', 'bin/reload.ts'], {
              cwd: root,
              env: { ...process.env, LOG_DIR: running.logDir },
            });
            reloadExit = await new Promise((resolve) => child.once('exit', resolve));
          },
        });
      const [fresh, kept] = await Promise.all([load(false), load(true)]);
      assert.equal(reloadExit, 0);
      const log = await waitFor(
        () => running.readLog('error.log'),
        (text) => /reloaded: workers/.test(text),
        10_000,
      );
      assert.deepEqual(
        fresh.filter((o) => !o.ok),
        [],
      );
      assert.deepEqual(
        kept.filter((o) => !o.ok),
        [],
      );
      assert.ok(fresh.length >= 50 && kept.length >= 50, `${fresh.length} and ${kept.length} requests`);
      assert.match(log, /\[app:notice\] \[pid \d+\] reloading: replacing 2 workers one after another\n/);
      // The old workers finish and exit; exactly two new ones serve.
      await waitFor(
        () => old.filter(isAlive),
        (alive) => alive.length === 0,
        15_000,
      );
      const serving = workerPids(running.output()).filter(isAlive);
      assert.equal(serving.length, 2, `workers ${serving.join(', ')} after ${old.join(', ')}`);
      assert.ok(serving.every((pid) => !old.includes(pid)));
      assert.deepEqual(closeWaitSockets(running.child.pid as number), []);
      // Every request answered counts, those of the old workers too: the sums never fall.
      assert.equal(await answeredSlow(), before + fresh.length + kept.length);
    },
  );

  test('a worker that dies during a reload is replaced once, by the reload', onPostgres, async () => {
    const old = workerPids(running.output()).filter(isAlive);
    const reloads = () => (running.readLog('error.log').match(/reloaded: workers/g) ?? []).length;
    const done = reloads();
    process.kill(running.child.pid as number, 'SIGUSR2');
    // The second old worker dies while the reload starts the first new one.
    process.kill(old[1] as number, 'SIGKILL');
    await waitFor(reloads, (count) => count > done, 15_000);
    await waitFor(
      () => old.filter(isAlive),
      (alive) => alive.length === 0,
      15_000,
    );
    assert.equal(workerPids(running.output()).filter(isAlive).length, 2);
    assert.match(
      running.readLog('error.log'),
      new RegExp(`worker ${old[1]} died \\(signal SIGKILL\\) during the reload; a new worker takes its place`),
    );
    for (let i = 0; i < 4; i++)
      assert.equal(
        (await rawRequest(running.origin, '/slow.json?ms=1', { headers: { connection: 'close' } })).status,
        200,
      );
  });

  test(
    'applies new migrations in the primary first; one that fails stops the reload, and the workers go on serving',
    onPostgres,
    async () => {
      const old = workerPids(running.output()).filter(isAlive);
      // The last migration, as if it were new: applied again, it fails (its functions exist).
      const [last] = await own.db.db.query<{ version: string }>(
        'SELECT max(version) AS version FROM schema_migrations',
      );
      await own.db.db.query('DELETE FROM schema_migrations WHERE version = $1', [last?.version]);
      try {
        process.kill(running.child.pid as number, 'SIGUSR2');
        const log = await waitFor(
          () => running.readLog('error.log'),
          (text) => /reload stopped: the database could not be prepared/.test(text),
          15_000,
        );
        assert.match(
          log,
          new RegExp(
            `reload stopped: the database could not be prepared \\(migration sql/${last?.version}\\.sql failed: [^\\n]+\\); the running workers go on serving`,
          ),
        );
        assert.deepEqual(workerPids(running.output()).filter(isAlive), old);
        for (let i = 0; i < 4; i++)
          assert.equal(
            (await rawRequest(running.origin, '/slow.json?ms=1', { headers: { connection: 'close' } })).status,
            200,
          );
      } finally {
        await own.db.db.query('INSERT INTO schema_migrations (version) VALUES ($1)', [last?.version]);
      }
    },
  );

  test('SIGUSR2 sent to a worker (systemctl kill, pkill) leaves it serving', onPostgres, async () => {
    const [worker] = workerPids(running.output()).filter(isAlive);
    process.kill(worker as number, 'SIGUSR2');
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.ok(isAlive(worker as number));
    for (let i = 0; i < 4; i++)
      assert.equal(
        (await rawRequest(running.origin, '/slow.json?ms=1', { headers: { connection: 'close' } })).status,
        200,
      );
  });
});

/** How many /slow.json requests the instance answered 200, from /metrics. */
async function answeredSlow(): Promise<number> {
  const body = (await rawRequest(running.origin, '/metrics', { headers: { connection: 'close' } })).body;
  return Number(
    /^portfolio_http_requests_total\{route="slow",method="GET",status="200"\} (\d+)$/m.exec(body)?.[1] ?? 0,
  );
}

describe('SIGTERM', () => {
  test('stops accepting, lets a slow request finish, and exits 0', async () => {
    const slow = rawRequest(running.origin, '/slow.json?ms=1500', { headers: { connection: 'close' } });
    // A load balancer's health check on a connection it keeps.
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    assert.deepEqual(await readyz(running.origin, agent), { status: 200, body: 'ready\n', connection: 'keep-alive' });
    await new Promise((resolve) => setTimeout(resolve, 300));
    const stoppedAt = performance.now();
    running.child.kill('SIGTERM');
    await new Promise((resolve) => setTimeout(resolve, 300));
    await assert.rejects(rawRequest(running.origin, '/warn.xml?d=1'), { code: 'ECONNREFUSED' });
    assert.deepEqual(await readyz(running.origin, agent), {
      status: 503,
      body: 'not ready: stopping\n',
      connection: 'close',
    });
    agent.destroy();
    const res = await slow;
    assert.equal(res.status, 200);
    assert.equal(JSON.parse(res.body).slept, 1500);
    assert.equal(await running.exited, 0);
    assert.ok(performance.now() - stoppedAt < 5000);
    const access = running.readLog('access.log');
    assert.match(access, /"GET \/slow\.json\?ms=1500 HTTP\/1\.1" 200 \d+ "-" "-"\n/);
  });
});

describe('PGlite', () => {
  test('refuses WEB_CONCURRENCY > 1 with a message that says what to do', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'server.ts'], {
      cwd: root,
      env: { ...process.env, ...programEnv, DATABASE_URL: '', WEB_CONCURRENCY: '3', LOG_DIR: '-' },
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const code = await new Promise((resolve) => child.once('exit', resolve));
    assert.equal(code, 1);
    assert.equal(
      stderr,
      'portfolio could not start: WEB_CONCURRENCY > 1 needs PostgreSQL: the embedded database (PGlite) serves one process only. Set DATABASE_URL or WEB_CONCURRENCY=1.\n',
    );
  });
});

/** /readyz through agent: the status, the text and whether the connection stays open. */
function readyz(
  origin: string,
  agent: http.Agent,
): Promise<{ status: number; body: string; connection: string | undefined }> {
  return new Promise((resolve, reject) => {
    http
      .get(`${origin}/readyz`, { agent }, (res) => {
        let body = '';
        res.on('data', (chunk: Buffer) => {
          body += chunk.toString();
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body, connection: res.headers.connection }));
      })
      .on('error', reject);
  });
}

function workerPids(output: string): number[] {
  return [...output.matchAll(/worker (\d+) listening on/g)].map((m) => Number(m[1]));
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

interface Outcome {
  start: number;
  end: number;
  ok: boolean;
  status: number | string;
}

/** The status of a GET (on a new connection without an agent), or the error code; bounded by timeoutMs. */
function getStatus(url: string, timeoutMs: number, agent: http.Agent | false = false): Promise<number | string> {
  return new Promise((resolve) => {
    const req = http.get(url, { agent, timeout: timeoutMs }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
      res.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
    });
    req.on('timeout', () => req.destroy(Object.assign(new Error('timed out'), { code: 'TIMEOUT' })));
    req.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
  });
}

/**
 * The sockets of a process that the client has closed and the process has not: CLOSE-WAIT
 * (state 08 in /proc/net/tcp), found through the process's open file descriptors.
 */
function closeWaitSockets(pid: number): string[] {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const link = readlinkSync(`/proc/${pid}/fd/${fd}`);
      if (link.startsWith('socket:[')) inodes.add(link.slice(8, -1));
    } catch {
      // closed meanwhile
    }
  }
  return ['/proc/net/tcp', '/proc/net/tcp6']
    .flatMap((table) => readFileSync(table, 'utf8').split('\n').slice(1))
    .map((row) => row.trim().split(/\s+/))
    .filter((cells) => cells[3] === '08' && inodes.has(cells[9] ?? ''))
    .map((cells) => `${cells[1]} <- ${cells[2]}`);
}

/**
 * `concurrency` clients, each sending one request per new connection (or, with keepAlive, on
 * connections it keeps) until the time or count is up.
 */
async function runLoad(
  origin: string,
  options: {
    concurrency: number;
    durationMs: number;
    maxRequests: number;
    at: number;
    keepAlive?: boolean;
    action: () => Promise<void>;
  },
): Promise<Outcome[]> {
  const outcomes: Outcome[] = [];
  const started = performance.now();
  const timer = setTimeout(() => void options.action(), options.at);
  const agent = options.keepAlive ? new http.Agent({ keepAlive: true }) : false;
  const client = async () => {
    while (performance.now() - started < options.durationMs && outcomes.length < options.maxRequests) {
      const start = performance.now();
      const status = await getStatus(`${origin}/slow.json?ms=20`, 2000, agent);
      outcomes.push({ start, end: performance.now(), ok: status === 200, status });
    }
  };
  await Promise.all(Array.from({ length: options.concurrency }, client));
  clearTimeout(timer);
  if (agent) agent.destroy();
  return outcomes;
}
