// The start as operators see it (docs/operations.md, Processes and signals): the port opens once a
// worker serves; the probes and the pages answer while the workers read their search index,
// searches are 503 with Retry-After until then, and in a reload a new worker takes connections
// only once its index is read. A worker's start is held up by a lock another connection takes on
// site_secret, the index's reading by one on search_word, the last table it reads: PostgreSQL
// only, as PGlite has no other connection to take them.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { backend, rawRequest, waitFor } from '../helpers.ts';
import type { OwnProgram, Program } from '../program.ts';
import { startOwnProgram, startProgram } from '../program.ts';
import { freePort } from '../topology/front.ts';

const onPostgres = backend === 'postgres' ? {} : { skip: 'holding up the reading needs a second connection: PostgreSQL; run with DATABASE_URL' };

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

/** Whether a connection comes to wait for the lock on search_word within 20 s. */
async function waitingForLock(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    for (let i = 0; i < 200; i++) {
      const { rows } = await client.query(`SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query ILIKE '%search_word%'`);
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
        const refused = await rawRequest(`http://127.0.0.1:${port}`, '/healthz').then((res) => res.status, (err: NodeJS.ErrnoException) => err.code);
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

describe('while the workers read their search index', () => {
  test('the probes and the pages answer at once, a search is 503 with Retry-After, and 200 once the index is read', onPostgres, async () => {
    own.program.remove();
    const lock = await hold(own.db.url as string, 'search_word');
    try {
      // The first worker serves with its index unread; the second waits for its index to take connections.
      running = await startProgram({ DATABASE_URL: own.db.url as string, WEB_CONCURRENCY: '2' }, { serving: 1 });
      const origin = running.origin;
      for (const [path, status] of [['/healthz', 200], ['/readyz', 200], ['/person/max-muster.json', 200], ['/personen.json', 200]] as const) {
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
    // Both workers, in turn, once each has its index.
    assert.deepEqual((await searchUntilFound(running.origin, 4)).slice(-4), [200, 200, 200, 200]);
  });

  test('in a reload, a new worker takes no connection before its index is read: no search sees a 503', onPostgres, async () => {
    const program = running as Program;
    const lock = await hold(own.db.url as string, 'search_word');
    try {
      const listening = () => (program.output().match(/worker \d+ listening/g) ?? []).length;
      const before = listening();
      program.child.kill('SIGUSR2');
      // The first new worker has started and reads its index: it waits for the lock.
      assert.ok(await waitingForLock(own.db.url as string), 'no worker came to wait for search_word');
      const statuses = new Set<number>();
      for (let i = 0; i < 20; i++) statuses.add((await rawRequest(program.origin, search)).status);
      assert.deepEqual([...statuses], [200]);
      // It takes no connection yet (a worker that serves says so, with the address), and the reload goes on.
      assert.equal(listening(), before);
      assert.doesNotMatch(program.readLog('error.log'), /reloaded:/);
    } finally {
      await lock.release();
    }
    await waitFor(() => program.readLog('error.log'), (text) => /reloaded: workers \d+, \d+ serve/.test(text), 30_000);
    assert.deepEqual([...new Set(await searchUntilFound(program.origin, 4))], [200]);
  });
});
