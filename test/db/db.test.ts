// The PostgreSQL side of lib/db/postgres.ts: connections, pooled or pipelined, outlive statements the
// server refuses, and a statement that gets no answer is given up on by the one watchdog.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import pg from 'pg';
import type { Db } from '../../lib/db/index.ts';
import { DbUnavailableError, openPostgres } from '../../lib/db/index.ts';
import type { TestDb } from '../helpers.ts';
import { backend, openTestDb } from '../helpers.ts';

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

/**
 * A new table, locked by another session until release(): a statement that reads it gets no
 * answer, as when the server hangs. statement_timeout would still end it on the server, so the
 * tests raise it for the session that waits; lock_timeout is off.
 */
async function holdTable(name: string): Promise<{ release: () => Promise<void> }> {
  const admin = new pg.Client({ connectionString: testDb.url as string });
  await admin.connect();
  try {
    await admin.query(`CREATE TABLE ${name} (n int)`);
    await admin.query('BEGIN');
    await admin.query(`LOCK TABLE ${name} IN ACCESS EXCLUSIVE MODE`);
  } catch (err) {
    await admin.end();
    throw err;
  }
  return { release: () => admin.end() };
}

test('a statement the server refuses, in a transaction or not, keeps its connection', onPostgres, async () => {
  const pid = await backendPid(db);
  await assert.rejects(db.query('SELECT 1 / 0'), /division by zero/);
  await assert.rejects(db.query('SELECT $1::int', ['not a number']), /invalid input syntax/);
  await assert.rejects(
    db.transaction(async (tx) => tx.query('SELECT 1 / 0')),
    /division by zero/,
  );
  assert.equal(await backendPid(db), pid);
});

test(
  'a statement that gets no answer fails as unavailable once its time is up, and the next one gets a new connection',
  onPostgres,
  async () => {
    const pid = await backendPid(db);
    const held = await holdTable('held');
    try {
      // The transaction's statement_timeout is raised so that only the client's watchdog (1 s + 1 s) can end it.
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
    } finally {
      await held.release();
    }
    const next = await backendPid(db);
    assert.notEqual(next, pid);
  },
);

test(
  'a statement that waited for its connection, then gets no answer, fails as soon as one that got none at once would',
  onPostgres,
  async () => {
    const held = await holdTable('held_after_wait');
    try {
      // The pool's one connection, without the server's time-out: only the watchdog (1 s + 1 s) ends a wait.
      await db.query("SELECT set_config('statement_timeout', '60000', false)");
      const started = performance.now();
      const busy = db.query('SELECT pg_sleep(1.5)');
      const waiting = db.query('SELECT * FROM held_after_wait');
      await busy;
      await assert.rejects(
        waiting,
        (err: unknown) => err instanceof DbUnavailableError && /Query read timeout/.test(err.message),
      );
      // Its 2 s count from its request, the 1.5 s in the pool's queue included: not 1.5 s + 2 s.
      const waited = performance.now() - started;
      assert.ok(waited >= 2000 && waited < 3000, `gave up after ${Math.round(waited)} ms`);
    } finally {
      await held.release();
    }
  },
);

// Statements marked pipeline (QueryOptions) share two connections in pipeline mode.
const pipelined = { pipeline: true };
const pipelinePids = async () =>
  new Set(
    (
      await Promise.all(
        Array.from({ length: 8 }, () => db.query<{ pid: number }>('SELECT pg_backend_pid() AS pid', [], pipelined)),
      )
    ).map((r) => r[0]?.pid),
  );

test(
  'pipelined statements of many requests at once each get their own answer, on two connections',
  onPostgres,
  async () => {
    const answers = await Promise.all(
      Array.from({ length: 300 }, (_, n) =>
        db.query<{ n: number; pid: number }>(
          'SELECT $1::int AS n, pg_backend_pid() AS pid',
          [n],
          n % 2 === 0 ? { name: 'echo', ...pipelined } : pipelined,
        ),
      ),
    );
    assert.deepEqual(
      answers.map((rows) => rows[0]?.n),
      Array.from({ length: 300 }, (_, n) => n),
    );
    const pids = new Set(answers.map((rows) => rows[0]?.pid));
    assert.equal(pids.size, 2);
    // Not the pool's connection.
    assert.ok(!pids.has(await backendPid(db)));
  },
);

test(
  'with a depth of one a statement waits in the process for a free connection, not behind a slow one on the wire',
  onPostgres,
  async () => {
    const bounded = openPostgres({
      connectionString: testDb.url as string,
      statementTimeoutMs: 5000,
      maxConnections: 1,
      pipelineConnections: 2,
      pipelineDepth: 1,
    });
    try {
      await Promise.all([bounded.query('SELECT 1', [], pipelined), bounded.query('SELECT 1', [], pipelined)]);
      const answered: string[] = [];
      const note = (name: string) => (rows: unknown[]) => {
        answered.push(name);
        return rows;
      };
      // slow takes one connection and fast the other; next finds both full and waits for the first
      // to have room: fast's, whose answer comes long before slow's. Without the bound it would
      // have gone onto slow's connection (both had one) and come after it.
      const slow = bounded.query('SELECT pg_sleep(0.5)', [], pipelined).then(note('slow'));
      const fast = bounded.query('SELECT 1', [], pipelined).then(note('fast'));
      const next = bounded.query<{ n: number }>('SELECT 2 AS n', [], pipelined).then(note('next'));
      assert.equal(bounded.stats()?.pipelined, 3);
      await Promise.all([slow, fast, next]);
      assert.deepEqual(answered, ['fast', 'next', 'slow']);
      assert.deepEqual(await next, [{ n: 2 }]);
      assert.equal(bounded.stats()?.pipelined, 0);
    } finally {
      await bounded.close();
    }
  },
);

/** Stops a PostgreSQL server process (SIGSTOP) as if it lost the processor; null where this user may not. */
function stopProcess(pid: number): (() => void) | null {
  try {
    process.kill(pid, 'SIGSTOP');
  } catch {
    return null;
  }
  let going = false;
  return () => {
    if (!going) process.kill(pid, 'SIGCONT');
    going = true;
  };
}

for (const preparedStatements of [true, false]) {
  test(
    `statements on a connection whose server process stops answering are sent again on another and answered there${preparedStatements ? '' : ', in pooler mode (prepared statements off)'}`,
    onPostgres,
    async (t) => {
      const retrying = openPostgres({
        connectionString: testDb.url as string,
        statementTimeoutMs: 60_000,
        maxConnections: 1,
        pipelineConnections: 2,
        pipelineRetryMs: 50,
        preparedStatements,
      });
      let resume: (() => void) | null = null;
      try {
        // One statement on each connection: their server processes.
        const pids = (
          await Promise.all(
            [0, 1].map(() => retrying.query<{ pid: number }>('SELECT pg_backend_pid() AS pid', [], pipelined)),
          )
        ).map((r) => r[0]?.pid as number);
        assert.equal(new Set(pids).size, 2);
        const [held, answering] = pids as [number, number];
        resume = stopProcess(held);
        if (!resume) return void t.skip("this user may not stop PostgreSQL's processes");
        const asked = Array.from({ length: 6 }, (_, n) =>
          retrying.query<{ n: number; pid: number }>('SELECT $1::int AS n, pg_backend_pid() AS pid', [n], {
            name: 'echo-again',
            ...pipelined,
          }),
        );
        // Without the second try, half of them would wait for the stopped process until it goes on.
        const guard = new Promise<'held up'>((resolve) => setTimeout(resolve, 10_000, 'held up').unref());
        const answers = await Promise.race([Promise.all(asked), guard]);
        assert.notEqual(
          answers,
          'held up',
          'statements on the stopped process were not answered elsewhere within 10 s',
        );
        assert.deepEqual(
          (answers as { n: number; pid: number }[][]).map((rows) => rows[0]?.n),
          [0, 1, 2, 3, 4, 5],
        );
        assert.deepEqual(new Set((answers as { pid: number }[][]).map((rows) => rows[0]?.pid)), new Set([answering]));
        // Those that were on the stopped process, however the six were spread over the two.
        assert.ok((retrying.stats()?.retried ?? 0) >= 1, String(retrying.stats()?.retried));
        // The stopped process goes on: its late answers change nothing, and its connection serves again.
        resume();
        for (let i = 0; i < 100 && (retrying.stats()?.pipelined ?? 0) > 0; i++)
          await new Promise((resolve) => setTimeout(resolve, 20));
        assert.equal(retrying.stats()?.pipelined, 0);
        const again = await Promise.all(
          [0, 1].map(() => retrying.query<{ pid: number }>('SELECT pg_backend_pid() AS pid', [], pipelined)),
        );
        assert.deepEqual(new Set(again.map((r) => r[0]?.pid)), new Set(pids));
      } finally {
        resume?.();
        await retrying.close();
      }
    },
  );
}

test(
  'a statement sent again is answered by its copy when its first connection is lost meanwhile',
  onPostgres,
  async (t) => {
    const retrying = openPostgres({
      connectionString: testDb.url as string,
      statementTimeoutMs: 60_000,
      maxConnections: 1,
      pipelineConnections: 2,
      pipelineRetryMs: 50,
    });
    const admin = new pg.Client({ connectionString: testDb.url as string });
    await admin.connect();
    let resume: (() => void) | null = null;
    try {
      // In order: with both idle, a statement goes to the first connection.
      const pids = (
        await Promise.all(
          [0, 1].map(() => retrying.query<{ pid: number }>('SELECT pg_backend_pid() AS pid', [], pipelined)),
        )
      ).map((r) => r[0]?.pid as number);
      const [held, answering] = pids as [number, number];
      resume = stopProcess(held);
      if (!resume) return void t.skip("this user may not stop PostgreSQL's processes");
      // On the stopped process it would answer at once; its copy, on the other, takes 2 s.
      const asked = retrying
        .query<{ pid: number }>(
          `SELECT pg_sleep(CASE WHEN pg_backend_pid() = ${held} THEN 0 ELSE 2 END), pg_backend_pid() AS pid`,
          [],
          pipelined,
        )
        .then(
          (rows) => rows,
          (err: Error) => err,
        );
      for (let i = 0; i < 200 && retrying.stats()?.retried === 0; i++)
        await new Promise((resolve) => setTimeout(resolve, 5));
      assert.equal(retrying.stats()?.retried, 1);
      // The first connection is lost while the copy runs: ended by the server once its process goes on.
      await admin.query('SELECT pg_terminate_backend($1)', [held]);
      resume();
      const outcome = await asked;
      assert.ok(!(outcome instanceof Error), `the copy's answer should count: ${String(outcome)}`);
      assert.deepEqual(
        outcome.map((row) => row.pid),
        [answering],
      );
      // Lost, not answered late: its server process is gone.
      assert.deepEqual((await admin.query('SELECT pid FROM pg_stat_activity WHERE pid = $1', [held])).rows, []);
    } finally {
      resume?.();
      await admin.end();
      await retrying.close();
    }
  },
);

test(
  'statements still waiting for room when the connections close fail as unavailable, as those on the wire do',
  onPostgres,
  async () => {
    const bounded = openPostgres({
      connectionString: testDb.url as string,
      statementTimeoutMs: 5000,
      maxConnections: 1,
      pipelineConnections: 1,
      pipelineDepth: 1,
    });
    await bounded.query('SELECT 1', [], pipelined);
    // Their outcomes are taken at once: they fail while close() runs.
    const slow = bounded.query('SELECT pg_sleep(0.3)', [], pipelined).then(
      () => null,
      (err: Error) => err,
    );
    const waiting = bounded.query('SELECT 1', [], pipelined).then(
      () => null,
      (err: Error) => err,
    );
    assert.equal(bounded.stats()?.pipelined, 2);
    await bounded.close();
    assert.ok((await waiting) instanceof DbUnavailableError, String(await waiting));
    assert.ok((await slow) instanceof DbUnavailableError, String(await slow));
    assert.equal(bounded.stats()?.pipelined, 0);
  },
);

test(
  'a pipelined statement the server refuses fails alone; the ones around it are answered and the connections stay',
  onPostgres,
  async () => {
    const before = await pipelinePids();
    const outcomes = await Promise.allSettled([
      db.query<{ n: number }>('SELECT 1 AS n', [], pipelined),
      db.query('SELECT 1 / 0', [], pipelined),
      db.query<{ n: number }>('SELECT 2 AS n', [], pipelined),
      db.query('SELECT $1::int', ['not a number'], pipelined),
      db.query<{ n: number }>('SELECT 3 AS n', [], pipelined),
    ]);
    assert.deepEqual(
      outcomes.map((o) => (o.status === 'fulfilled' ? (o.value[0] as { n: number }).n : (o.reason as Error).message)),
      [1, 'division by zero', 2, 'invalid input syntax for type integer: "not a number"', 3],
    );
    assert.deepEqual(await pipelinePids(), before);
  },
);

test(
  'a pipelined statement that gets no answer fails as unavailable once its time is up, and the next one gets a new connection',
  onPostgres,
  async () => {
    const before = await pipelinePids();
    const held = await holdTable('held_too');
    let stuck: number;
    try {
      // With both connections idle, one after the other lands on the first: only the watchdog
      // (1 s + 1 s) can end the statement that waits for the lock.
      [{ pid: stuck } = { pid: 0 }] = await db.query<{ pid: number }>(
        "SELECT set_config('statement_timeout', '60000', false), pg_backend_pid() AS pid",
        [],
        pipelined,
      );
      const started = performance.now();
      await assert.rejects(
        db.query('SELECT * FROM held_too', [], pipelined),
        (err: unknown) => err instanceof DbUnavailableError && /Query read timeout/.test(err.message),
      );
      const waited = performance.now() - started;
      assert.ok(waited >= 2000, `gave up after ${Math.round(waited)} ms`);
    } finally {
      await held.release();
    }
    const after = await pipelinePids();
    assert.ok(before.has(stuck) && !after.has(stuck), `${stuck} was cut and replaced: ${[...before]} → ${[...after]}`);
    assert.equal(after.size, 2);
  },
);

test('pipelined statements fail as unavailable when the server cannot be reached', onPostgres, async () => {
  const nowhere = openPostgres({
    connectionString: 'postgres://postgres@127.0.0.1:1/none',
    statementTimeoutMs: 1000,
    connectTimeoutMs: 1000,
  });
  try {
    await assert.rejects(
      nowhere.query('SELECT 1', [], pipelined),
      (err: unknown) =>
        err instanceof DbUnavailableError &&
        /database unavailable: connect ECONNREFUSED 127\.0\.0\.1:1/.test(err.message),
    );
    // And again: the failed connection is not kept.
    await assert.rejects(nowhere.query('SELECT 1', [], pipelined), DbUnavailableError);
  } finally {
    await nowhere.close();
  }
});

test(
  'closing does not wait for a pipelined statement that gets no answer: it fails as unavailable',
  onPostgres,
  async () => {
    const closing = openPostgres({ connectionString: testDb.url as string, statementTimeoutMs: 60_000 });
    const held = await holdTable('held_at_close');
    try {
      await closing.query('SELECT 1', [], pipelined);
      const waiting = closing.query('SELECT * FROM held_at_close', [], pipelined).then(
        () => 'answered',
        (err: unknown) => err,
      );
      // Sent, then closed: the watchdog would wait 61 s.
      await new Promise((resolve) => setTimeout(resolve, 200));
      const started = performance.now();
      await closing.close();
      assert.ok(performance.now() - started < 1000, `close took ${Math.round(performance.now() - started)} ms`);
      assert.ok((await waiting) instanceof DbUnavailableError);
    } finally {
      await held.release();
    }
  },
);

for (const preparedStatements of [true, false]) {
  test(
    `statements with a time-out of their own run on connections set aside for them, each in a transaction that sets it${preparedStatements ? '' : ', in pooler mode (prepared statements off)'}`,
    onPostgres,
    async () => {
      const timed = openPostgres({
        connectionString: testDb.url as string,
        statementTimeoutMs: 1000,
        maxConnections: 3,
        timedConnections: 2,
        preparedStatements,
      });
      try {
        const settings =
          "SELECT pg_backend_pid() AS pid, current_setting('statement_timeout') AS timeout, current_setting('jit') AS jit, current_setting('enable_seqscan') AS seqscan";
        type Settings = { pid: number; timeout: string; jit: string; seqscan: string };
        const rows = (
          await Promise.all(
            Array.from({ length: 6 }, (_, i) =>
              timed.query<Settings>(settings, [], {
                timeoutMs: 150,
                indexScans: i % 2 === 0,
                name: `settings-${i % 2}`,
              }),
            ),
          )
        ).map((r) => r[0] as Settings);
        assert.deepEqual(
          rows.map(({ timeout, jit, seqscan }) => [timeout, jit, seqscan]),
          Array.from({ length: 6 }, (_, i) => ['150ms', 'off', i % 2 === 0 ? 'off' : 'on']),
        );
        assert.ok(new Set(rows.map((r) => r.pid)).size <= 2, 'two connections at most');
        // None of it went through the pool, and nothing stayed set after COMMIT.
        assert.equal(timed.stats()?.total, 0);
        const [plain] = await timed.query<Settings>(settings);
        assert.deepEqual([plain?.timeout, plain?.jit], ['1s', 'on']);
        assert.ok(!rows.some((r) => r.pid === plain?.pid));
        // A kept plan, where asked for.
        const planMode = async (genericPlan: boolean) =>
          (
            await timed.query<{ mode: string }>("SELECT current_setting('plan_cache_mode') AS mode", [], {
              timeoutMs: 150,
              genericPlan,
              name: 'plan-mode',
            })
          )[0]?.mode;
        // Behind a pooler statements are unnamed, and a plan for any values would be made again each time.
        assert.deepEqual(
          [await planMode(true), await planMode(false)],
          [preparedStatements ? 'force_generic_plan' : 'auto', 'auto'],
        );
        // The pool has the one connection the two set aside leave of three.
        await Promise.all(Array.from({ length: 3 }, () => timed.query('SELECT pg_sleep(0.05)')));
        assert.equal(timed.stats()?.total, 1);

        // One that runs into its time-out fails as the server says (57014, which a search answers
        // 503), alone: its connection serves the next.
        const pids = new Set(rows.map((r) => r.pid));
        await assert.rejects(
          timed.query('SELECT pg_sleep(2)', [], { timeoutMs: 100 }),
          (err: { code?: string }) => err.code === '57014',
        );
        const after = await Promise.all(
          Array.from({ length: 4 }, () => timed.query<Settings>(settings, [], { timeoutMs: 150 })),
        );
        assert.ok(after.every((r) => pids.has((r[0] as Settings).pid) && (r[0] as Settings).timeout === '150ms'));
      } finally {
        await timed.close();
      }
    },
  );
}
