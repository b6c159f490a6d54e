// A COMMIT that gets no answer, on a PostgreSQL server of the test's own, frozen (SIGSTOP) right
// before a change's COMMIT reaches it: the answer must match the database. Resumed within the
// time the application asks (DB_OUTCOME_TIMEOUT_MS), the change is saved and answered 201; its
// session killed before it read the COMMIT, nothing is saved and the answer is 503; still frozen
// when that time is up, the answer is 503 with an error-log line that says the outcome is unknown.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import type { CommitMark, Db, Queryable } from '../../lib/db/index.ts';
import { beginWithMark, findCommitOutcome, openPostgres } from '../../lib/db/index.ts';
import { csrfTokenOf, personBody } from '../change-helpers.ts';
import type { TestServer } from '../helpers.ts';
import { startTestServer, waitFor } from '../helpers.ts';
import { logInAs } from '../login-helpers.ts';
import type { PostgresCluster } from './postgres-cluster.ts';
import { createCluster } from './postgres-cluster.ts';

// pg gives up on the COMMIT after 4 s (statement time-out + 1 s), then asks for up to 4 s. A
// session idle in its transaction for 6 s (twice the statement time-out) is ended by the server
// (idle_in_transaction_session_timeout): a frozen one as soon as it resumes, without a COMMIT.
const statementTimeoutMs = 3000;
const queryTimeoutMs = statementTimeoutMs + 1000;
const outcomeTimeoutMs = 4000;

let cluster: PostgresCluster;

before(async () => {
  cluster = await createCluster();
});
after(async () => {
  await cluster?.remove();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function queryCluster<R extends pg.QueryResultRow>(sql: string, params: unknown[] = []): Promise<R[]> {
  const client = new pg.Client({ connectionString: cluster.url });
  await client.connect();
  try {
    return (await client.query<R>(sql, params)).rows;
  } finally {
    await client.end();
  }
}

describe('a change whose COMMIT gets no answer over HTTP', () => {
  let server: TestServer;
  const warnings: string[] = [];
  let beforeCommit: ((tx: Queryable) => Promise<void>) | null = null;
  let librarian: { cookie: string; csrfToken: string };

  before(async () => {
    const db = openPostgres({
      connectionString: cluster.url,
      statementTimeoutMs,
      connectTimeoutMs: 500,
      outcomeTimeoutMs,
      onWarning: (message) => warnings.push(message),
    });
    // The next transaction runs beforeCommit after its statements, right before its COMMIT.
    const holding: Db = {
      ...db,
      transaction: (fn) =>
        db.transaction(async (tx) => {
          const result = await fn(tx);
          const hook = beforeCommit;
          beforeCommit = null;
          await hook?.(tx);
          return result;
        }),
    };
    server = await startTestServer(
      { NODE_ENV: 'production' },
      { db: { db: holding, url: cluster.url, drop: () => db.close() } },
    );
    const cookie = await logInAs(server.origin, 'bibliothek');
    librarian = { cookie, csrfToken: await csrfTokenOf(server.origin, cookie, '/personen/neu') };
  });
  after(() => server?.close());

  /** POST /personen with the cluster frozen right before the COMMIT; resolves with the backend's pid. */
  function createWhileFrozen(nachname: string): { answer: Promise<Response>; pid: Promise<number> } {
    const pid = new Promise<number>((resolve) => {
      beforeCommit = async (tx) => {
        const [row] = await tx.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
        cluster.freeze(true);
        resolve((row as { pid: number }).pid);
      };
    });
    const answer = fetch(`${server.origin}/personen`, {
      method: 'POST',
      headers: {
        cookie: librarian.cookie,
        'x-csrf-token': librarian.csrfToken,
        'content-type': 'application/json',
        accept: 'application/json',
      },
      body: personBody('json', { vorname: 'Commit', nachname, username: nachname.toLowerCase() }),
      signal: AbortSignal.timeout(30_000),
    });
    return { answer, pid };
  }

  const personsNamed = (nachname: string) =>
    queryCluster<{ id: number }>('SELECT id FROM person WHERE nachname = $1', [nachname]);

  /** pg_xact_status once the transaction has ended (its session reads the COMMIT on resuming). */
  async function settledStatus(xid: string): Promise<string | undefined> {
    for (let i = 0; ; i++) {
      const [row] = await queryCluster<{ status: string }>('SELECT pg_xact_status($1::xid8) AS status', [xid]);
      if (row?.status !== 'in progress' || i === 50) return row?.status;
      await sleep(100);
    }
  }

  test('resumed before the application stops asking: the COMMIT went through, the answer is 201 and the person is there', async () => {
    const { answer, pid } = createWhileFrozen('Resumed');
    await pid;
    // The COMMIT waits in the frozen session's socket until pg gives up on it.
    await sleep(queryTimeoutMs + 500);
    cluster.freeze(false);
    const res = await answer;
    const body = await res.text();
    assert.equal(res.status, 201, body);
    const id = Number(res.headers.get('location')?.split('/').pop());
    assert.deepEqual(await personsNamed('Resumed'), [{ id }]);
    assert.equal(warnings.length, 1);
    assert.match(
      warnings[0] as string,
      /^COMMIT of transaction \d+ got no answer \(Query read timeout\); it committed, as pg_xact_status showed after \d+ ms$/,
    );
  });

  test('its session killed while frozen, before it read the COMMIT: nothing saved, 503 that says so', async () => {
    const { answer, pid } = createWhileFrozen('Killed');
    const backend = await pid;
    await sleep(queryTimeoutMs + 300);
    // SIGKILL takes even a stopped process; PostgreSQL then restarts after a crash.
    process.kill(backend, 'SIGKILL');
    cluster.freeze(false);
    const res = await answer;
    assert.equal(res.status, 503);
    assert.equal(res.headers.get('retry-after'), '5');
    assert.deepEqual(await personsNamed('Killed'), []);
    const line = await waitFor(server.errorLog, (log) => log.includes('did not commit'));
    assert.match(
      line,
      /DbUnavailableError: database unavailable: COMMIT of transaction \d+ got no answer \(Query read timeout\); it did not commit, as pg_xact_status showed after \d+ ms/,
    );
  });

  test('still frozen when the application stops asking: 503, and the error log says the outcome is unknown and how to look it up', async () => {
    const { answer, pid } = createWhileFrozen('Unknown');
    await pid;
    const res = await answer;
    assert.equal(res.status, 503);
    const log = await waitFor(server.errorLog, (text) => text.includes('outcome is unknown'));
    const xid =
      /COMMIT of transaction (\d+) got no answer \(Query read timeout\); its outcome is unknown: nothing settled it within \d+ ms\. SELECT pg_xact_status\('(\d+)'\) on the server tells whether the change was saved/.exec(
        log,
      );
    assert.ok(xid, log);
    assert.equal(xid[1], xid[2]);
    // The residual case: the client was told 503 and cannot know. Resumed after 8 s, the session
    // has been idle in its transaction too long and rolls back; resumed sooner, it would have read
    // the COMMIT. The transaction the log line names tells which, and the database agrees.
    cluster.freeze(false);
    const status = await settledStatus(xid[1] as string);
    assert.ok(status === 'committed' || status === 'aborted', status);
    assert.equal((await personsNamed('Unknown')).length, status === 'committed' ? 1 : 0);
  });
});

test('after a crash PostgreSQL gives a lost transaction id to the next transaction: the outcome is "aborted", not that transaction\'s "committed"', async () => {
  const client = new pg.Client({ connectionString: cluster.url });
  client.on('error', () => {});
  await client.connect();
  const [, marked] = (await client.query(beginWithMark)) as unknown as [pg.QueryResult, pg.QueryResult<CommitMark>];
  const mark = marked.rows[0] as CommitMark;
  // No statement of the transaction reached the WAL on disk before the crash.
  await cluster.stop('immediate');
  await client.end().catch(() => {});
  await cluster.start();
  const other = new pg.Client({ connectionString: cluster.url });
  await other.connect();
  await other.query('BEGIN');
  const {
    rows: [reused],
  } = await other.query<{ xid: string }>('SELECT pg_current_xact_id()::text AS xid');
  await other.query('COMMIT');
  await other.end();
  // The trap: the same id, committed by another transaction.
  assert.equal(reused?.xid, mark.xid);
  assert.deepEqual(await queryCluster('SELECT pg_xact_status($1::xid8) AS status', [mark.xid]), [
    { status: 'committed' },
  ]);
  assert.equal(
    await findCommitOutcome(mark, { connectionString: cluster.url, connectTimeoutMs: 500, timeoutMs: 2000 }),
    'aborted',
  );
});
