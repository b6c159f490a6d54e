// Takes the rows a plan finds (plan.ts), in the order of their ids: its set query is combined
// by the id sets (CRoaring) into the set of its rows, of which the first are taken. Rows that a
// check must pass are checked in that order, and at most maxChecked of them, so that no search
// costs more than that.
import { IdSet } from './id-set.ts';
import type { Plan } from './plan.ts';
import type { Query } from './set-query.ts';
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
  const { limit, maxChecked } = options;
  const descriptions: Descriptions | null = plan.description ? new Map() : null;
  // Without a check the first rows are the hits; with one, the rows it may read and one more,
  // which tells that it stopped. Taken at once: the index may change while descriptions are read.
  const found = combine(plan.rows, rows);
  const candidates = found.set.toUint32Array(plan.check ? maxChecked + 1 : limit);
  release(found);
  if (!plan.check) return { ids: Array.from(candidates), stopped: false, descriptions };
  const ids: number[] = [];
  const texts = options.texts(descriptions);
  const checkable = Math.min(candidates.length, maxChecked);
  for (let at = 0; at < checkable && ids.length < limit; at += describeChunk) {
    const chunk = Array.from(candidates.subarray(at, Math.min(at + describeChunk, checkable)));
    // The descriptions of a chunk, of which those of the rows taken are kept for their rank.
    // With an early plan, the rows that pass without their description are hits as they were
    // then: the index may change while the others' descriptions are read.
    const early = descriptions && plan.early ? undecided(plan, chunk, options.texts(null), limit - ids.length) : null;
    const wanting = early ? early.open : chunk;
    const described = descriptions ? (wanting.length > 0 ? await options.describe(wanting) : new Map()) : null;
    const chunkTexts = described ? options.texts(described) : texts;
    for (const id of chunk) {
      if (early?.passed.has(id) || plan.check(id, chunkTexts)) {
        ids.push(id);
        const description = described?.get(id);
        if (description) descriptions?.set(id, description);
        if (ids.length === limit) break;
      }
    }
  }
  // Stopped: rows were left that the checks may not read, and the hits are not all taken.
  return { ids, stopped: ids.length < limit && candidates.length > maxChecked, descriptions };
}

/** A set the query's rows combine to; own when it was made for it (and is given back after), not one of the index's. */
interface Combined {
  set: IdSet;
  own: boolean;
}

/** The rows of a set query (all: the kind's rows), combined by the id sets. */
export function combine(query: Query, rows: IdSet): Combined {
  switch (query.t) {
    case 'all':
      return { set: rows, own: false };
    case 'sets':
      return query.sets.length === 1
        ? { set: query.sets[0] as IdSet, own: false }
        : { set: IdSet.orMany(query.sets), own: true };
    case 'not':
      return subtract({ set: rows, own: false }, query.part, rows);
    case 'or': {
      const parts = query.parts.map((p) => combine(p, rows));
      const set = IdSet.orMany(parts.map((p) => p.set));
      parts.forEach(release);
      return { set, own: true };
    }
    case 'and': {
      // The rows of the parts that are not negations, then without those of the negations.
      const positive = query.parts.filter((p) => p.t !== 'not');
      let result: Combined = positive.length === 0 ? { set: rows, own: false } : combine(positive[0] as Query, rows);
      for (const part of positive.slice(1)) {
        const next = combine(part, rows);
        const set = IdSet.and(result.set, next.set);
        release(result);
        release(next);
        result = { set, own: true };
      }
      for (const part of query.parts) if (part.t === 'not') result = subtract(result, part.part, rows);
      return result;
    }
  }
}

/** from without the rows of query; from is given back if it was made for it. */
function subtract(from: Combined, query: Query, rows: IdSet): Combined {
  const part = combine(query, rows);
  const set = IdSet.andNot(from.set, part.set);
  release(from);
  release(part);
  return { set, own: true };
}

/** Frees a combined set's memory at once, when it was made for the query. */
function release(combined: Combined): void {
  if (combined.own) combined.set.dispose();
}

/**
 * The rows of chunk that do not pass the plan's checks without their description (open) and
 * those that do, up to the row by which `wanted` passed: the hits are taken before the rows after
 * it are reached.
 */
function undecided(
  plan: Plan,
  chunk: readonly number[],
  texts: TextSource,
  wanted: number,
): { open: number[]; passed: Set<number> } {
  const open: number[] = [];
  const passed = new Set<number>();
  for (const id of chunk) {
    if (!plan.check?.(id, texts)) open.push(id);
    else if (passed.add(id).size === wanted) break;
  }
  return { open, passed };
}

/**
 * The rank of each row of ids (in the order of their ids, each once): the sum of its atoms' scores. A word's
 * levels are looked up in turn, and a row takes the tier of the first level whose sets have it: a
 * few rows are each looked for in the sets, more are intersected with each set at once.
 */
export function scoreRows(plan: Plan, ids: readonly number[], texts: TextSource): number[] {
  const scores = new Array<number>(ids.length).fill(0);
  let taken: IdSet | null = null;
  for (const score of plan.scores) {
    if ('texts' in score) {
      for (let i = 0; i < ids.length; i++) scores[i]! += score.texts(ids[i] as number, texts);
      continue;
    }
    if (ids.length <= lookedUp) {
      for (let i = 0; i < ids.length; i++) scores[i]! += levelOf(score.levels, ids[i] as number);
      continue;
    }
    taken ??= new IdSet(ids);
    const open = new Uint8Array(ids.length).fill(1);
    let left = ids.length;
    for (const level of score.levels) {
      for (const set of level.sets) {
        const hit = IdSet.and(taken, set);
        const found = hit.toUint32Array();
        hit.dispose();
        // Both in the order of their ids: each found id is met walking ids once, as a merge does.
        let i = 0;
        for (let k = 0; k < found.length; k++) {
          const id = found[k] as number;
          while (i < ids.length && ids[i] !== id) i++;
          if (i === ids.length) break;
          if (open[i] === 0) continue;
          open[i] = 0;
          scores[i]! += level.tier;
          left--;
        }
      }
      if (left === 0) break;
    }
  }
  taken?.dispose();
  return scores;
}

/** Rows up to which each is looked for in a word's sets, rather than the sets intersected with them. */
const lookedUp = 16;

/** The tier of the first level whose sets have id, or 0. */
function levelOf(levels: readonly { sets: IdSet[]; tier: number }[], id: number): number {
  for (const level of levels) {
    for (const set of level.sets) if (set.has(id)) return level.tier;
  }
  return 0;
}
