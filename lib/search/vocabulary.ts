// Every word the index has seen (search_word, sql/009_search_words.sql) with its German stem, kept
// in the process: the words a compound part is part of (schicht → nachtschicht), that a wildcard
// stands for (nacht* → nachts) or that a begins_with's last word begins are looked up here, in a
// sorted list for beginnings and by trigrams for parts, and come shortest first (docs/interface.md,
// Search).

import type { SnapshotReader, SnapshotWriter } from './snapshot.ts';
import { nextTurn } from './turns.ts';

/** What the index knows of a query word: its stem (null for a stop word) and the words it stands for. */
export interface WordInfo {
  stem: string | null;
  /** Words of the index containing it (compound parts) or matching its wildcards, shortest first. */
  expansions: string[];
  /** True when there were more expansions than were taken. */
  more: boolean;
}

/** Which other words a query word stands for: those it begins, those it is part of, those its wildcards match. */
export type Expansion = { kind: 'begins' | 'part'; word: string } | { kind: 'wildcard'; word: string };

/** Words taken back between two turns of the event loop. */
const restoreSlice = 5000;

export class Vocabulary {
  /** Each word's stem; null for a stop word, which to_tsvector leaves out. */
  private readonly stems = new Map<string, string | null>();
  private sorted: string[] = [];
  private unsorted: string[] = [];
  private readonly trigrams = new Map<string, string[]>();

  get size(): number {
    return this.stems.size;
  }

  /** The stem of a word of the vocabulary (null for a stop word); undefined for another word. */
  stemOf(word: string): string | null | undefined {
    return this.stems.get(word);
  }

  /** Each word and its stem (snapshot.ts); the lists and trigrams are made again as they are read. */
  async save(writer: SnapshotWriter): Promise<void> {
    await writer.value([...this.stems]);
  }

  async restore(reader: SnapshotReader): Promise<void> {
    const words = reader.value<[string, string | null][]>();
    for (let from = 0; from < words.length; from += restoreSlice) {
      for (const [word, stem] of words.slice(from, from + restoreSlice)) this.add(word, stem);
      await nextTurn();
    }
  }

  add(word: string, stem: string | null): void {
    if (this.stems.has(word)) return;
    this.stems.set(word, stem);
    this.unsorted.push(word);
    for (const trigram of trigramsOf(word)) {
      let words = this.trigrams.get(trigram);
      if (!words) this.trigrams.set(trigram, (words = []));
      words.push(word);
    }
  }

  /**
   * The words of the vocabulary a query word stands for, shortest first and then bytewise, at
   * most limit (more: whether there were others). A compound part stands for no word of its own
   * stem (kalter for kalte: the stem finds those) and for no stop word, and a stop word is part
   * of nothing (der in Wanderer).
   */
  expand(expansion: Expansion, stem: string | null, limit: number): { words: string[]; more: boolean } {
    const { word } = expansion;
    let candidates: Iterable<string>;
    let test: (candidate: string) => boolean;
    if (expansion.kind === 'part') {
      if (stem === null) return { words: [], more: false };
      candidates = this.withTrigrams(word);
      test = (candidate) => candidate !== word && candidate.includes(word) && isPart(this.stems.get(candidate), stem);
    } else if (expansion.kind === 'begins') {
      candidates = this.beginningWith(word);
      test = (candidate) => candidate !== word;
    } else {
      candidates = this.beginningWith(/^[^*?]*/.exec(word)?.[0] ?? '');
      test = (candidate) => globMatches(word, candidate);
    }
    // The shortest limit + 1, kept in order as they come: a part of three letters is in thousands of words.
    const found: string[] = [];
    for (const candidate of candidates) {
      if (found.length > limit && shortestFirst(candidate, found[limit] as string) >= 0) continue;
      if (!test(candidate)) continue;
      let low = 0;
      let high = found.length;
      while (low < high) {
        const middle = (low + high) >>> 1;
        if (shortestFirst(found[middle] as string, candidate) < 0) low = middle + 1;
        else high = middle;
      }
      found.splice(low, 0, candidate);
      if (found.length > limit + 1) found.pop();
    }
    return { words: found.slice(0, limit), more: found.length > limit };
  }

  /** The words that begin with start, from the sorted list. */
  private beginningWith(start: string): string[] {
    const sorted = this.sortedWords();
    let low = 0;
    let high = sorted.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if ((sorted[middle] as string) < start) low = middle + 1;
      else high = middle;
    }
    const words: string[] = [];
    for (let i = low; i < sorted.length && (sorted[i] as string).startsWith(start); i++)
      words.push(sorted[i] as string);
    return words;
  }

  /** The words having every trigram of part: those of its rarest trigram. */
  private withTrigrams(part: string): string[] {
    let rarest: string[] | undefined;
    for (const trigram of trigramsOf(part)) {
      const words = this.trigrams.get(trigram);
      if (!words) return [];
      if (!rarest || words.length < rarest.length) rarest = words;
    }
    return rarest ?? [];
  }

  /** Words added since the last look-up go into the sorted list then, merged in one pass. */
  private sortedWords(): string[] {
    if (this.unsorted.length > 0) {
      const added = this.unsorted.sort();
      const merged: string[] = [];
      let i = 0;
      let j = 0;
      while (i < this.sorted.length || j < added.length) {
        if (j === added.length || (i < this.sorted.length && (this.sorted[i] as string) < (added[j] as string)))
          merged.push(this.sorted[i++] as string);
        else merged.push(added[j++] as string);
      }
      this.sorted = merged;
      this.unsorted = [];
    }
    return this.sorted;
  }
}

/**
 * Whether word matches pattern, where * stands for any letters and ? for one: in one pass that
 * goes back only to the last *, so a pattern of many * costs at most its length times the word's
 * (a regular expression would try every way of splitting the word among them).
 */
export function globMatches(pattern: string, word: string): boolean {
  let p = 0;
  let w = 0;
  let star = -1;
  let resume = 0;
  while (w < word.length) {
    if (p < pattern.length && (pattern[p] === '?' || pattern[p] === word[w])) {
      p++;
      w++;
    } else if (p < pattern.length && pattern[p] === '*') {
      star = p++;
      resume = w;
    } else if (star !== -1) {
      p = star + 1;
      w = ++resume;
    } else {
      return false;
    }
  }
  while (pattern[p] === '*') p++;
  return p === pattern.length;
}

function isPart(candidateStem: string | null | undefined, stem: string): boolean {
  return candidateStem !== null && candidateStem !== undefined && candidateStem !== stem;
}

function shortestFirst(a: string, b: string): number {
  return a.length - b.length || (a < b ? -1 : a > b ? 1 : 0);
}

function trigramsOf(word: string): Set<string> {
  const trigrams = new Set<string>();
  for (let i = 0; i + 3 <= word.length; i++) trigrams.add(word.slice(i, i + 3));
  return trigrams;
}
