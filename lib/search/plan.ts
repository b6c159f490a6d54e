// From parsed query lines to SQL (docs/interface.md, Search). Each person and work carries
// its words as tagged lexemes (sql/009_search_words.sql); an atom becomes a tsquery over the
// tags of its field, a GIN index probe, and where the index cannot tell (phrases, begins_with)
// a check on the folded text of the rows the probe found. A search takes at most
// `cap` persons and `cap` works from the index, ranks and counts those, and says when there
// were more: the cost of any search is bounded by the cap, not by the size of the tables.
import { clip, HttpError } from '../http/index.ts';
import type { Atom, Field, ParsedLine } from './language.ts';

export type Kind = 'person' | 'werk';
type Tag = 't' | 'c' | 'd' | 'r' | 'y';

const fieldTags: Record<Field, readonly Tag[]> = {
  any: ['t', 'c', 'd', 'r', 'y'], title: ['t'], creator: ['c'], desc: ['d'], rtype: ['r'], cdate: ['y'],
};
const kindTags: Record<Kind, readonly Tag[]> = { person: ['c'], werk: ['t', 'c', 'd', 'r', 'y'] };
/** Rank of a match: the field first (title, creator, the rest), then whole word, stem, compound part. */
const tiers: Record<Tag, [word: number, stem: number, part: number]> = {
  t: [9, 8, 7], c: [6, 5, 4], d: [3, 2, 1], r: [3, 2, 1], y: [3, 2, 1],
};
/** The folded text each tag's field has, for the checks an index cannot make. */
const texts: Record<Kind, Partial<Record<Tag, string>>> = {
  person: { c: 'p.suche_name' },
  werk: {
    t: 'w.suche_titel', c: '(SELECT p.suche_name FROM person p WHERE p.id = w.person_id)',
    d: 'w.suche_text', r: 'search_fold(w.art)', y: "coalesce(w.jahr::text, '')",
  },
};
/** Bonus of an exact phrase that is the field's whole text. */
const wholeBonus = 20;

/** What the index knows of a query word: its stem (null for a stop word) and the words it stands for. */
export interface WordInfo {
  stem: string | null;
  /** Words of the index containing it (compound parts) or matching its wildcards, shortest first. */
  expansions: string[];
  /** True when there were more expansions than were taken. */
  more: boolean;
}

/** What to look up for a query word: its stem and which other words of the index it stands for. */
export interface WordLookup {
  word: string;
  /** A LIKE pattern over the index's words, or null. */
  pattern: string | null;
}

/** Shorter parts of compounds would stand for too many words (er, en). */
const minPart = 3;

/**
 * The LIKE pattern over the index's words that a query word stands for, or null: its wildcards,
 * the words a begins_with's last word begins, the compounds a contains word is part of.
 */
function patternOf(word: string, atom: Atom, i: number, contains: boolean): string | null {
  if (/[*?]/.test(word)) return word.replace(/\*+/g, '%').replace(/\?/g, '_');
  if (atom.kind === 'prefix' && i === atom.words.length - 1) return `${word}%`;
  return contains && atom.kind === 'word' && word.length >= minPart ? `%${word}%` : null;
}

export function lookupsOf(lines: readonly ParsedLine[]): WordLookup[] {
  const lookups = new Map<string, WordLookup>();
  for (const line of lines) {
    for (const atom of line.clauses.flat()) {
      atom.words.forEach((word, i) => {
        const pattern = patternOf(word, atom, i, line.condition.match === 'contains');
        lookups.set(lookupKey(word, pattern), { word, pattern });
      });
    }
  }
  return [...lookups.values()];
}

export function lookupKey(word: string, pattern: string | null): string {
  return `${word} ${pattern ?? ''}`;
}

/** The query's stop words: those the index has no stem for. */
export function stopWordsOf(words: Map<string, WordInfo>): Set<string> {
  return new Set([...words].filter(([, info]) => info.stem === null).map(([key]) => key.slice(0, key.indexOf(' '))));
}

/** SQL parameters, numbered as they are added. */
export class Params {
  readonly values: unknown[] = [];
  add(value: unknown): string {
    this.values.push(value);
    return `$${this.values.length}`;
  }
}

/**
 * A piece of SQL whose values become parameters only when it is written out: a query is built
 * from more pieces than it uses (a NOT needs no score), and PostgreSQL refuses a parameter no
 * statement mentions.
 */
class Sql {
  constructor(readonly parts: readonly (string | Sql | { value: unknown })[]) {}

  write(params: Params): string {
    return this.parts.map((p) => (typeof p === 'string' ? p : p instanceof Sql ? p.write(params) : params.add(p.value))).join('');
  }
}

/** sql`a = ${value}`: values become parameters, Sql pieces are written in place. */
function sql(strings: TemplateStringsArray, ...values: unknown[]): Sql {
  const parts: (string | Sql | { value: unknown })[] = [];
  strings.forEach((text, i) => {
    parts.push(text);
    if (i < values.length) parts.push(values[i] instanceof Sql ? values[i] as Sql : { value: values[i] });
  });
  return new Sql(parts);
}

const raw = (text: string) => new Sql([text]);

function joined(pieces: readonly Sql[], separator: string): Sql {
  return new Sql(pieces.flatMap((p, i) => (i === 0 ? [p] : [separator, p])));
}

type Expr =
  | { t: 'const'; value: boolean }
  | { t: 'and' | 'or'; parts: Expr[] }
  | { t: 'not'; part: Expr }
  | { t: 'atom'; index: string | null; check: Sql | null; score: Sql };

const TRUE: Expr = { t: 'const', value: true };
const FALSE: Expr = { t: 'const', value: false };

interface Context {
  kind: Kind;
  words: Map<string, WordInfo>;
  column: Sql;
  /** Whether stop words are probed in the index: only beside a rarer word (kindQuery). */
  stops: boolean;
}

const lexeme = (tag: string, word: string) => `'${tag}:${word}'`;
const any = (alternatives: readonly string[]) => (alternatives.length === 1 ? alternatives[0] as string : `(${alternatives.join(' | ')})`);
const all = (parts: readonly string[]) => (parts.length === 1 ? parts[0] as string : `(${parts.join(' & ')})`);

function info(ctx: Context, word: string, pattern: string | null): WordInfo {
  return ctx.words.get(lookupKey(word, pattern)) ?? { stem: null, expansions: [], more: false };
}

/** One atom for one kind of row: an index probe, a check, and its score. */
function atomExpr(atom: Atom, line: ParsedLine, ctx: Context): Expr {
  // Years are numbers: a word with a letter is not looked for among them.
  const tags = fieldTags[line.condition.field].filter((t) => kindTags[ctx.kind].includes(t) && (t !== 'y' || atom.words.every((w) => /^-?[0-9*?]+$/.test(w))));
  if (tags.length === 0) return FALSE;
  const contains = line.condition.match === 'contains';
  const { column } = ctx;
  const test = (query: string) => sql`${column} @@ ${query}::tsquery`;

  if (atom.kind === 'word') {
    const [word] = atom.words as [string];
    const wild = /[*?]/.test(word);
    const known = info(ctx, word, patternOf(word, atom, 0, contains));
    const cases: Sql[] = [];
    const alternatives: string[] = [];
    for (const tag of tags) {
      const [wordTier, stemTier, partTier] = tiers[tag];
      const exact = wild ? known.expansions.map((e) => lexeme(tag, e)) : known.stem === null ? [] : [lexeme(tag, word)];
      const stem = !wild && known.stem !== null && tag !== 'y' ? [lexeme(`${tag}s`, known.stem)] : [];
      // A stop word inside other words (der in Wanderer) is no compound part.
      const parts = wild || known.stem === null ? [] : known.expansions.map((e) => lexeme(tag, e));
      if (exact.length) cases.push(sql`WHEN ${test(any(exact))} THEN ${raw(String(wordTier))}`);
      if (stem.length) cases.push(sql`WHEN ${test(any(stem))} THEN ${raw(String(stemTier))}`);
      if (parts.length) cases.push(sql`WHEN ${test(any(parts))} THEN ${raw(String(partTier))}`);
      // A row with the whole word has its stem's entry too: the probe reads the stem's alone.
      alternatives.push(...(stem.length > 0 ? stem : exact), ...parts);
    }
    if (alternatives.length > 0) {
      return { t: 'atom', index: any(alternatives), check: null, score: sql`CASE ${joined(cases, ' ')} ELSE 0 END` };
    }
    // A wildcard that stands for no word of the index finds nothing.
    if (wild) return FALSE;
    // A stop word (und, der) counts nothing towards the rank. Beside a rarer word, the index
    // finds it; alone, its text is read in rows until enough have it (they are in most).
    if (ctx.stops) return { t: 'atom', index: any(tags.map((tag) => lexeme(tag, word))), check: null, score: raw('0') };
    return { t: 'atom', index: null, check: textCheck(tags, ctx, `% ${word} %`, true), score: raw('0') };
  }

  // A phrase (and exact) or begins_with: the index finds rows with its words, the text decides.
  const prefix = atom.kind === 'prefix';
  const last = atom.words.length - 1;
  const perTag = tags.map((tag) => {
    const parts: string[] = [];
    atom.words.forEach((word, i) => {
      if (prefix && i === last) {
        // The last word may be the beginning of a longer one: it or the words of the index it
        // begins; for a stop word, or when too many words begin so, the text check alone decides
        // among the rows the other words found.
        const known = info(ctx, word, patternOf(word, atom, i, false));
        if ((known.stem !== null || ctx.stops) && !known.more) parts.push(any([lexeme(tag, word), ...known.expansions.map((e) => lexeme(tag, e))]));
      } else if (ctx.stops || info(ctx, word, patternOf(word, atom, i, false)).stem !== null) {
        parts.push(lexeme(tag, word));
      }
    });
    return { tag, parts };
  });
  const phrase = atom.words.join(' ');
  const pattern = prefix ? `${phrase}%` : `% ${phrase} %`;
  const indexed = perTag.every(({ parts }) => parts.length > 0) ? any(perTag.map(({ parts }) => all(parts))) : null;
  // Type and year before the description, which holds them too (suche_text): the bonus of a
  // type or year that is the whole phrase is reached, at the same tier.
  const caseOrder: Tag[] = ['t', 'c', 'r', 'y', 'd'];
  const cases = [...perTag].sort((a, b) => caseOrder.indexOf(a.tag) - caseOrder.indexOf(b.tag)).map(({ tag }) => {
    const text = startOf(ctx.kind, tag, prefix);
    const whole = line.whole === null ? raw('') : sql` + CASE WHEN ${raw(text)} = ${line.whole} THEN ${raw(String(wholeBonus))} ELSE 0 END`;
    return sql`WHEN ${textLike(text, pattern, !prefix)} THEN ${raw(String(tiers[tag][0]))}${whole}`;
  });
  return {
    t: 'atom',
    index: indexed,
    check: textCheck(tags, ctx, pattern, !prefix),
    score: sql`CASE ${joined(cases, ' ')} ELSE 0 END`,
  };
}

/**
 * The text a field begins with: a work's suche_text holds its type and year after the
 * description, so without a description it begins with the type, which begins_with on desc
 * must not find.
 */
function startOf(kind: Kind, tag: Tag, prefix: boolean): string {
  const text = texts[kind][tag] as string;
  return prefix && kind === 'werk' && tag === 'd' ? `(CASE WHEN search_fold(coalesce(w.beschreibung, '')) <> '' THEN ${text} ELSE '' END)` : text;
}

function textLike(text: string, pattern: string, padded: boolean): Sql {
  return sql`${raw(padded ? `(' ' || ${text} || ' ')` : text)} LIKE ${pattern}`;
}

function textCheck(tags: readonly Tag[], ctx: Context, pattern: string, padded: boolean): Sql {
  // A work's suche_text holds its type and year after the description: a word or phrase found
  // in those is found in it. The creator's name, a lookup per row, is read last.
  const implied = padded && ctx.kind === 'werk' && tags.includes('d') ? ['r', 'y'] : [];
  const order = (tag: Tag) => (tag === 'c' ? 1 : 0);
  const columns = [...new Set(tags.filter((tag) => !implied.includes(tag)).sort((a, b) => order(a) - order(b))
    .map((tag) => startOf(ctx.kind, tag, !padded)))];
  return sql`(${joined(columns.map((text) => textLike(text, pattern, padded)), ' OR ')})`;
}

function lineExpr(line: ParsedLine, ctx: Context): Expr {
  return and(line.clauses.map((clause) => or(clause.map((atom) => {
    const expr = atomExpr(atom, line, ctx);
    return atom.negated ? not(expr) : expr;
  }))));
}

function and(parts: Expr[]): Expr {
  if (parts.some((p) => p.t === 'const' && !p.value)) return FALSE;
  const rest = parts.filter((p) => p.t !== 'const');
  return rest.length === 0 ? TRUE : rest.length === 1 ? rest[0] as Expr : { t: 'and', parts: rest };
}

function or(parts: Expr[]): Expr {
  if (parts.some((p) => p.t === 'const' && p.value)) return TRUE;
  const rest = parts.filter((p) => p.t !== 'const');
  return rest.length === 0 ? FALSE : rest.length === 1 ? rest[0] as Expr : { t: 'or', parts: rest };
}

function not(part: Expr): Expr {
  return part.t === 'const' ? { t: 'const', value: !part.value } : { t: 'not', part };
}

/** Lines joined as their operators say, left to right (Primo's advanced search). */
function queryExpr(lines: readonly ParsedLine[], ctx: Context): Expr {
  let expr = lineExpr(lines[0] as ParsedLine, ctx);
  for (let i = 1; i < lines.length; i++) {
    const next = lineExpr(lines[i] as ParsedLine, ctx);
    const operator = lines[i - 1]?.condition.operator ?? 'AND';
    expr = operator === 'OR' ? or([expr, next]) : and([expr, operator === 'NOT' ? not(next) : next]);
  }
  return expr;
}

/**
 * The whole condition in SQL. Under `probed`, the rows are those the index query found: an atom
 * that must be there (the query itself, or a part of an AND of it) needs its check only, as
 * probing the index with it again would read its entries twice.
 */
function predicate(expr: Expr, ctx: Context, probed = false): Sql {
  switch (expr.t) {
    case 'const': return raw(expr.value ? 'TRUE' : 'FALSE');
    case 'and': return sql`(${joined(expr.parts.map((p) => predicate(p, ctx, probed)), ' AND ')})`;
    case 'or': return sql`(${joined(expr.parts.map((p) => predicate(p, ctx)), ' OR ')})`;
    case 'not': return sql`NOT ${predicate(expr.part, ctx)}`;
    case 'atom': {
      const index = expr.index === null || probed ? null : sql`${ctx.column} @@ ${expr.index}::tsquery`;
      const parts = [index, expr.check].filter((p): p is Sql => p !== null);
      return parts.length === 0 ? raw('TRUE') : parts.length === 1 ? parts[0] as Sql : sql`(${joined(parts, ' AND ')})`;
    }
  }
}

/** What every hit must have in the index: true where the index cannot tell (a NOT, a stop word). */
function indexQuery(expr: Expr): string | true {
  switch (expr.t) {
    case 'const': return true;
    case 'not': return true;
    case 'atom': return expr.index ?? true;
    case 'and': {
      const parts = expr.parts.map(indexQuery).filter((p): p is string => p !== true);
      return parts.length === 0 ? true : all(parts);
    }
    case 'or': {
      const parts = expr.parts.map(indexQuery);
      return parts.some((p) => p === true) ? true : any(parts as string[]);
    }
  }
}

/**
 * Whether every hit must have some atom: not only NOTs, and no NOT ORed with a word (`haus OR
 * NOT nacht` is nearly every row, read one by one).
 */
function hasPositive(expr: Expr): boolean {
  switch (expr.t) {
    case 'const': case 'not': return false;
    case 'atom': return true;
    case 'and': return expr.parts.some(hasPositive);
    case 'or': return expr.parts.every(hasPositive);
  }
}

/** Whether the index query alone decides: no text checks and nothing negated. */
function exact(expr: Expr): boolean {
  switch (expr.t) {
    case 'const': return true;
    case 'not': return false;
    case 'atom': return expr.check === null && expr.index !== null;
    case 'and': case 'or': return expr.parts.every(exact);
  }
}

function scoreOf(expr: Expr): Sql[] {
  switch (expr.t) {
    case 'const': case 'not': return [];
    case 'atom': return [expr.score];
    case 'and': case 'or': return expr.parts.flatMap(scoreOf);
  }
}

/** Whether everything the lines ask for must be there: no OR between words or lines. */
function allRequired(lines: readonly ParsedLine[]): boolean {
  // The last line's operator joins it to nothing.
  return lines.every((line, i) => (i === lines.length - 1 || line.condition.operator !== 'OR') && line.clauses.every((clause) => clause.length === 1));
}

export interface KindQuery {
  /**
   * The parameter holding the index query every row must match (tsquery text, its lexemes
   * without the block: lib/search/run.ts probes one block after the other), or null for a
   * search of stop words alone, which no index narrows: rows are read until enough have them.
   */
  probe: string | null;
  /** What the rows the probe found must have besides (TRUE when the index query says it all). */
  where: string;
  score: string;
}

/**
 * The query for one kind of row, or null when none can match (a title search finds no person).
 * 400 for a search of NOTs alone, or of a NOT ORed with a word: it would read nearly every row.
 */
export function kindQuery(lines: readonly ParsedLine[], kind: Kind, words: Map<string, WordInfo>, params: Params): KindQuery | null {
  const plain: Context = { kind, words, column: raw(kind === 'person' ? 'p.suche' : 'w.suche'), stops: false };
  let ctx = plain;
  let expr = queryExpr(lines, ctx);
  if (expr.t === 'const' && !expr.value) return null;
  // A stop word's entry is as long as the table, a block's up to 65,536 rows. It is read where
  // a rarer word must be there too, which the index walks and skips the long entry by, and
  // where the search has stop words only, all of which must be there: the index reads the
  // rarest one's entries. Where it ORs them, the rows are read instead until enough have one
  // of them, which most do.
  if (indexQuery(expr) !== true || allRequired(lines)) {
    ctx = { ...plain, stops: true };
    expr = queryExpr(lines, ctx);
  }
  const index = indexQuery(expr);
  const scores = scoreOf(expr);
  if (index === true) {
    if (!hasPositive(expr)) {
      const terms = lines.map((l) => `"${clip(l.condition.term, 40)}"`).join(', ');
      throw new HttpError(400, `The search ${terms} has no word that must be there: add one outside NOT, and do not OR a NOT with a word.`);
    }
    return { probe: null, where: predicate(expr, ctx).write(params), score: scores.length ? joined(scores, ' + ').write(params) : '0' };
  }
  return {
    probe: params.add(index),
    // Where the index query says it all (words, ORs, no phrase, no NOT), nothing is checked again.
    where: exact(expr) ? 'TRUE' : predicate(expr, ctx, true).write(params),
    score: scores.length ? joined(scores, ' + ').write(params) : '0',
  };
}
