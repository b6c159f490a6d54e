// The sets of ids the word index keeps (lib/search/id-set.ts): checked against a plain Set over
// seeded random changes, across blocks and across the change between a list and a bitmap.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createRandom } from '../../bin/lib/sample-data.ts';
import { blockWords, IdSet, idsOf } from '../../lib/search/id-set.ts';

/** The ids of block b that a bitmap combined by orInto holds. */
function bitmapOf(set: IdSet, b: number): number[] {
  const words = new Uint32Array(blockWords);
  set.orInto(b, words);
  return idsOf(b, words, Infinity);
}

describe('IdSet', () => {
  test('holds what a Set holds through adds and deletes in several blocks, lists and bitmaps alike', () => {
    const random = createRandom(11);
    const set = new IdSet();
    const plain = new Set<number>();
    // Block 0 dense (a bitmap, and back to a list as it empties), block 1 sparse, block 3 in between.
    const pick = () => {
      const r = random();
      if (r < 0.5) return Math.floor(random() * 9000);
      if (r < 0.8) return 65_536 + Math.floor(random() * 65_536);
      return 3 * 65_536 + Math.floor(random() * 6000);
    };
    for (let i = 0; i < 60_000; i++) {
      const id = pick();
      // Adding more than deleting first, then deleting more, so that block 0 passes 4,096 both ways.
      if (random() < (i < 30_000 ? 0.8 : 0.2)) {
        set.add(id);
        plain.add(id);
      } else {
        set.delete(id);
        plain.delete(id);
      }
      if (i % 7919 === 0) assert.equal(set.size, plain.size);
    }
    assert.equal(set.size, plain.size);
    assert.deepEqual([...set.ids()], [...plain].sort((a, b) => a - b));
    for (let id = 0; id < 4 * 65_536; id += 13) assert.equal(set.has(id), plain.has(id), `id ${id}`);
    assert.equal(set.hasBlock(2), false);
    assert.deepEqual(bitmapOf(set, 1), [...plain].filter((id) => id >>> 16 === 1).sort((a, b) => a - b));
  });

  test('a block of more than 4,096 ids is a bitmap and has the same ids', () => {
    const set = new IdSet();
    for (let id = 0; id < 10_000; id += 2) set.add(id);
    assert.equal(set.size, 5000);
    assert.equal(set.has(9998), true);
    assert.equal(set.has(9999), false);
    assert.deepEqual(bitmapOf(set, 0), Array.from({ length: 5000 }, (_, i) => i * 2));
    for (let id = 0; id < 10_000; id += 4) set.delete(id);
    assert.deepEqual([...set.ids()], Array.from({ length: 2500 }, (_, i) => i * 4 + 2));
  });

  test('andInto keeps the bits of ids in the set, from a list and from a bitmap', () => {
    const list = new IdSet();
    const bitmap = new IdSet();
    for (const id of [1, 5, 70, 1000]) list.add(id);
    for (let id = 0; id < 6000; id++) if (id % 5 === 0) bitmap.add(id);
    const scratch = new Uint32Array(blockWords);
    const words = new Uint32Array(blockWords);
    for (let id = 0; id < 2000; id++) words[id >>> 5]! |= 1 << (id & 31);
    list.andInto(0, words, scratch);
    assert.deepEqual(idsOf(0, words, Infinity), [1, 5, 70, 1000]);
    bitmap.andInto(0, words, scratch);
    assert.deepEqual(idsOf(0, words, Infinity), [5, 70, 1000]);
    new IdSet().andInto(0, words, scratch);
    assert.deepEqual(idsOf(0, words, Infinity), []);
  });

  test('idsOf stops at its limit, in the order of the ids', () => {
    const set = new IdSet();
    for (const id of [65_536 * 2 + 7, 65_536 * 2 + 3, 65_536 * 2 + 40_000]) set.add(id);
    const words = new Uint32Array(blockWords);
    set.orInto(2, words);
    assert.deepEqual(idsOf(2, words, 2), [65_536 * 2 + 3, 65_536 * 2 + 7]);
    assert.equal(set.blockCount, 3);
  });
});
