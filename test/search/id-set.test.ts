// The sets of ids the word index keeps (lib/search/id-set.ts): checked against a plain Set over
// seeded random changes, across blocks, across the change between a list and a bitmap, and
// across the moves of the lists in their shared buffer.
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

  test('keeps its lists apart in one buffer through growth, repacking and fit, over 16 blocks in random order', () => {
    const random = createRandom(12);
    const set = new IdSet();
    const plain = new Set<number>();
    const check = (label: string) => {
      assert.equal(set.size, plain.size, label);
      assert.deepEqual([...set.ids()], [...plain].sort((a, b) => a - b), label);
      for (let b = 0; b < 16; b++) {
        assert.equal(set.hasBlock(b), [...plain].some((id) => id >>> 16 === b), `${label}: block ${b}`);
        assert.deepEqual(bitmapOf(set, b), [...plain].filter((id) => id >>> 16 === b).sort((x, y) => x - y), `${label}: block ${b}`);
      }
    };
    // Lists only (the next test turns a block into a bitmap and back), some blocks fuller than others, ids in no order.
    const pick = () => {
      const b = Math.floor(random() * 16);
      return (b << 16) + Math.floor(random() * (b === 3 || b === 9 ? 7000 : 65_536));
    };
    for (let round = 0; round < 4; round++) {
      for (let i = 0; i < 25_000; i++) {
        const id = pick();
        if (random() < (round % 2 === 0 ? 0.85 : 0.3)) {
          set.add(id);
          plain.add(id);
        } else {
          set.delete(id);
          plain.delete(id);
        }
        if (i % 4999 === 0) assert.equal(set.has(id), plain.has(id));
      }
      check(`round ${round}`);
      set.fit();
      check(`round ${round}, fitted`);
      // Fitted, the lists take two bytes an id and no more.
      assert.equal(set.bytes, 2 * set.size);
    }
    // Emptied whole, then filled again.
    for (const id of [...plain]) {
      set.delete(id);
      plain.delete(id);
    }
    check('emptied');
    assert.equal(set.bytes, 0);
    for (let id = 5; id < 16 * 65_536; id += 4099) {
      set.add(id);
      plain.add(id);
    }
    check('filled again');
  });

  test('a bitmap emptied to 2,048 ids becomes a list again beside other lists, and a list released makes room', () => {
    const set = new IdSet();
    const plain = new Set<number>();
    const put = (id: number) => {
      set.add(id);
      plain.add(id);
    };
    const drop = (id: number) => {
      set.delete(id);
      plain.delete(id);
    };
    const same = (label: string) => assert.deepEqual([...set.ids()], [...plain].sort((a, b) => a - b), label);
    for (let i = 0; i < 100; i++) put(65_536 + 3 * i);
    // Block 0 becomes a bitmap with its 4,097th id.
    for (let i = 0; i < 4097; i++) put(7 * i);
    for (let i = 0; i < 50; i++) put(2 * 65_536 + i);
    set.fit();
    assert.equal(set.bytes, 2 * 150 + 4 * blockWords);
    // The 2,049th drop leaves 2,048: a list again, in a buffer that has no room left (repacked).
    for (let i = 0; i < 2049; i++) drop(7 * i);
    assert.ok(set.bytes < 2 * 150 + 4 * blockWords, `the bitmap's 8 KB given back: ${set.bytes} bytes`);
    same('a list again');
    put(7 * 4096 + 1);
    put(65_537);
    put(2 * 65_536 + 60);
    same('added to each');
    // Block 2's list is given up; block 1's grows after it.
    for (let i = 0; i < 50; i++) drop(2 * 65_536 + i);
    drop(2 * 65_536 + 60);
    assert.equal(set.hasBlock(2), false);
    for (let i = 0; i < 300; i++) put(65_536 + 3 * i + 1);
    same('grown after a list released');
    set.fit();
    assert.equal(set.bytes, 2 * set.size);
    same('fitted');
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
