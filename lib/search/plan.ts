// From parsed query lines to a plan over the word index (docs/interface.md, Search): each atom
// (atoms.ts) gives a set of rows and, where the lexemes cannot tell (phrases, begins_with), a
// check on the row's folded text; the lines join them as their operators say. A plan gives the
// rows a search may find as a set query (set-query.ts), taken block by block (match.ts), the check
// each of them must pass when there is one, and the score.
import { HttpError } from '../http/index.ts';
import type { IdSet } from './id-set.ts';
import type { Context, Node, Score } from './atoms.ts';
import { atomNode, FALSE, TRUE } from './atoms.ts';
import type { ParsedLine } from './language.ts';
import { quoteTerms } from './language.ts';
import type { Query } from './set-query.ts';
import { ALL, andQuery, contains, NONE, notQuery, orQuery } from './set-query.ts';
import type { Kind, TextSource } from './texts.ts';
import type { WordInfo } from './vocabulary.ts';
import type { WordIndex } from './word-index.ts';

function and(parts: Node[]): Node {
  if (parts.some((p) => p.t === 'const' && !p.value)) return FALSE;
  const rest = parts.filter((p) => p.t !== 'const');
  return rest.length === 0 ? TRUE : rest.length === 1 ? (rest[0] as Node) : { t: 'and', parts: rest };
}

function or(parts: Node[]): Node {
  if (parts.some((p) => p.t === 'const' && p.value)) return TRUE;
  const rest = parts.filter((p) => p.t !== 'const');
  return rest.length === 0 ? FALSE : rest.length === 1 ? (rest[0] as Node) : { t: 'or', parts: rest };
}

function not(part: Node): Node {
  return part.t === 'const' ? { t: 'const', value: !part.value } : { t: 'not', part };
}

function lineNode(line: ParsedLine, ctx: Context): Node {
  return and(
    line.clauses.map((clause) =>
      or(
        clause.map((atom) => {
          const node = atomNode(atom, line, ctx);
          return atom.negated ? not(node) : node;
        }),
      ),
    ),
  );
}

/** Lines joined as their operators say, left to right (Primo's advanced search). */
function queryNode(lines: readonly ParsedLine[], ctx: Context): Node {
  let node = lineNode(lines[0] as ParsedLine, ctx);
  for (let i = 1; i < lines.length; i++) {
    const next = lineNode(lines[i] as ParsedLine, ctx);
    const operator = lines[i - 1]?.condition.operator ?? 'AND';
    node = operator === 'OR' ? or([node, next]) : and([node, operator === 'NOT' ? not(next) : next]);
  }
  return node;
}

/** Whether the node needs no check: its set query says it all. */
function exact(node: Node): boolean {
  switch (node.t) {
    case 'const':
      return true;
    case 'not':
      return exact(node.part);
    case 'atom':
      return node.check === null;
    case 'and':
    case 'or':
      return node.parts.every(exact);
  }
}

/** The rows the node may hold: all it holds, and more where a check decides. */
function rowsOf(node: Node): Query {
  switch (node.t) {
    case 'const':
      return node.value ? ALL : NONE;
    case 'atom':
      return node.index;
    // The rows not having a phrase are not the rows not having its words: all may be.
    case 'not':
      return exact(node.part) ? notQuery(rowsOf(node.part)) : ALL;
    case 'and':
      return andQuery(node.parts.map(rowsOf));
    case 'or':
      return orQuery(node.parts.map(rowsOf));
  }
}

/**
 * Whether every hit must have some atom: not only NOTs, and no NOT ORed with a word (`haus OR
 * NOT nacht` is nearly every row).
 */
function hasPositive(node: Node): boolean {
  switch (node.t) {
    case 'const':
    case 'not':
      return false;
    case 'atom':
      return true;
    case 'and':
      return node.parts.some(hasPositive);
    case 'or':
      return node.parts.every(hasPositive);
  }
}

function scoresOf(node: Node): Score[] {
  switch (node.t) {
    case 'const':
    case 'not':
      return [];
    case 'atom':
      return node.score ? [node.score] : [];
    case 'and':
    case 'or':
      return node.parts.flatMap(scoresOf);
  }
}

/** Whether every atom that reads the description must be there: none is under an OR or a NOT. */
function requiredOnly(node: Node, required = true): boolean {
  switch (node.t) {
    case 'const':
      return true;
    case 'atom':
      return required || !node.description;
    case 'not':
      return requiredOnly(node.part, false);
    case 'and':
      return node.parts.every((p) => requiredOnly(p, required));
    case 'or':
      return node.parts.every((p) => requiredOnly(p, required && node.parts.length === 1));
  }
}

function needsDescription(node: Node): boolean {
  switch (node.t) {
    case 'const':
      return false;
    case 'atom':
      return node.description;
    case 'not':
      return needsDescription(node.part);
    case 'and':
    case 'or':
      return node.parts.some(needsDescription);
  }
}

/** Whether the row is a hit: in the node's sets, and through its checks. */
function holds(node: Node, id: number, texts: TextSource, rows: IdSet): boolean {
  switch (node.t) {
    case 'const':
      return node.value;
    case 'atom':
      return contains(node.index, id, rows) && (node.check === null || node.check(id, texts));
    case 'not':
      return !holds(node.part, id, texts, rows);
    case 'and':
      return node.parts.every((p) => holds(p, id, texts, rows));
    case 'or':
      return node.parts.some((p) => holds(p, id, texts, rows));
  }
}

/** A search of one kind of row over the index. */
export interface Plan {
  kind: Kind;
  /** The rows it may find, in the order of their ids: all of them unless `check` says otherwise. */
  rows: Query;
  /** For a search with phrases: whether a row of `rows` is a hit. */
  check: ((id: number, texts: TextSource) => boolean) | null;
  /** Whether the checks or the score read the description, from the database. */
  description: boolean;
  /**
   * Whether a row that passes the checks without its description is a hit of the same score:
   * each phrase that reads it must be there, and was found in a field read before it
   * (title, creator, type, year): only the rows that do not pass need their description.
   */
  early: boolean;
  /** The atoms' scores, added up for a row's rank. */
  scores: Score[];
}

/**
 * The plan for one kind of row, or null when none can match (a title search finds no person).
 * 400 for a search of NOTs alone, or of a NOT ORed with a word: nearly every row.
 */
export function kindPlan(
  lines: readonly ParsedLine[],
  kind: Kind,
  words: Map<string, WordInfo>,
  index: WordIndex,
): Plan | null {
  const ctx: Context = { kind, words, index };
  const node = queryNode(lines, ctx);
  if (node.t === 'const' && !node.value) return null;
  if (!hasPositive(node)) {
    throw new HttpError(
      400,
      `The search ${quoteTerms(lines)} has no word that must be there: add one outside NOT, and do not OR a NOT with a word.`,
    );
  }
  const rows = rowsOf(node);
  const all = kind === 'person' ? index.personen.lexemes.rows : index.werke.lexemes.rows;
  const scores = scoresOf(node);
  return {
    kind,
    rows,
    check: exact(node) ? null : (id, texts) => holds(node, id, texts, all),
    description: needsDescription(node),
    early: requiredOnly(node),
    scores,
  };
}
