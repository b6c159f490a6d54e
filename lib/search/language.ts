// Primo's query language as the search URL writes it (docs/interface.md, Search): a query line
// is <field>,<match>,<term>[,AND|OR|NOT]; a contains term holds words, "quoted phrases", AND,
// OR and NOT in capitals, and the wildcards * and ? inside or at the end of a word. Parsing
// turns each line into clauses of atoms; lib/search/plan.ts turns those into a plan over the word index.
import { clip, controlCharacters, HttpError } from '../http/index.ts';

export const fields = ['any', 'title', 'creator', 'desc', 'rtype', 'cdate'] as const;
export const matches = ['contains', 'exact', 'begins_with'] as const;
export const operators = ['AND', 'OR', 'NOT'] as const;
export type Field = (typeof fields)[number];
export type Match = (typeof matches)[number];
export type Operator = (typeof operators)[number];

/** One line as the URL gives it; operator joins it with the next line (AND when absent). */
export interface Condition {
  field: Field;
  match: Match;
  term: string;
  operator?: Operator;
}

/** A word or a phrase to look for, in words as the index folds them. */
export interface Atom {
  kind: 'word' | 'phrase' | 'prefix';
  /** Folded words (a word atom has one; its * and ? are kept). */
  words: string[];
  /** As the user wrote it, for the did-you-mean link. */
  raw: string;
  negated: boolean;
}

/** A line after parsing: every clause must hold; a clause holds when one of its atoms does. */
export interface ParsedLine {
  condition: Condition;
  clauses: Atom[][];
  /** exact: the field's whole text is the phrase (ranked first among the phrase's hits). */
  whole: string | null;
}

export const maxTermLength = 200;
/** Words and phrases in all lines together: each costs an index lookup or more. */
export const maxAtoms = 12;
/** Letters a wildcard needs before it: "a*" stands for a good part of the index's words. */
export const wildcardPrefix = 2;
/** Words with wildcards in all lines together: each stands for up to dozens of words. */
export const maxWildcards = 4;
/** The index leaves out longer "words" (sql/010_search_index.sql): no one searches for them. */
export const maxWordLength = 100;

const conditionHelp = `must read <field>,<match>,<term> or <field>,<match>,<term>,<AND|OR|NOT>, e.g. any,contains,Müller; fields: ${fields.join(', ')}; match types: ${matches.join(', ')}`;

/**
 * The words of a text as the index has them (sql/009_search_words.sql, search_fold): the
 * same steps in the same order, so a query word meets the word it stands for.
 */
export function fold(text: string): string {
  return text
    .replace(/ß|ẞ/g, 'ss')
    .replace(/æ|Æ/g, 'ae')
    .replace(/œ|Œ/g, 'oe')
    .normalize('NFD')
    .replace(/[\u0300-\u036f]/g, '')
    .replace(/[øØđĐłŁı]/g, (c) => undecomposed[c] as string)
    .replace(/[A-Z]/g, (c) => c.toLowerCase())
    .replace(/[^a-z0-9]+/g, ' ')
    .replaceAll('ae', 'a')
    .replaceAll('oe', 'o')
    .replaceAll('que', 'QUE')
    .replaceAll('ue', 'u')
    .replaceAll('QUE', 'que')
    .trim();
}

/** Letters with a stroke that no decomposition takes apart. */
const undecomposed: Record<string, string> = { ø: 'o', Ø: 'o', đ: 'd', Đ: 'd', ł: 'l', Ł: 'l', ı: 'i' };

/** query=<field>,<match>,<term>[,<operator>]: the term keeps its own commas. */
export function parseCondition(raw: string): Condition {
  const first = raw.indexOf(',');
  const second = first === -1 ? -1 : raw.indexOf(',', first + 1);
  if (second === -1) throw new HttpError(400, `Parameter query ${conditionHelp}.`);
  let term = raw.slice(second + 1);
  let operator: Operator | undefined;
  const tail = /,(AND|OR|NOT)$/.exec(term);
  if (tail) {
    operator = tail[1] as Operator;
    term = term.slice(0, tail.index);
  }
  return checkCondition(raw.slice(0, first), raw.slice(first + 1, second), term, 'query', operator);
}

export function checkCondition(
  field: string,
  match: string,
  term: string,
  parameter: string,
  operator?: Operator,
): Condition {
  if (!(fields as readonly string[]).includes(field)) {
    throw new HttpError(
      400,
      `Unknown search field "${clip(field)}" in parameter ${parameter}; allowed fields: ${fields.join(', ')}.`,
    );
  }
  if (!(matches as readonly string[]).includes(match)) {
    throw new HttpError(
      400,
      `Unknown match type "${clip(match)}" in parameter ${parameter}; allowed match types: ${matches.join(', ')}.`,
    );
  }
  const trimmed = term.trim();
  if (trimmed === '') throw new HttpError(400, `The search term in parameter ${parameter} is empty.`);
  if ([...trimmed].length > maxTermLength)
    throw new HttpError(400, `The search term in parameter ${parameter} is longer than ${maxTermLength} characters.`);
  if (trimmed.includes('\0'))
    throw new HttpError(400, `The search term in parameter ${parameter} contains a NUL byte; remove it and try again.`);
  if (controlCharacters.test(trimmed))
    throw new HttpError(
      400,
      `The search term in parameter ${parameter} contains a control character; remove it and try again.`,
    );
  return { field: field as Field, match: match as Match, term: trimmed, ...(operator ? { operator } : {}) };
}

/** The folded words of a text; in cdate (signed), a year before 1 keeps its sign (-5), which folding would drop. */
function wordsOf(text: string, signed: boolean): string[] {
  return signed && /^-[0-9]+$/.test(text) ? [text] : fold(text).split(' ').filter(Boolean);
}

/** The clauses of a line; 400 with what to change when the term cannot be searched. */
export function parseLine(condition: Condition): ParsedLine {
  const signed = condition.field === 'cdate';
  if (condition.match !== 'contains') {
    const words = wordsOf(condition.term, signed);
    const kind = condition.match === 'exact' ? 'phrase' : 'prefix';
    return {
      condition,
      // A term without letters or digits (%, &) finds nothing: a clause of no atoms.
      clauses: [words.length === 0 ? [] : [{ kind, words, raw: condition.term, negated: false }]],
      whole: condition.match === 'exact' ? words.join(' ') : null,
    };
  }
  return { condition, clauses: parseContains(condition.term, signed), whole: null };
}

type Token = { type: 'word' | 'phrase'; text: string } | { type: 'op'; op: Operator };

function tokenize(term: string): Token[] {
  const tokens: Token[] = [];
  const pattern = /"([^"]*)"?|(\S+)/g;
  for (let m = pattern.exec(term); m; m = pattern.exec(term)) {
    if (m[1] !== undefined) tokens.push({ type: 'phrase', text: m[1] });
    else if (m[2] === 'AND' || m[2] === 'OR' || m[2] === 'NOT') tokens.push({ type: 'op', op: m[2] });
    else tokens.push({ type: 'word', text: m[2] as string });
  }
  return tokens;
}

/**
 * Words side by side must all be there (AND between them changes nothing), OR joins its two
 * neighbours into one clause, NOT excludes the word or phrase after it: a b OR c NOT d is
 * a and (b or c) and not d, as Primo's simple search reads it.
 */
function parseContains(term: string, signed: boolean): Atom[][] {
  const clauses: Atom[][] = [];
  let negate = false;
  let join = false;
  for (const token of tokenize(term)) {
    if (token.type === 'op') {
      if (token.op === 'NOT') negate = true;
      else if (token.op === 'OR') join = clauses.length > 0;
      continue;
    }
    for (const atom of atomsOf(token.type, token.text, negate, signed)) {
      const last = clauses[clauses.length - 1];
      if (join && last) last.push(atom);
      else clauses.push([atom]);
      join = false;
    }
    negate = false;
  }
  // A term without letters or digits (%, &) finds nothing: a clause of no atoms.
  return clauses.length === 0 ? [[]] : clauses;
}

/** A token as atoms: a phrase is one; a word the folding splits (o'brien) is a phrase of its parts. */
function atomsOf(type: 'word' | 'phrase', text: string, negated: boolean, signed: boolean): Atom[] {
  if (type === 'phrase' || !/[*?]/.test(text)) {
    const words = wordsOf(text, signed);
    if (words.length === 0) return [];
    return [{ kind: words.length === 1 && type === 'word' ? 'word' : 'phrase', words, raw: text, negated }];
  }
  // A word with wildcards: fold the letters around them.
  const parts = text.split(/([*?]+)/).map((part, i) => (i % 2 === 1 ? part : fold(part).replace(/ /g, '')));
  const word = parts.join('');
  if (/^[*?]/.test(word) || word.replace(/[*?]/g, '').length === 0) {
    throw new HttpError(
      400,
      `The wildcard in "${clip(text)}" begins the word; a word may have * or ? inside or at its end, not at its start.`,
    );
  }
  const prefix = /^[a-z0-9]*/.exec(word)?.[0] ?? '';
  if (prefix.length < wildcardPrefix) {
    throw new HttpError(
      400,
      `The word "${clip(text)}" needs at least ${wildcardPrefix} letters before its first wildcard.`,
    );
  }
  return [{ kind: 'word', words: [word], raw: text, negated }];
}

/** The lines' terms as a message quotes them: "hafen", "der die". */
export function quoteTerms(lines: readonly ParsedLine[]): string {
  return lines.map((l) => `"${clip(l.condition.term, 40)}"`).join(', ');
}

/** Every line's atoms, within the bound on how many a search may have. */
export function parseLines(conditions: readonly Condition[]): ParsedLine[] {
  const lines = conditions.map(parseLine);
  const atoms = lines.reduce((n, line) => n + line.clauses.flat().length, 0);
  if (atoms > maxAtoms) {
    throw new HttpError(
      400,
      `The search has ${atoms} words and phrases; at most ${maxAtoms} are searched together. Leave some out.`,
    );
  }
  const long = lines
    .flatMap((line) => line.clauses.flat())
    .find((a) => a.words.some((w) => w.replace(/[*?-]/g, '').length > maxWordLength));
  if (long) {
    throw new HttpError(
      400,
      `"${clip(long.raw)}" has a word of more than ${maxWordLength} letters, which the index does not keep; search for a shorter part of it with *.`,
    );
  }
  const wild = lines.reduce(
    (n, line) => n + line.clauses.flat().filter((a) => a.words.some((w) => /[*?]/.test(w))).length,
    0,
  );
  if (wild > maxWildcards) {
    throw new HttpError(
      400,
      `The search has ${wild} words with * or ?; at most ${maxWildcards} are searched together. Write some of them out.`,
    );
  }
  return lines;
}
