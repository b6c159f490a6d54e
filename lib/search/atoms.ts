// One atom of a query line (a word, a phrase, a begins_with) for one kind of row: the rows its
// lexemes give in the word index (words tagged with their field, sql/009_search_words.sql), the
// check on the row's folded text where the lexemes cannot tell, and its score.
import type { IdSet } from './id-set.ts';
import type { Atom, Field, ParsedLine } from './language.ts';
import type { Query } from './set-query.ts';
import { andQuery, orQuery } from './set-query.ts';
import type { Kind, Tag, TextSource } from './texts.ts';
import type { Expansion, WordInfo } from './vocabulary.ts';
import { expansionOf, lookupKey } from './words.ts';
import type { WordIndex } from './word-index.ts';

const fieldTags: Record<Field, readonly Tag[]> = {
  any: ['t', 'c', 'd', 'r', 'y'],
  title: ['t'],
  creator: ['c'],
  desc: ['d'],
  rtype: ['r'],
  cdate: ['y'],
};
const kindTags: Record<Kind, readonly Tag[]> = { person: ['c'], werk: ['t', 'c', 'd', 'r', 'y'] };
/** Rank of a match: the field first (title, creator, the rest), then whole word, stem, compound part. */
const tiers: Record<Tag, [word: number, stem: number, part: number]> = {
  t: [9, 8, 7],
  c: [6, 5, 4],
  d: [3, 2, 1],
  r: [3, 2, 1],
  y: [3, 2, 1],
};
/** Bonus of an exact phrase that is the field's whole text. */
const wholeBonus = 20;
/** A check on a row's folded text (phrases, exact, begins_with); true when it passes. */
type Check = (id: number, texts: TextSource) => boolean;
/**
 * A row's score for one atom: the tier of the first level whose sets have the row (a word's),
 * or what the row's texts give (a phrase's).
 */
export type Score =
  | { levels: { sets: IdSet[]; tier: number }[] }
  | { texts: (id: number, texts: TextSource) => number };

/** A query's tree: atoms joined by and, or and not, and what a join of them leaves (true, false). */
export type Node =
  | { t: 'const'; value: boolean }
  | { t: 'and' | 'or'; parts: Node[] }
  | { t: 'not'; part: Node }
  | { t: 'atom'; index: Query; check: Check | null; score: Score | null; description: boolean };

export const TRUE: Node = { t: 'const', value: true };
export const FALSE: Node = { t: 'const', value: false };

export interface Context {
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

/** One atom for one kind of row: its rows, its check, its score. */
export function atomNode(atom: Atom, line: ParsedLine, ctx: Context): Node {
  // Years are numbers: a word with a letter is not looked for among them.
  const tags = fieldTags[line.condition.field].filter(
    (t) => kindTags[ctx.kind].includes(t) && (t !== 'y' || atom.words.every((w) => /^-?[0-9*?]+$/.test(w))),
  );
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
      levels.push(
        { sets: setsOf(ctx, exact), tier: wordTier },
        { sets: setsOf(ctx, stem), tier: stemTier },
        { sets: setsOf(ctx, parts), tier: partTier },
      );
      // A row with the whole word has its stem's lexeme too: the stem's rows are the word's.
      alternatives.push(...(stem.length > 0 ? stem : exact), ...parts);
    }
    // A work's stem in any of its fields is one set (lexemes.ts, Lexemes).
    const stemmed = ['t', 'c', 'd', 'r'] as const;
    if (ctx.kind === 'werk' && !wild && known.stem !== null && stemmed.every((tag) => tags.includes(tag))) {
      const others = alternatives.filter((l) => !stemmed.some((tag) => l === `${tag}s:${known.stem}`));
      alternatives.splice(0, alternatives.length, `*s:${known.stem}`, ...others);
    }
    if (alternatives.length > 0) {
      return {
        t: 'atom',
        index: { t: 'sets', sets: setsOf(ctx, alternatives) },
        check: null,
        description: false,
        // The first level the row is in: title word, stem, part, then creator's, and so on.
        score: { levels: levels.filter((l) => l.sets.length > 0) },
      };
    }
    // A wildcard that stands for no word of the index finds nothing.
    if (wild) return FALSE;
    // A stop word (und, der) must be there as a word of the field, and counts nothing towards the rank.
    return {
      t: 'atom',
      index: {
        t: 'sets',
        sets: setsOf(
          ctx,
          tags.map((tag) => `${tag}:${word}`),
        ),
      },
      check: null,
      score: null,
      description: false,
    };
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
        if (!known.more)
          parts.push({
            t: 'sets',
            sets: setsOf(
              ctx,
              [word, ...known.expansions].map((w) => `${tag}:${w}`),
            ),
          });
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
