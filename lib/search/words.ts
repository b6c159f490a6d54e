// A query's words as the vocabulary is asked about them (lib/search/vocabulary.ts): what each word
// stands for besides itself, and, from the answers, the query's stop words and the words the HTML
// list marks.
import type { Atom, ParsedLine } from './language.ts';
import type { Expansion, WordInfo } from './vocabulary.ts';

/** Shorter parts of compounds would stand for too many words (er, en). */
const minPart = 3;

/** What to look up for a query word: its stem, and which other words of the index it stands for. */
export interface WordLookup {
  word: string;
  expansion: Expansion | null;
}

/**
 * The words of the index a query word stands for besides itself: those its wildcards match, those
 * a begins_with's last word begins, the compounds a contains word is part of.
 */
export function expansionOf(word: string, atom: Atom, i: number, contains: boolean): Expansion | null {
  if (/[*?]/.test(word)) return { kind: 'wildcard', word };
  if (atom.kind === 'prefix' && i === atom.words.length - 1) return { kind: 'begins', word };
  return contains && atom.kind === 'word' && word.length >= minPart ? { kind: 'part', word } : null;
}

export function lookupsOf(lines: readonly ParsedLine[]): WordLookup[] {
  const lookups = new Map<string, WordLookup>();
  for (const line of lines) {
    for (const atom of line.clauses.flat()) {
      atom.words.forEach((word, i) => {
        const expansion = expansionOf(word, atom, i, line.condition.match === 'contains');
        lookups.set(lookupKey(word, expansion), { word, expansion });
      });
    }
  }
  return [...lookups.values()];
}

export function lookupKey(word: string, expansion: Expansion | null): string {
  return `${word} ${expansion?.kind ?? ''}`;
}

/** The query's stop words: those the index has no stem for. */
export function stopWordsOf(words: Map<string, WordInfo>): Set<string> {
  return new Set([...words].filter(([, info]) => info.stem === null).map(([key]) => key.slice(0, key.indexOf(' '))));
}

/** The folded words the HTML list marks: the query's words, their stems and the words they stood for. */
export function marksOf(lines: readonly ParsedLine[], words: Map<string, WordInfo>): string[] {
  // Stop words (no stem) count nothing and are no compound parts: marked, der would mark
  // Wanderung and Felder.
  const stops = stopWordsOf(words);
  const marks = new Set<string>();
  for (const atom of lines.flatMap((l) => l.clauses.flat())) {
    if (atom.negated) continue;
    for (const word of atom.words) if (!/[*?]/.test(word) && !stops.has(word)) marks.add(word);
  }
  for (const info of words.values()) {
    if (info.stem) marks.add(info.stem);
    if (!info.more) for (const e of info.expansions) marks.add(e);
  }
  return [...marks];
}
