// The start as operators see it (docs/operations.md, Processes and signals): the port opens once a
// worker serves; the probes and the pages answer while the search process reads the index,
// searches are 503 with Retry-After until then; a worker added later reads no index at all; in a
// reload the new search process reads the index while the one before answers; a search process
// killed under load gives 503s only, and comes back by itself. A worker's start is held up by a
// lock another connection takes on site_secret, the index's reading by one on search_word, the
// last table it reads: PostgreSQL only, as PGlite has no other connection to take them.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { backend, rawRequest, waitFor } from '../helpers.ts';
import type { OwnProgram, Program } from '../program.ts';
import { startOwnProgram, startProgram } from '../program.ts';
import { freePort } from '../topology/front.ts';

const onPostgres =
  backend === 'postgres'
    ? {}
    : { skip: 'holding up the reading needs a second connection: PostgreSQL; run with DATABASE_URL' };

let own: OwnProgram;

before(async () => {
  if (backend !== 'postgres') return;
  own = await startOwnProgram({ WEB_CONCURRENCY: '2' });
});
after(() => own?.close());

/** A transaction that holds a table locked until release(). */
async function hold(url: string, table: 'search_word' | 'site_secret'): Promise<{ release: () => Promise<void> }> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query('BEGIN');
  await client.query(`LOCK TABLE ${table} IN ACCESS EXCLUSIVE MODE`);
  return {
    release: async () => {
      await client.query('COMMIT');
      await client.end();
    },
  };
}

const search = '/search.json?query=any,contains,Zitronen';

/**
 * The connections waiting for a lock on search_word, by the lock (a statement's text in
 * pg_stat_activity is cut at 1 KB: the search's catch-up names search_word past that).
 */
const waitersOfSearchWord = `SELECT DISTINCT l.pid FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
  WHERE NOT l.granted AND l.relation = 'search_word'::regclass AND a.datname = current_database()`;

/** Whether a connection comes to wait for the lock on search_word within 20 s. */
async function waitingForLock(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    for (let i = 0; i < 200; i++) {
      const { rows } = await client.query(waitersOfSearchWord);
      if (rows.length > 0) return true;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    return false;
  } finally {
    await client.end();
  }
}

/** Searches until `times` in a row answer 200, for at most 10 s; the statuses seen. */
async function searchUntilFound(origin: string, times: number): Promise<number[]> {
  const seen: number[] = [];
  for (let i = 0, inARow = 0; i < 100 && inARow < times; i++) {
    const { status } = await rawRequest(origin, search);
    seen.push(status);
    inARow = status === 200 ? inARow + 1 : 0;
    if (status !== 200) await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return seen;
}

let running: Program | null = null;
after(() => running?.remove());

describe('the port', () => {
  test('opens only once a worker serves: nothing that connects waits for one', onPostgres, async () => {
    own.program.remove();
    const port = await freePort();
    const lock = await hold(own.db.url as string, 'site_secret');
    let starting: Promise<Program> | null = null;
    try {
      starting = startProgram({ DATABASE_URL: own.db.url as string, WEB_CONCURRENCY: '2', PORT: String(port) });
      // The primary has prepared the database and forked; its workers wait for the site's secret.
      await new Promise((resolve) => setTimeout(resolve, 1000));
      for (let i = 0; i < 5; i++) {
        const refused = await rawRequest(`http://127.0.0.1:${port}`, '/healthz').then(
          (res) => res.status,
          (err: NodeJS.ErrnoException) => err.code,
        );
        assert.equal(refused, 'ECONNREFUSED');
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    } finally {
      await lock.release();
    }
    running = await (starting as Promise<Program>);
    assert.equal((await rawRequest(running.origin, '/healthz')).status, 200);
    running.remove();
  });
});

describe('while the search process reads the index', () => {
  test(
    'the probes and the pages answer at once, a search is 503 with Retry-After, and 200 once the index is read',
    onPostgres,
    async () => {
      own.program.remove();
      const lock = await hold(own.db.url as string, 'search_word');
      try {
        // Both workers serve: they keep no index. The search process waits for the lock.
        running = await startProgram(
          { DATABASE_URL: own.db.url as string, WEB_CONCURRENCY: '2' },
          { searching: false },
        );
        const origin = running.origin;
        assert.ok(await waitingForLock(own.db.url as string), 'the search process came to wait for search_word');
        for (const [path, status] of [
          ['/healthz', 200],
          ['/readyz', 200],
          ['/person/max-muster.json', 200],
          ['/personen.json', 200],
        ] as const) {
          assert.equal((await rawRequest(origin, path)).status, status, path);
        }
        const starting = await rawRequest(origin, search);
        assert.deepEqual(
          [starting.status, starting.headers['retry-after'], JSON.parse(starting.body).detail],
          [503, '5', 'Search is starting: its index is being read. Try again in a few seconds.'],
        );
      } finally {
        await lock.release();
      }
      assert.deepEqual((await searchUntilFound(running.origin, 4)).slice(-4), [200, 200, 200, 200]);
      assert.match(running.output(), /search process \d+ answers searches \(\d+ persons, \d+ works\)/);
    },
  );

  test(
    'a worker started beside it reads no index: it serves searches while search_word is locked',
    onPostgres,
    async () => {
      const program = running as Program;
      const lock = await hold(own.db.url as string, 'search_word');
      try {
        const before = workerPids(program.output());
        process.kill(before[0] as number, 'SIGKILL');
        // The primary starts another worker in its place; it serves with search_word locked, so it never read it.
        await waitFor(
          () => workerPids(program.output()).length,
          (count) => count > before.length,
          30_000,
        );
        const statuses = new Set<number>();
        for (let i = 0; i < 8; i++)
          statuses.add(
            (await rawRequest(program.origin, `${search}&offset=${i}`, { headers: { connection: 'close' } })).status,
          );
        assert.deepEqual([...statuses], [200]);
        assert.equal(await lockWaiters(own.db.url as string), 0, 'nobody waits for search_word');
      } finally {
        await lock.release();
      }
    },
  );

  test(
    'in a reload, the new search process reads the index while the one before answers: no search sees a 503',
    onPostgres,
    async () => {
      const program = running as Program;
      const lock = await hold(own.db.url as string, 'search_word');
      try {
        const before = workerPids(program.output()).length;
        program.child.kill('SIGUSR2');
        // Both workers are replaced (they read no index); then the new search process waits for the lock.
        await waitFor(
          () => workerPids(program.output()).length,
          (count) => count >= before + 2,
          30_000,
        );
        assert.ok(await waitingForLock(own.db.url as string), 'no search process came to wait for search_word');
        const statuses = new Set<number>();
        for (let i = 0; i < 20; i++)
          statuses.add(
            (await rawRequest(program.origin, `${search}&offset=${i % 3}`, { headers: { connection: 'close' } }))
              .status,
          );
        assert.deepEqual([...statuses], [200]);
        assert.doesNotMatch(program.readLog('error.log'), /reloaded:/);
      } finally {
        await lock.release();
      }
      await waitFor(
        () => program.readLog('error.log'),
        (text) => /reloaded: workers \d+, \d+ serve, search process \d+/.test(text),
        30_000,
      );
      assert.deepEqual([...new Set(await searchUntilFound(program.origin, 4))], [200]);
    },
  );

  test(
    "the search process killed while a reload's new one reads the index: the new one takes its place, and only it",
    onPostgres,
    async () => {
      const program = running as Program;
      const [old] = searchPids(program.output()).slice(-1);
      const started = searchPids(program.output()).length;
      const lock = await hold(own.db.url as string, 'search_word');
      try {
        program.child.kill('SIGUSR2');
        assert.ok(
          await waitingForLock(own.db.url as string),
          "the reload's search process came to wait for search_word",
        );
        process.kill(old as number, 'SIGKILL');
        await waitFor(
          () => program.readLog('error.log'),
          (text) => text.includes(`the search process ${old} died`),
          10_000,
        );
        // No other is started in its place while the reload's reads: 2 s, longer than the restart's wait.
        await new Promise((resolve) => setTimeout(resolve, 2000));
        assert.equal(searchPids(program.output()).length, started);
      } finally {
        await lock.release();
      }
      await waitFor(
        () => program.readLog('error.log'),
        (text) =>
          /reloaded: workers \d+, \d+ serve, search process \d+\n[^]*$/.test(
            text.slice(text.lastIndexOf('reloading:')),
          ),
        30_000,
      );
      const searching = searchPids(program.output()).slice(started);
      assert.equal(searching.length, 1, 'one search process answers');
      // The old workers finish their requests and exit; then the primary has two workers and one search process.
      const childrenOf = () =>
        readFileSync(`/proc/${program.child.pid}/task/${program.child.pid}/children`, 'utf8')
          .trim()
          .split(/\s+/)
          .map(Number);
      const children = await waitFor(childrenOf, (pids) => pids.length === 3, 15_000);
      assert.equal(children.length, 3, `two workers and one search process: ${children.join(', ')}`);
      assert.ok(children.includes(searching[0] as number));
      assert.deepEqual((await searchUntilFound(program.origin, 4)).slice(-4), [200, 200, 200, 200]);
    },
  );

  test(
    'a search process killed under search load: searches are 200 or 503 with Retry-After, and it comes back by itself',
    onPostgres,
    async (t) => {
      const program = running as Program;
      const [killed] = searchPids(program.output()).slice(-1);
      const started = searchPids(program.output()).length;
      let stop = false;
      const statuses = new Map<number, number>();
      let missingRetryAfter = 0;
      let n = 0;
      const clients = Array.from({ length: 4 }, async () => {
        // Other words each time: no kept result answers them (bounded: 400 searches a client).
        for (let i = 0; i < 400 && !stop; i++) {
          const res = await rawRequest(
            program.origin,
            `/search.json?query=any,contains,z${n++}*&search_scope=default_scope`,
          );
          statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
          if (res.status === 503 && res.headers['retry-after'] !== '5') missingRetryAfter++;
        }
      });
      await new Promise((resolve) => setTimeout(resolve, 500));
      process.kill(killed as number, 'SIGKILL');
      // Its successor says so once it has read the index.
      await waitFor(
        () => searchPids(program.output()).length,
        (count) => count > started,
        30_000,
      );
      await new Promise((resolve) => setTimeout(resolve, 500));
      stop = true;
      await Promise.all(clients);
      t.diagnostic(`searches by status: ${JSON.stringify(Object.fromEntries(statuses))}`);
      assert.deepEqual(
        [...statuses.keys()].filter((s) => s !== 200 && s !== 503),
        [],
        JSON.stringify([...statuses]),
      );
      assert.ok((statuses.get(503) ?? 0) > 0, 'searches met the search process gone');
      assert.equal(missingRetryAfter, 0);
      assert.match(
        program.readLog('error.log'),
        new RegExp(`the search process ${killed} died \\(signal SIGKILL\\); a new one starts in 1 s`),
      );
      // Searches no worker has kept an answer for.
      const fresh = await Promise.all(
        ['Muster', 'Zitrone', 'Stillleben', 'Bild'].map(
          async (word) =>
            (await rawRequest(program.origin, `/search.json?query=any,contains,${word}&sortby=title`)).status,
        ),
      );
      assert.deepEqual(fresh, [200, 200, 200, 200]);
    },
  );
});

function workerPids(output: string): number[] {
  return [...output.matchAll(/worker (\d+) listening on/g)].map((m) => Number(m[1]));
}

function searchPids(output: string): number[] {
  return [...output.matchAll(/search process (\d+) answers searches/g)].map((m) => Number(m[1]));
}

/** Connections that wait for a lock on search_word now. */
async function lockWaiters(url: string): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(waitersOfSearchWord)).rows.length;
  } finally {
    await client.end();
  }
}
