// Rows of one kind as a set query over the word index's sets: unions of sets, and, or, not, all
// rows, none; built by plan.ts and atoms.ts, combined by match.ts.
import type { IdSet } from './id-set.ts';

/** Rows of one kind, as a set query: the union of sets, and, or, not, all rows, none. */
export type Query =
  | { t: 'all' }
  | { t: 'sets'; sets: IdSet[] }
  | { t: 'and' | 'or'; parts: Query[] }
  | { t: 'not'; part: Query };

export const ALL: Query = { t: 'all' };
export const NONE: Query = { t: 'sets', sets: [] };

export function andQuery(parts: Query[]): Query {
  if (parts.some(isNone)) return NONE;
  const rest = parts.filter((p) => p.t !== 'all');
  return rest.length === 0 ? ALL : rest.length === 1 ? (rest[0] as Query) : { t: 'and', parts: rest };
}

export function orQuery(parts: Query[]): Query {
  if (parts.some((p) => p.t === 'all')) return ALL;
  const rest = parts.filter((p) => !isNone(p));
  return rest.length === 0 ? NONE : rest.length === 1 ? (rest[0] as Query) : { t: 'or', parts: rest };
}

function isNone(query: Query): boolean {
  return query.t === 'sets' && query.sets.length === 0;
}

export function notQuery(part: Query): Query {
  return part.t === 'all' ? NONE : isNone(part) ? ALL : { t: 'not', part };
}

/** Whether the row is in the query's rows (all: the kind's rows). */
export function contains(query: Query, id: number, rows: IdSet): boolean {
  switch (query.t) {
    case 'all':
      return rows.has(id);
    case 'sets':
      return inAny(query.sets, id);
    case 'not':
      return rows.has(id) && !contains(query.part, id, rows);
    case 'and':
      return query.parts.every((p) => contains(p, id, rows));
    case 'or':
      return query.parts.some((p) => contains(p, id, rows));
  }
}

function inAny(sets: readonly IdSet[], id: number): boolean {
  for (const set of sets) if (set.has(id)) return true;
  return false;
}
