// The pieces of the database tier that need no second server: several hosts in one URL, WAL
// positions, the written mark's cookie, the time-outs set without startup parameters, and
// statements sent unnamed (lib/db/hosts.ts, replicas.ts, timeouts.ts; lib/auth/written-mark.ts).
// The tier itself, with PgBouncer, a standby and a failover: test/topology/database-tier.test.ts.
import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { WrittenMarks } from '../../lib/auth/written-mark.ts';
import { readConfig } from '../../lib/config.ts';
import type { Db } from '../../lib/db/index.ts';
import { openPostgres } from '../../lib/db/index.ts';
import { findPrimary, splitHosts } from '../../lib/db/hosts.ts';
import { formatLsn, parseLsn } from '../../lib/db/replicas.ts';
import { Timeouts } from '../../lib/db/timeouts.ts';
import type { TestDb } from '../helpers.ts';
import { backend, openTestDb } from '../helpers.ts';

describe('several hosts in DATABASE_URL', () => {
  test('one URL per host, in order, with the rest of the URL kept and target_session_attrs left to the search', () => {
    assert.deepEqual(
      splitHosts('postgres://app:secret@db1:5432,db2:5433/portfolio?target_session_attrs=read-write&sslmode=disable'),
      [
        'postgres://app:secret@db1:5432/portfolio?sslmode=disable',
        'postgres://app:secret@db2:5433/portfolio?sslmode=disable',
      ],
    );
    assert.deepEqual(splitHosts('postgresql://[::1]:5432,[::1]:5433/db'), [
      'postgresql://[::1]:5432/db',
      'postgresql://[::1]:5433/db',
    ]);
    assert.deepEqual(splitHosts('postgres://postgres@127.0.0.1:5432/test'), [
      'postgres://postgres@127.0.0.1:5432/test',
    ]);
    assert.throws(() => splitHosts('postgres://db1,,db2/db'), /empty host/);
  });

  test('DATABASE_REPLICA_URL keeps the commas inside a URL and splits between URLs', () => {
    const config = readConfig({
      DATABASE_URL: 'postgres://p/db',
      DATABASE_REPLICA_URL: 'postgres://r1:5432/db, postgresql://r2/db',
    });
    assert.deepEqual(config.databaseReplicaUrls, ['postgres://r1:5432/db', 'postgresql://r2/db']);
    assert.deepEqual(readConfig({}).databaseReplicaUrls, []);
    assert.throws(() => readConfig({ DB_POOL_MAX: '0' }), /DB_POOL_MAX=0 is not an integer between 1 and 1000/);
    assert.equal(readConfig({ DB_PREPARED_STATEMENTS: 'off' }).dbPreparedStatements, false);
  });

  test('SEARCH_CONCURRENCY: a third of DB_POOL_MAX by default; set, it must leave the pool a connection', () => {
    assert.equal(readConfig({}).searchConcurrency, 3);
    assert.equal(readConfig({ DB_POOL_MAX: '2' }).searchConcurrency, 1);
    assert.equal(readConfig({ DB_POOL_MAX: '1' }).searchConcurrency, 1);
    assert.equal(readConfig({ DB_POOL_MAX: '10', SEARCH_CONCURRENCY: '9' }).searchConcurrency, 9);
    assert.throws(
      () => readConfig({ DB_POOL_MAX: '10', SEARCH_CONCURRENCY: '10' }),
      /SEARCH_CONCURRENCY=10 leaves no connection of DB_POOL_MAX=10 for the rest.*below 10/,
    );
  });

  test('a host that does not answer is unreachable, not a primary', async () => {
    const { primary, roles } = await findPrimary(['postgres://postgres@127.0.0.1:1/x'], 500);
    assert.equal(primary, null);
    assert.deepEqual(roles, ['unreachable']);
  });
});

describe('WAL positions and the written mark', () => {
  test('positions as PostgreSQL writes them, in order', () => {
    assert.equal(parseLsn('16/B374D848'), (0x16n << 32n) + 0xb374d848n);
    assert.equal(formatLsn(parseLsn('16/B374D848')), '16/B374D848');
    assert.ok(parseLsn('1/0') > parseLsn('0/FFFFFFFF'));
  });

  const request = (cookie: string) => ({ headers: { cookie } }) as IncomingMessage;

  test('the cookie carries the position back, signed: a changed or foreign one counts as none', () => {
    const marks = new WrittenMarks(Buffer.alloc(32, 7), 10);
    const site = { path: '/shop/', secure: true };
    const header = marks.cookie(parseLsn('16/B374D848'), site);
    assert.match(
      header,
      /^portfolio_written=[0-9a-f]+\.[A-Za-z0-9_-]{22}; Max-Age=10; Path=\/shop\/; HttpOnly; Secure; SameSite=Lax$/,
    );
    const pair = header.split(';')[0] as string;
    assert.equal(marks.read(request(`other=1; ${pair}`), site), parseLsn('16/B374D848'));
    assert.equal(marks.read(request(pair.replace(/=[0-9a-f]/, '=f')), site), 0n);
    assert.equal(new WrittenMarks(Buffer.alloc(32, 8), 10).read(request(pair), site), 0n);
    assert.equal(marks.read(request('portfolio_written=zz'), site), 0n);
    assert.equal(marks.read(request(''), site), 0n);
  });

  test('over HTTPS at the root of the host the cookie is __Host-portfolio_written, and only that name is read', () => {
    const marks = new WrittenMarks(Buffer.alloc(32, 7), 10);
    const root = { path: '/', secure: true };
    const header = marks.cookie(parseLsn('16/B374D848'), root);
    assert.match(
      header,
      /^__Host-portfolio_written=[0-9a-f]+\.[A-Za-z0-9_-]{22}; Max-Age=10; Path=\/; HttpOnly; Secure; SameSite=Lax$/,
    );
    const value = (header.split(';')[0] as string).split('=')[1] as string;
    assert.equal(marks.read(request(`__Host-portfolio_written=${value}`), root), parseLsn('16/B374D848'));
    assert.equal(marks.read(request(`portfolio_written=${value}`), root), 0n);
  });
});

describe('time-outs without startup parameters', () => {
  test('a session of its own sets them once; behind a pooler every transaction sets its own', () => {
    const direct = new Timeouts(5000, false);
    assert.equal(direct.session, 'SET statement_timeout = 5000; SET idle_in_transaction_session_timeout = 10000');
    assert.equal(direct.perStatement, null);
    const pooled = new Timeouts(5000, true);
    assert.equal(pooled.session, null);
    assert.equal(
      pooled.perStatement,
      'BEGIN; SET LOCAL statement_timeout = 5000; SET LOCAL idle_in_transaction_session_timeout = 10000',
    );
    assert.equal(
      pooled.begin('BEGIN; SELECT 1'),
      'BEGIN; SET LOCAL statement_timeout = 5000; SET LOCAL idle_in_transaction_session_timeout = 10000; SELECT 1',
    );
  });

  const onPostgres = backend === 'postgres' ? {} : { skip: 'needs a PostgreSQL server; run with DATABASE_URL' };
  let testDb: TestDb;
  const opened: Db[] = [];
  before(async () => {
    if (backend === 'postgres') testDb = await openTestDb();
  });
  after(async () => {
    for (const db of opened) await db.close();
    await testDb?.drop();
  });

  for (const preparedStatements of [true, false]) {
    test(
      `with prepared statements ${preparedStatements ? 'on' : 'off'}, the time-out holds on the pool, the pipelined connections and in transactions`,
      onPostgres,
      async () => {
        const db = openPostgres({
          connectionString: testDb.url as string,
          statementTimeoutMs: 300,
          preparedStatements,
        });
        opened.push(db);
        for (const pipeline of [false, true]) {
          await assert.rejects(
            db.query('SELECT pg_sleep(5)', [], { pipeline }),
            /canceling statement due to statement timeout/,
          );
          assert.deepEqual(await db.query('SHOW statement_timeout', [], { pipeline }), [
            { statement_timeout: '300ms' },
          ]);
        }
        await assert.rejects(
          db.transaction((tx) => tx.query('SELECT pg_sleep(5)')),
          /canceling statement due to statement timeout/,
        );
        // Named statements are prepared on the connection only when prepared statements are on.
        const [row] = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM pg_prepared_statements', [], {
          name: 'count-prepared',
        });
        assert.equal(row?.n, preparedStatements ? 1 : 0);
      },
    );
  }

  test(
    'DB_POOL_MAX and DB_PIPELINE_CONNECTIONS size the connections; 0 pipelined sends those statements through the pool',
    onPostgres,
    async () => {
      const db = openPostgres({
        connectionString: testDb.url as string,
        statementTimeoutMs: 1000,
        maxConnections: 2,
        pipelineConnections: 0,
      });
      opened.push(db);
      const pids = await Promise.all(
        Array.from({ length: 8 }, () =>
          db.query<{ pid: number }>('SELECT pg_backend_pid() AS pid, pg_sleep(0.05)', [], { pipeline: true }),
        ),
      );
      assert.equal(new Set(pids.map((rows) => rows[0]?.pid)).size, 2);
      assert.deepEqual(db.stats(), { total: 2, idle: 2, waiting: 0, pipelined: 0, retried: 0 });
    },
  );
});
