// From parsed query lines to a plan over the word index (docs/interface.md, Search). Each row's
// words are lexemes tagged with their field (sql/009_search_words.sql); an atom becomes a set of
// rows from those lexemes, and where the lexemes cannot tell (phrases, begins_with) a check on
// the row's folded text. A plan gives the rows a search may find as a set query, taken block by
// block (lib/search/match.ts), the check each of them must pass when there is one, and the score.
import { HttpError } from '../http/index.ts';
import type { IdSet } from './id-set.ts';
import type { Atom, Field, ParsedLine } from './language.ts';
import { quoteTerms } from './language.ts';
import type { Kind, Tag, TextSource } from './texts.ts';
import type { Expansion, WordInfo } from './vocabulary.ts';
import { expansionOf, lookupKey } from './words.ts';
import type { WordIndex } from './word-index.ts';


const fieldTags: Record<Field, readonly Tag[]> = {
  any: ['t', 'c', 'd', 'r', 'y'], title: ['t'], creator: ['c'], desc: ['d'], rtype: ['r'], cdate: ['y'],
};
const kindTags: Record<Kind, readonly Tag[]> = { person: ['c'], werk: ['t', 'c', 'd', 'r', 'y'] };
/** Rank of a match: the field first (title, creator, the rest), then whole word, stem, compound part. */
const tiers: Record<Tag, [word: number, stem: number, part: number]> = {
  t: [9, 8, 7], c: [6, 5, 4], d: [3, 2, 1], r: [3, 2, 1], y: [3, 2, 1],
};
/** Bonus of an exact phrase that is the field's whole text. */
const wholeBonus = 20;
/** Rows of one kind, as a set query: the union of sets, and, or, not, all rows, none. */
export type Query =
  | { t: 'all' }
  | { t: 'sets'; sets: IdSet[] }
  | { t: 'and' | 'or'; parts: Query[] }
  | { t: 'not'; part: Query };

const ALL: Query = { t: 'all' };
const NONE: Query = { t: 'sets', sets: [] };

/** A check on a row's folded text (phrases, exact, begins_with); true when it passes. */
type Check = (id: number, texts: TextSource) => boolean;
/**
 * A row's score for one atom: the tier of the first level whose sets have the row (a word's),
 * or what the row's texts give (a phrase's).
 */
export type Score =
  | { levels: { sets: IdSet[]; tier: number }[] }
  | { texts: (id: number, texts: TextSource) => number };

type Node =
  | { t: 'const'; value: boolean }
  | { t: 'and' | 'or'; parts: Node[] }
  | { t: 'not'; part: Node }
  | { t: 'atom'; index: Query; check: Check | null; score: Score | null; description: boolean };

const TRUE: Node = { t: 'const', value: true };
const FALSE: Node = { t: 'const', value: false };

interface Context {
  kind: Kind;
  words: Map<string, WordInfo>;
  index: WordIndex;
}

function info(ctx: Context, word: string, expansion: Expansion | null): WordInfo {
  return ctx.words.get(lookupKey(word, expansion)) ?? { stem: null, expansions: [], more: false };
}

/** The rows having any of the lexemes (tag:word); those no row has are left out. */
function setsOf(ctx: Context, lexemes: readonly string[]): IdSet[] {
  const rows = ctx.kind === 'person' ? ctx.index.personen.lexemes : ctx.index.werke.lexemes;
  return lexemes.map((l) => rows.of(l)).filter((s): s is IdSet => s !== undefined);
}

function inAny(sets: readonly IdSet[], id: number): boolean {
  for (const set of sets) if (set.has(id)) return true;
  return false;
}

/** One atom for one kind of row: its rows, its check, its score. */
function atomNode(atom: Atom, line: ParsedLine, ctx: Context): Node {
  // Years are numbers: a word with a letter is not looked for among them.
  const tags = fieldTags[line.condition.field].filter((t) => kindTags[ctx.kind].includes(t) && (t !== 'y' || atom.words.every((w) => /^-?[0-9*?]+$/.test(w))));
  if (tags.length === 0) return FALSE;
  const contains = line.condition.match === 'contains';

  if (atom.kind === 'word') {
    const [word] = atom.words as [string];
    const wild = /[*?]/.test(word);
    const known = info(ctx, word, expansionOf(word, atom, 0, contains));
    const levels: { sets: IdSet[]; tier: number }[] = [];
    const alternatives: string[] = [];
    for (const tag of tags) {
      const [wordTier, stemTier, partTier] = tiers[tag];
      const exact = wild ? known.expansions.map((e) => `${tag}:${e}`) : known.stem === null ? [] : [`${tag}:${word}`];
      const stem = !wild && known.stem !== null && tag !== 'y' ? [`${tag}s:${known.stem}`] : [];
      // A stop word inside other words (der in Wanderer) is no compound part.
      const parts = wild || known.stem === null ? [] : known.expansions.map((e) => `${tag}:${e}`);
      levels.push({ sets: setsOf(ctx, exact), tier: wordTier }, { sets: setsOf(ctx, stem), tier: stemTier }, { sets: setsOf(ctx, parts), tier: partTier });
      // A row with the whole word has its stem's lexeme too: the stem's rows are the word's.
      alternatives.push(...(stem.length > 0 ? stem : exact), ...parts);
    }
    // A work's stem in any of its fields is one set (word-index.ts, Lexemes).
    const stemmed = ['t', 'c', 'd', 'r'] as const;
    if (ctx.kind === 'werk' && !wild && known.stem !== null && stemmed.every((tag) => tags.includes(tag))) {
      const others = alternatives.filter((l) => !stemmed.some((tag) => l === `${tag}s:${known.stem}`));
      alternatives.splice(0, alternatives.length, `*s:${known.stem}`, ...others);
    }
    if (alternatives.length > 0) {
      return {
        t: 'atom', index: { t: 'sets', sets: setsOf(ctx, alternatives) }, check: null, description: false,
        // The first level the row is in: title word, stem, part, then creator's, and so on.
        score: { levels: levels.filter((l) => l.sets.length > 0) },
      };
    }
    // A wildcard that stands for no word of the index finds nothing.
    if (wild) return FALSE;
    // A stop word (und, der) must be there as a word of the field, and counts nothing towards the rank.
    return { t: 'atom', index: { t: 'sets', sets: setsOf(ctx, tags.map((tag) => `${tag}:${word}`)) }, check: null, score: null, description: false };
  }

  // A phrase (and exact) or begins_with: the rows with its words in one field, the text decides.
  const prefix = atom.kind === 'prefix';
  const last = atom.words.length - 1;
  const perTag = tags.map((tag): Query => {
    const parts: Query[] = [];
    atom.words.forEach((word, i) => {
      if (prefix && i === last) {
        // The last word may be the beginning of a longer one: it or the words of the index it
        // begins; when too many words begin so, the check alone decides among the rows the
        // other words found.
        const known = info(ctx, word, expansionOf(word, atom, i, false));
        if (!known.more) parts.push({ t: 'sets', sets: setsOf(ctx, [word, ...known.expansions].map((w) => `${tag}:${w}`)) });
      } else {
        parts.push({ t: 'sets', sets: setsOf(ctx, [`${tag}:${word}`]) });
      }
    });
    return andQuery(parts);
  });
  const phrase = atom.words.join(' ');
  // A work's description text holds its type and year after it: a phrase found there is found
  // in it, and the type and year are checked before it, whose text is read from the database.
  const order = (['t', 'c', 'r', 'y', 'd'] as const).filter((tag) => tags.includes(tag));
  const found = (text: string) => (prefix ? text.startsWith(phrase) : ` ${text} `.includes(` ${phrase} `));
  return {
    t: 'atom',
    index: orQuery(perTag),
    description: tags.includes('d') && ctx.kind === 'werk',
    check: (id, texts) => order.some((tag) => found(texts.text(tag, id, prefix))),
    // Type and year before the description, which holds them too: the bonus of a type or year
    // that is the whole phrase is reached, at the same tier.
    score: {
      texts: (id, texts) => {
        for (const tag of order) {
          const text = texts.text(tag, id, prefix);
          if (found(text)) return tiers[tag][0] + (line.whole !== null && text === line.whole ? wholeBonus : 0);
        }
        return 0;
      },
    },
  };
}

function and(parts: Node[]): Node {
  if (parts.some((p) => p.t === 'const' && !p.value)) return FALSE;
  const rest = parts.filter((p) => p.t !== 'const');
  return rest.length === 0 ? TRUE : rest.length === 1 ? rest[0] as Node : { t: 'and', parts: rest };
}

function or(parts: Node[]): Node {
  if (parts.some((p) => p.t === 'const' && p.value)) return TRUE;
  const rest = parts.filter((p) => p.t !== 'const');
  return rest.length === 0 ? FALSE : rest.length === 1 ? rest[0] as Node : { t: 'or', parts: rest };
}

function andQuery(parts: Query[]): Query {
  if (parts.some(isNone)) return NONE;
  const rest = parts.filter((p) => p.t !== 'all');
  return rest.length === 0 ? ALL : rest.length === 1 ? rest[0] as Query : { t: 'and', parts: rest };
}

function orQuery(parts: Query[]): Query {
  if (parts.some((p) => p.t === 'all')) return ALL;
  const rest = parts.filter((p) => !isNone(p));
  return rest.length === 0 ? NONE : rest.length === 1 ? rest[0] as Query : { t: 'or', parts: rest };
}

function isNone(query: Query): boolean {
  return query.t === 'sets' && query.sets.length === 0;
}

function not(part: Node): Node {
  return part.t === 'const' ? { t: 'const', value: !part.value } : { t: 'not', part };
}

function lineNode(line: ParsedLine, ctx: Context): Node {
  return and(line.clauses.map((clause) => or(clause.map((atom) => {
    const node = atomNode(atom, line, ctx);
    return atom.negated ? not(node) : node;
  }))));
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
    case 'const': return true;
    case 'not': return exact(node.part);
    case 'atom': return node.check === null;
    case 'and': case 'or': return node.parts.every(exact);
  }
}

/** The rows the node may hold: all it holds, and more where a check decides. */
function rowsOf(node: Node): Query {
  switch (node.t) {
    case 'const': return node.value ? ALL : NONE;
    case 'atom': return node.index;
    // The rows not having a phrase are not the rows not having its words: all may be.
    case 'not': return exact(node.part) ? notQuery(rowsOf(node.part)) : ALL;
    case 'and': return andQuery(node.parts.map(rowsOf));
    case 'or': return orQuery(node.parts.map(rowsOf));
  }
}

function notQuery(part: Query): Query {
  return part.t === 'all' ? NONE : isNone(part) ? ALL : { t: 'not', part };
}

/**
 * Whether every hit must have some atom: not only NOTs, and no NOT ORed with a word (`haus OR
 * NOT nacht` is nearly every row).
 */
function hasPositive(node: Node): boolean {
  switch (node.t) {
    case 'const': case 'not': return false;
    case 'atom': return true;
    case 'and': return node.parts.some(hasPositive);
    case 'or': return node.parts.every(hasPositive);
  }
}

function scoresOf(node: Node): Score[] {
  switch (node.t) {
    case 'const': case 'not': return [];
    case 'atom': return node.score ? [node.score] : [];
    case 'and': case 'or': return node.parts.flatMap(scoresOf);
  }
}

/** Whether every atom that reads the description must be there: none is under an OR or a NOT. */
function requiredOnly(node: Node, required = true): boolean {
  switch (node.t) {
    case 'const': return true;
    case 'atom': return required || !node.description;
    case 'not': return requiredOnly(node.part, false);
    case 'and': return node.parts.every((p) => requiredOnly(p, required));
    case 'or': return node.parts.every((p) => requiredOnly(p, required && node.parts.length === 1));
  }
}

function needsDescription(node: Node): boolean {
  switch (node.t) {
    case 'const': return false;
    case 'atom': return node.description;
    case 'not': return needsDescription(node.part);
    case 'and': case 'or': return node.parts.some(needsDescription);
  }
}

/** Whether the row is a hit: in the node's sets, and through its checks. */
function holds(node: Node, id: number, texts: TextSource, rows: IdSet): boolean {
  switch (node.t) {
    case 'const': return node.value;
    case 'atom': return contains(node.index, id, rows) && (node.check === null || node.check(id, texts));
    case 'not': return !holds(node.part, id, texts, rows);
    case 'and': return node.parts.every((p) => holds(p, id, texts, rows));
    case 'or': return node.parts.some((p) => holds(p, id, texts, rows));
  }
}

export function contains(query: Query, id: number, rows: IdSet): boolean {
  switch (query.t) {
    case 'all': return rows.has(id);
    case 'sets': return inAny(query.sets, id);
    case 'not': return rows.has(id) && !contains(query.part, id, rows);
    case 'and': return query.parts.every((p) => contains(p, id, rows));
    case 'or': return query.parts.some((p) => contains(p, id, rows));
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
export function kindPlan(lines: readonly ParsedLine[], kind: Kind, words: Map<string, WordInfo>, index: WordIndex): Plan | null {
  const ctx: Context = { kind, words, index };
  const node = queryNode(lines, ctx);
  if (node.t === 'const' && !node.value) return null;
  if (!hasPositive(node)) {
    throw new HttpError(400, `The search ${quoteTerms(lines)} has no word that must be there: add one outside NOT, and do not OR a NOT with a word.`);
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
