// What the word index keeps of each row outside the heap (lib/search/columns.ts): texts set over
// and over stay whole as their buffer fills with garbage and grows.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createRandom } from '../../bin/lib/sample-data.ts';
import { Column, Interned, Texts } from '../../lib/search/columns.ts';

test('texts set again and again, some of them long, read back as last set', () => {
  const random = createRandom(5);
  const texts = new Texts();
  const plain = new Map<number, string>();
  for (let id = 0; id < 5000; id++) {
    const text = `titel ${id} ${'ü'.repeat(id % 7)}`;
    texts.set(id, text);
    plain.set(id, text);
  }
  // 200 of them edited 3,000 times: the garbage passes a third, a half, and the buffer grows.
  for (let round = 0; round < 3000; round++) {
    const id = Math.floor(random() * 200);
    const text = `neu ${round} ${'x'.repeat(Math.floor(random() * 300))}`;
    texts.set(id, text);
    plain.set(id, text);
    if (round % 7 === 0) {
      texts.delete(id + 4000);
      plain.delete(id + 4000);
    }
  }
  for (let id = 0; id < 5000; id++) assert.equal(texts.get(id), plain.get(id) ?? '', `id ${id}`);
});

test('a column of several fields keeps each apart, and ids never set read as empty', () => {
  const column = new Column(-1, 3);
  column.set(70_000, 5, 0);
  column.set(70_000, 6, 2);
  assert.deepEqual([column.get(70_000, 0), column.get(70_000, 1), column.get(70_000, 2)], [5, -1, 6]);
  assert.equal(column.get(3, 1), -1);
});

test('interned texts have one code each, and an order that is by code point', () => {
  const names = new Interned();
  const [a, b, c] = ['Zoë', '\u{1F600} Emoji', '\uFB00 Ligatur'].map((text) => names.code(text)) as [
    number,
    number,
    number,
  ];
  assert.equal(names.code('Zoë'), a);
  assert.equal(names.text(b), '\u{1F600} Emoji');
  // U+FB00 before U+1F600 by code point (and in UTF-8), though not in UTF-16 units.
  assert.ok(names.order(c) < names.order(b));
  assert.ok(names.order(a) < names.order(c));
});

test('texts fitted to what they hold give the room back and read back the same, before and after more changes', () => {
  for (const edited of [false, true]) {
    const texts = new Texts();
    const plain = new Map<number, string>();
    for (let id = 0; id < 20_000; id++) {
      const text = `Beschreibung ${id} ${'ä'.repeat(id % 11)}`;
      texts.set(id, text);
      plain.set(id, text);
    }
    if (edited) for (let id = 0; id < 20_000; id += 3) texts.set(id, (plain.set(id, `neu ${id}`), `neu ${id}`));
    const before = texts.bytes;
    texts.fit();
    assert.ok(texts.bytes < before, `${texts.bytes} bytes, ${before} before`);
    for (let id = 0; id < 20_000; id++) assert.equal(texts.get(id), plain.get(id), `id ${id}`);
    for (let id = 20_000; id < 25_000; id++) texts.set(id, (plain.set(id, `später ${id}`), `später ${id}`));
    for (let id = 0; id < 25_000; id++) assert.equal(texts.get(id), plain.get(id), `id ${id}`);
  }
});
