// The PostgreSQL side of lib/db.ts: connections outlive statements the server refuses, and a
// statement that gets no answer is given up on by the pool's one watchdog.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import pg from 'pg';
import type { Db } from '../lib/db.ts';
import { DbUnavailableError, openPostgres } from '../lib/db.ts';
import type { TestDb } from './helpers.ts';
import { backend, openTestDb } from './helpers.ts';

const onPostgres = backend === 'postgres' ? {} : { skip: 'needs a PostgreSQL server; run with DATABASE_URL' };

let testDb: TestDb;
let db: Db;

before(async () => {
  if (backend !== 'postgres') return;
  testDb = await openTestDb();
  // One connection, so every statement shows whether it is still the same one.
  db = openPostgres({ connectionString: testDb.url as string, statementTimeoutMs: 1000, maxConnections: 1 });
});

after(async () => {
  if (backend !== 'postgres') return;
  await db.close();
  await testDb.drop();
});

const backendPid = async (on: Db) => (await on.query<{ pid: number }>('SELECT pg_backend_pid() AS pid'))[0]?.pid;

test('a statement the server refuses, in a transaction or not, keeps its connection', onPostgres, async () => {
  const pid = await backendPid(db);
  await assert.rejects(db.query('SELECT 1 / 0'), /division by zero/);
  await assert.rejects(db.query('SELECT $1::int', ['not a number']), /invalid input syntax/);
  await assert.rejects(db.transaction(async (tx) => tx.query('SELECT 1 / 0')), /division by zero/);
  assert.equal(await backendPid(db), pid);
});

test('a statement that gets no answer fails as unavailable once its time is up, and the next one gets a new connection', onPostgres, async () => {
  const pid = await backendPid(db);
  const admin = new pg.Client({ connectionString: testDb.url as string });
  await admin.connect();
  try {
    // The statement waits for a lock the test holds: the server gives no answer, as when it hangs.
    // statement_timeout (1 s) would end it on the server; lock_timeout is off, and the session's
    // statement_timeout is raised so that only the client's watchdog (1 s + 1 s) can end it.
    await admin.query('CREATE TABLE held (n int)');
    await admin.query('BEGIN');
    await admin.query('LOCK TABLE held IN ACCESS EXCLUSIVE MODE');
    const started = performance.now();
    await assert.rejects(
      db.transaction(async (tx) => {
        await tx.query('SET LOCAL statement_timeout = 60000');
        return tx.query('SELECT * FROM held');
      }),
      (err: unknown) => err instanceof DbUnavailableError && /Query read timeout/.test(err.message),
    );
    // Not before its time: statement_timeout + 1 s.
    const waited = performance.now() - started;
    assert.ok(waited >= 2000, `gave up after ${Math.round(waited)} ms`);
    await admin.query('ROLLBACK');
  } finally {
    await admin.end();
  }
  const next = await backendPid(db);
  assert.notEqual(next, pid);
});
