// What is kept until the data changes (lib/db/data-version.ts, ResultCache): by count for
// remembered results, by weight for kept documents, whose bytes count against a budget.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ResultCache } from '../../lib/db/index.ts';

/** The keys cache holds at version, asked for in turn: a key not held is computed and named in the result. */
async function held(cache: ResultCache, version: bigint, keys: string[]): Promise<string[]> {
  const computed: string[] = [];
  for (const key of keys)
    await cache.get(version, key, async () => {
      computed.push(key);
      return key;
    });
  return keys.filter((key) => !computed.includes(key));
}

describe('kept results', () => {
  test('weighed, they are dropped least used first once their weights pass the limit', async () => {
    const cache = new ResultCache({ limit: 10, weigh: (value: string) => value.length });
    for (const key of ['aaaa', 'bbb', 'cc']) await cache.get(1n, key, async () => key);
    // aaaa is used again, so bbb is the least used when dddd makes 13.
    await cache.get(1n, 'aaaa', async () => 'computed again');
    await cache.get(1n, 'dddd', async () => 'dddd');
    assert.deepEqual(await held(cache, 1n, ['aaaa', 'cc', 'dddd']), ['aaaa', 'cc', 'dddd']);
    assert.deepEqual(await held(cache, 1n, ['bbb']), []);
  });

  test('one heavier than the limit goes to its requests and is not kept, nor does it push others out', async () => {
    const cache = new ResultCache({ limit: 10, weigh: (value: string) => value.length });
    await cache.get(1n, 'small', async () => 'small');
    const waiting = [
      cache.get(1n, 'large', async () => 'x'.repeat(11)),
      cache.get(1n, 'large', async () => 'computed twice'),
    ];
    assert.deepEqual(await Promise.all(waiting), ['x'.repeat(11), 'x'.repeat(11)]);
    assert.deepEqual(await held(cache, 1n, ['small', 'large']), ['small']);
  });

  test('a new data version drops them all, weights included', async () => {
    const cache = new ResultCache({ limit: 10, weigh: (value: string) => value.length });
    await cache.get(1n, 'nine', async () => 'x'.repeat(9));
    assert.equal(await cache.get(2n, 'nine', async () => 'anew'), 'anew');
    // Were the 9 of version 1 still counted, ten more would push out what version 2 keeps.
    await cache.get(2n, 'six', async () => 'x'.repeat(6));
    assert.deepEqual(await held(cache, 2n, ['nine', 'six']), ['nine', 'six']);
  });

  test('unweighed, each counts 1 and the limit is a count', async () => {
    const cache = new ResultCache({ limit: 2 });
    for (const key of ['a', 'b', 'c']) await cache.get(1n, key, async () => key);
    assert.deepEqual(await held(cache, 1n, ['b', 'c']), ['b', 'c']);
    assert.deepEqual(await held(cache, 1n, ['a']), []);
  });
});
