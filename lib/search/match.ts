// Takes the rows a plan finds (plan.ts), in the order of their ids, block by block of the word
// index: a block's sets are combined word by word into a bitmap of its rows, and the search
// stops after the block that gives it enough. Rows that a check must pass are checked in that
// order, and at most maxChecked of them, so that no search costs more than that.
import type { IdSet } from './id-set.ts';
import { blockBits, blockWords, idsOf } from './id-set.ts';
import type { Plan } from './plan.ts';
import type { Query } from './query.ts';
import type { Descriptions, TextSource } from './texts.ts';


export interface Taken {
  ids: number[];
  /** Whether the checks stopped at maxChecked before the rows ran out or limit were taken. */
  stopped: boolean;
  descriptions: Descriptions | null;
}

export interface TakeOptions {
  /** How many rows to take. */
  limit: number;
  /** Rows that a check may read at most. */
  maxChecked: number;
  texts: (descriptions: Descriptions | null) => TextSource;
  describe: (ids: number[]) => Promise<Descriptions>;
}

/** Rows whose descriptions are read in one statement. */
const describeChunk = 1000;

export async function takeRows(plan: Plan, rows: IdSet, options: TakeOptions): Promise<Taken> {
  const { limit } = options;
  const ids: number[] = [];
  const combine = new Combiner(rows);
  const words = shared.words;
  const descriptions: Descriptions | null = plan.description ? new Map() : null;
  const texts = options.texts(descriptions);
  let checked = 0;
  for (let b = 0; b < rows.blockCount && ids.length < limit; b++) {
    if (!combine.mayHave(plan.rows, b)) continue;
    combine.into(plan.rows, b, words);
    if (!plan.check) {
      ids.push(...idsOf(b, words, limit - ids.length));
      continue;
    }
    const candidates = idsOf(b, words, Infinity);
    for (let at = 0; at < candidates.length && ids.length < limit; at += describeChunk) {
      if (checked >= options.maxChecked) return { ids, stopped: true, descriptions };
      const chunk = candidates.slice(at, Math.min(at + describeChunk, at + options.maxChecked - checked));
      // The descriptions of a chunk, of which those of the rows taken are kept for their rank.
      // With an early plan, the rows that pass without their description are hits as they were
      // then: the index may change while the others' descriptions are read.
      const early = descriptions && plan.early ? undecided(plan, chunk, options.texts(null), limit - ids.length) : null;
      const wanting = early ? early.open : chunk;
      const described = descriptions ? (wanting.length > 0 ? await options.describe(wanting) : new Map()) : null;
      const chunkTexts = described ? options.texts(described) : texts;
      for (const id of chunk) {
        checked++;
        if (early?.passed.has(id) || plan.check(id, chunkTexts)) {
          ids.push(id);
          const description = described?.get(id);
          if (description) descriptions?.set(id, description);
          if (ids.length === limit) break;
        }
      }
    }
  }
  return { ids, stopped: false, descriptions };
}

/**
 * The rows of chunk that do not pass the plan's checks without their description (open) and
 * those that do, up to the row by which `wanted` passed: the hits are taken before the rows after
 * it are reached.
 */
function undecided(plan: Plan, chunk: readonly number[], texts: TextSource, wanted: number): { open: number[]; passed: Set<number> } {
  const open: number[] = [];
  const passed = new Set<number>();
  for (const id of chunk) {
    if (!plan.check?.(id, texts)) open.push(id);
    else if (passed.add(id).size === wanted) break;
  }
  return { open, passed };
}

/**
 * The rank of each row of ids (in the order of their ids): the sum of its atoms' scores. A word's
 * levels are combined into a bitmap of a block once and each row's bit read, or each row is looked
 * for in the levels' sets, whichever costs less: rows times sets against a bitmap per level.
 */
export function scoreRows(plan: Plan, ids: readonly number[], texts: TextSource): number[] {
  const scores = new Array<number>(ids.length).fill(0);
  const bits = shared.bits;
  if (shared.open.length < ids.length) shared.open = new Uint8Array(ids.length);
  const open = shared.open;
  for (let start = 0; start < ids.length;) {
    const b = (ids[start] as number) >>> blockBits;
    let end = start;
    while (end < ids.length && (ids[end] as number) >>> blockBits === b) end++;
    for (const score of plan.scores) {
      if ('texts' in score) {
        for (let i = start; i < end; i++) scores[i]! += score.texts(ids[i] as number, texts);
        continue;
      }
      const sets = score.levels.reduce((n, level) => n + level.sets.length, 0);
      if ((end - start) * sets * 8 < score.levels.length * blockWords) {
        for (let i = start; i < end; i++) scores[i]! += levelOf(score.levels, ids[i] as number);
        continue;
      }
      open.fill(1, start, end);
      let left = end - start;
      for (const level of score.levels) {
        if (!level.sets.some((set) => set.hasBlock(b))) continue;
        bits.fill(0);
        for (const set of level.sets) set.orInto(b, bits);
        for (let i = start; i < end; i++) {
          const low = (ids[i] as number) & lowMask;
          if (open[i] === 0 || (bits[low >>> 5]! & (1 << (low & 31))) === 0) continue;
          scores[i]! += level.tier;
          open[i] = 0;
          left--;
        }
        if (left === 0) break;
      }
    }
    start = end;
  }
  return scores;
}

const lowMask = (1 << blockBits) - 1;

/** The tier of the first level whose sets have id, or 0. */
function levelOf(levels: readonly { sets: IdSet[]; tier: number }[], id: number): number {
  for (const level of levels) {
    for (const set of level.sets) if (set.has(id)) return level.tier;
  }
  return 0;
}

/**
 * Bitmaps of one block that every search of the process uses in turn: each fills one and reads
 * it before it awaits anything (a search awaits descriptions between blocks, and another search
 * runs meanwhile), and would otherwise allocate them anew (8 KB each, outside the heap, which
 * makes the garbage collector run more often). Nothing a search keeps across an await lives here.
 */
const shared = { words: new Uint32Array(blockWords), bits: new Uint32Array(blockWords), open: new Uint8Array(0), scratch: [] as Uint32Array[] };

/**
 * Evaluates a set query for one block of a kind's rows into a bitmap, with a bitmap of scratch space
 * per level (shared). Exported for bench/id-sets.ts, which times it against another kind of set.
 */
export class Combiner {
  private readonly scratch = shared.scratch;

  constructor(private readonly rows: IdSet) {}

  /** Whether block b may have rows of the query: false when a set that must be there has none in it. */
  mayHave(query: Query, b: number): boolean {
    switch (query.t) {
      case 'all': case 'not': return this.rows.hasBlock(b);
      case 'sets': return query.sets.some((s) => s.hasBlock(b));
      case 'and': return query.parts.every((p) => this.mayHave(p, b));
      case 'or': return query.parts.some((p) => this.mayHave(p, b));
    }
  }

  into(query: Query, b: number, out: Uint32Array, depth = 0): void {
    switch (query.t) {
      case 'all':
        out.fill(0);
        this.rows.orInto(b, out);
        return;
      case 'sets':
        out.fill(0);
        for (const set of query.sets) set.orInto(b, out);
        return;
      case 'not': {
        const part = this.buffer(depth);
        this.into(query.part, b, part, depth + 1);
        out.fill(0);
        this.rows.orInto(b, out);
        for (let i = 0; i < blockWords; i++) out[i]! &= ~part[i]!;
        return;
      }
      case 'and': case 'or': {
        const [first, ...rest] = query.parts as [Query, ...Query[]];
        this.into(first, b, out, depth + 1);
        for (const part of rest) {
          const bits = this.buffer(depth);
          if (query.t === 'and' && part.t === 'sets' && part.sets.length === 1) {
            (part.sets[0] as IdSet).andInto(b, out, bits);
            continue;
          }
          this.into(part, b, bits, depth + 1);
          if (query.t === 'and') for (let i = 0; i < blockWords; i++) out[i]! &= bits[i]!;
          else for (let i = 0; i < blockWords; i++) out[i]! |= bits[i]!;
        }
      }
    }
  }

  private buffer(depth: number): Uint32Array {
    let buffer = this.scratch[depth];
    if (!buffer) this.scratch[depth] = buffer = new Uint32Array(blockWords);
    return buffer;
  }
}
