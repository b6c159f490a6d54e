// The turns of the password checks (lib/auth/check-queue.ts): the quietest client runs next, a
// full line makes room for a quieter client at the noisiest one's cost, a check waits a bounded
// number of turns, and the check of a client that has gone never runs. The work here is a promise
// the test settles, so each order is exact.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { CheckQueue } from '../../lib/auth/check-queue.ts';
import { HttpError } from '../../lib/http/index.ts';

const limits = { running: 1, perClient: 4, total: 8, patience: 8, memoryMs: 60_000 };

/** Checks whose work the test ends: the names in the order they started, and their answers. */
function harness(queue: CheckQueue) {
  const started: string[] = [];
  const finish = new Map<string, () => void>();
  const answers = new Map<string, string>();
  const check = (client: string, name: string, signal?: AbortSignal) => {
    const answer = queue
      .run(
        client,
        () =>
          new Promise<void>((resolve) => {
            started.push(name);
            finish.set(name, resolve);
          }),
        signal,
      )
      .then(
        () => 'done',
        (err: unknown) => {
          assert.ok(err instanceof HttpError);
          return `${err.status} ${err.options.headers?.['retry-after'] ?? '-'}`;
        },
      );
    void answer.then((text) => answers.set(name, text));
    return answer;
  };
  /** Ends the running check name and lets the next one start. */
  const end = async (name: string) => {
    (finish.get(name) as () => void)();
    await new Promise((resolve) => setImmediate(resolve));
  };
  return { started, answers, check, end };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('CheckQueue', () => {
  test('the next free slot goes to the client with the fewest checks lately; the one that floods waits behind all', async () => {
    const queue = new CheckQueue(limits);
    const { started, check, end } = harness(queue);
    for (const name of ['a1', 'a2', 'a3', 'a4']) void check('198.51.100.1', name);
    for (const name of ['b1', 'b2', 'b3']) void check('198.51.100.2', name);
    void check('192.0.2.7', 'c1');
    await settle();
    assert.equal(queue.waiting, 7);
    for (const name of ['a1', 'c1', 'b1', 'b2', 'b3', 'a2', 'a3', 'a4']) await end(name);
    assert.deepEqual(started, ['a1', 'c1', 'b1', 'b2', 'b3', 'a2', 'a3', 'a4']);
    assert.equal(queue.waiting, 0);
  });

  test('a client with perClient checks waiting is answered 503 with Retry-After at once', async () => {
    const { started, answers, check, end } = harness(new CheckQueue(limits));
    for (const name of ['a1', 'a2', 'a3', 'a4', 'a5', 'a6']) void check('198.51.100.1', name);
    await settle();
    assert.equal(answers.get('a6'), '503 1');
    for (const name of ['a1', 'a2', 'a3', 'a4', 'a5']) await end(name);
    assert.deepEqual(started, ['a1', 'a2', 'a3', 'a4', 'a5']);
  });

  test("a full line makes room for a quieter client: the noisiest client's newest check is answered 503", async () => {
    const queue = new CheckQueue({ ...limits, total: 4 });
    const { started, answers, check, end } = harness(queue);
    for (const name of ['a1', 'a2', 'a3', 'a4', 'a5']) void check('198.51.100.1', name);
    void check('192.0.2.7', 'c1');
    await settle();
    assert.equal(answers.get('a5'), '503 1');
    assert.equal(queue.waiting, 4);
    for (const name of ['a1', 'c1', 'a2', 'a3', 'a4']) await end(name);
    assert.deepEqual(started, ['a1', 'c1', 'a2', 'a3', 'a4']);
  });

  test('a full line of clients as quiet as the newcomer refuses the newcomer', async () => {
    const { answers, check, end } = harness(new CheckQueue({ ...limits, total: 2 }));
    void check('198.51.100.1', 'a1');
    void check('198.51.100.2', 'b1');
    void check('198.51.100.3', 'c1');
    void check('198.51.100.4', 'd1');
    await settle();
    assert.deepEqual([answers.get('b1'), answers.get('c1'), answers.get('d1')], [undefined, undefined, '503 1']);
    for (const name of ['a1', 'b1', 'c1']) await end(name);
    assert.deepEqual([answers.get('b1'), answers.get('c1')], ['done', 'done']);
  });

  test('a check that `patience` others pass is answered 503 and never runs', async () => {
    const queue = new CheckQueue({ ...limits, patience: 3 });
    const { started, answers, check, end } = harness(queue);
    void check('198.51.100.1', 'a1');
    void check('198.51.100.1', 'a2');
    for (const name of ['b1', 'c1', 'd1']) void check(`192.0.2.${name.charCodeAt(0)}`, name);
    await settle();
    await end('a1');
    await end('b1');
    assert.equal(answers.get('a2'), undefined);
    await end('c1');
    assert.equal(answers.get('a2'), '503 1');
    await end('d1');
    assert.deepEqual(started, ['a1', 'b1', 'c1', 'd1']);
    assert.equal(queue.waiting, 0);
  });

  test('the check of a client that has gone is dropped before its turn and never runs', async () => {
    const queue = new CheckQueue(limits);
    const { started, answers, check, end } = harness(queue);
    void check('198.51.100.1', 'a1');
    const leaving = new AbortController();
    void check('198.51.100.2', 'b1', leaving.signal);
    void check('198.51.100.3', 'c1');
    await settle();
    assert.equal(queue.waiting, 2);
    leaving.abort();
    await settle();
    assert.equal(answers.get('b1'), '499 -');
    assert.equal(queue.waiting, 1);
    await end('a1');
    await end('c1');
    // Gone already when it comes: not run even with a slot free.
    const gone = new AbortController();
    gone.abort();
    assert.equal(await check('198.51.100.2', 'b2', gone.signal), '499 -');
    assert.deepEqual(started, ['a1', 'c1']);
  });
});
