// Taking a plan's rows (lib/search/match.ts): a search that awaits descriptions between chunks
// takes the same rows whatever other searches run meanwhile; checks stop at maxChecked.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { IdSet } from '../../lib/search/id-set.ts';
import { scoreRows, takeRows } from '../../lib/search/match.ts';
import type { Plan } from '../../lib/search/plan.ts';
import type { Descriptions } from '../../lib/search/texts.ts';
import { WordIndex } from '../../lib/search/word-index.ts';

/** Works in three blocks of ids, every third with the word nebel; a few persons. */
function indexOf(): WordIndex {
  const index = new WordIndex();
  for (let id = 1; id < 3 * 65_536; id += 97) {
    index.werke.put(
      {
        id,
        person_id: 1,
        urheber: 'Anna Muster',
        art: 'Roman',
        jahr: 2000,
        folded: `titel ${id}`,
        lexemes: id % 3 === 0 ? 't:nebel t:titel' : 't:titel',
      },
      [],
    );
  }
  for (let id = 1; id <= 5; id++)
    index.personen.put(
      { id, name: `Person ${id}`, folded: `person ${id}`, author: `${id} person`, lexemes: 'c:person' },
      [],
    );
  return index;
}

test('a search that awaits between blocks takes its rows whatever runs meanwhile', async () => {
  const index = indexOf();
  const nebel = index.werke.lexemes.of('t:nebel');
  assert.ok(nebel);
  // Works without nebel (a NOT: every row of each block but those), checked with descriptions read.
  const plan: Plan = {
    kind: 'werk',
    rows: { t: 'not', part: { t: 'sets', sets: [nebel] } },
    check: () => true,
    description: true,
    early: false,
    scores: [],
  };
  const persons: Plan = {
    kind: 'person',
    rows: { t: 'all' },
    check: null,
    description: false,
    early: false,
    scores: [],
  };
  const options = (describe: (ids: number[]) => Promise<Descriptions>) => ({
    limit: 10_000,
    maxChecked: 100_000,
    texts: () => ({ text: () => '' }),
    describe,
  });
  const alone = await takeRows(
    plan,
    index.werke.lexemes.rows,
    options(async () => new Map()),
  );
  // The same, with a search of persons run while each chunk's descriptions are awaited.
  const beside = await takeRows(
    plan,
    index.werke.lexemes.rows,
    options(async () => {
      await takeRows(
        persons,
        index.personen.lexemes.rows,
        options(async () => new Map()),
      );
      return new Map();
    }),
  );
  assert.ok(alone.ids.length > 1000, `${alone.ids.length} rows`);
  assert.deepEqual(beside.ids, alone.ids);
  assert.ok(alone.ids.every((id) => id % 3 !== 0));
});

test('a plan whose phrases must all be there reads the descriptions of the rows the index cannot decide only', async () => {
  const index = indexOf();
  const texts = (descriptions: Descriptions | null) => ({
    text: (tag: string, id: number) => (tag === 'd' ? (descriptions?.get(id)?.text ?? '') : id % 2 === 0 ? 'hit' : ''),
  });
  // Even ids pass on their title; of the odd ones, every third passes on its description.
  const check = (id: number, source: { text: (tag: 't' | 'd', id: number, prefix: boolean) => string }) =>
    source.text('t', id, false) === 'hit' || source.text('d', id, false) === 'hit';
  const describe =
    (asked: number[][]) =>
    async (ids: number[]): Promise<Descriptions> => {
      asked.push(ids);
      return new Map(ids.map((id) => [id, { text: id % 3 === 0 ? 'hit' : 'other', described: true }]));
    };
  const run = async (early: boolean, limit: number) => {
    const asked: number[][] = [];
    const plan: Plan = { kind: 'werk', rows: { t: 'all' }, check, description: true, early, scores: [] };
    const taken = await takeRows(plan, index.werke.lexemes.rows, {
      limit,
      maxChecked: 100_000,
      texts,
      describe: describe(asked),
    });
    return { ids: taken.ids, asked: asked.flat(), kept: [...(taken.descriptions?.keys() ?? [])] };
  };
  for (const limit of [5, 700, 100_000]) {
    const eager = await run(false, limit);
    const early = await run(true, limit);
    assert.deepEqual(early.ids, eager.ids, `limit ${limit}`);
    assert.ok(
      early.ids.some((id) => id % 2 !== 0),
      'some rows are hits by their description',
    );
    assert.ok(
      early.asked.length > 0 && early.asked.every((id) => id % 2 !== 0),
      `limit ${limit}: only undecided rows are described`,
    );
    assert.ok(early.asked.length < eager.asked.length);
    // The descriptions kept for the rank are those of the hits that passed on them.
    assert.deepEqual(
      early.kept,
      early.ids.filter((id) => id % 2 !== 0),
    );
  }
});

test('rows that passed without their description stay hits when the index changes while the others are read', async () => {
  const index = indexOf();
  const titles = new Map<number, string>([...index.werke.lexemes.rows].map((id) => [id, id % 2 === 0 ? 'hit' : '']));
  const texts = (descriptions: Descriptions | null) => ({
    text: (tag: string, id: number) => (tag === 'd' ? (descriptions?.get(id)?.text ?? '') : (titles.get(id) ?? '')),
  });
  const check = (id: number, source: { text: (tag: 't' | 'd', id: number, prefix: boolean) => string }) =>
    source.text('t', id, false) === 'hit' || source.text('d', id, false) === 'hit';
  const describe =
    (change: boolean) =>
    async (ids: number[]): Promise<Descriptions> => {
      // A catch-up meanwhile: the titles lose the phrase.
      if (change) for (const id of titles.keys()) titles.set(id, '');
      return new Map(ids.map((id) => [id, { text: id % 3 === 0 ? 'hit' : 'other', described: true }]));
    };
  const run = async (early: boolean, change: boolean) => {
    const plan: Plan = { kind: 'werk', rows: { t: 'all' }, check, description: true, early, scores: [] };
    return (
      await takeRows(plan, index.werke.lexemes.rows, {
        limit: 40,
        maxChecked: 100_000,
        texts,
        describe: describe(change),
      })
    ).ids;
  };
  const before = await run(false, false);
  assert.ok(before.some((id) => id % 2 === 0) && before.some((id) => id % 2 !== 0));
  assert.deepEqual(await run(true, true), before);
});

test('checks stop after maxChecked rows, whatever its size, and say so only when rows were left', async () => {
  const index = indexOf();
  const rows = index.werke.lexemes.rows;
  const none: Plan = {
    kind: 'werk',
    rows: { t: 'all' },
    check: () => false,
    description: false,
    early: false,
    scores: [],
  };
  const options = (maxChecked: number, limit = 10) => ({
    limit,
    maxChecked,
    texts: () => ({ text: () => '' }),
    describe: async () => new Map(),
  });
  assert.ok(rows.size > 2000, `${rows.size} rows`);
  for (const maxChecked of [1, 400, 1000, 1001, 1999]) {
    assert.deepEqual(
      await takeRows(none, rows, options(maxChecked)),
      { ids: [], stopped: true, descriptions: null },
      `maxChecked ${maxChecked}`,
    );
  }
  assert.equal((await takeRows(none, rows, options(rows.size))).stopped, false, 'every row checked');
  // The hits all taken by the last row it may check: not stopped.
  const first = [...rows].slice(0, 3);
  const some: Plan = { ...none, check: (id) => first.includes(id) };
  assert.deepEqual(await takeRows(some, rows, options(3, 3)), { ids: first, stopped: false, descriptions: null });
  assert.deepEqual(await takeRows(some, rows, options(2, 3)), {
    ids: first.slice(0, 2),
    stopped: true,
    descriptions: null,
  });
});

test('a page of many rows is ranked as each row looked up alone is', () => {
  const index = indexOf();
  const titel = index.werke.lexemes.of('t:titel');
  const nebel = index.werke.lexemes.of('t:nebel');
  assert.ok(titel && nebel);
  const set = (ids: number[]) => new IdSet(ids);
  const rows = [...index.werke.lexemes.rows];
  // A word whose first level has nebel and a few more rows, whose second has titel; and a text score.
  const plan: Plan = {
    kind: 'werk',
    rows: { t: 'all' },
    check: null,
    description: false,
    early: false,
    scores: [
      {
        levels: [
          { sets: [nebel, set(rows.filter((id) => id % 7 === 0))], tier: 9 },
          { sets: [titel], tier: 3 },
        ],
      },
      { levels: [{ sets: [set(rows.filter((id) => id % 5 === 0))], tier: 2 }] },
      { texts: (id) => id % 2 },
    ],
  };
  // Every other row, so that the sets hold rows the page lacks.
  const ids = rows.filter((_, i) => i % 2 === 0).slice(0, 900);
  const texts = { text: () => '' };
  const alone = ids.flatMap((id) => scoreRows(plan, [id], texts));
  assert.deepEqual(scoreRows(plan, ids, texts), alone);
  assert.ok(new Set(alone).size >= 4, `scores ${[...new Set(alone)]}`);
});
