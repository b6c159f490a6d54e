// The folded texts of a search's rows by field, for the checks of phrases, exact and begins_with
// and their rank: titles, names, types and years from the word index, a work's folded description
// (werk.suche_text, with its type and year) from the database, for the rows a check reads it of.
import { fold } from './language.ts';
import type { WordIndex } from './word-index.ts';
import { noYear } from './word-index.ts';

/** The kinds of row a search finds. */
export type Kind = 'person' | 'werk';
/** The fields of a row, as the lexemes tag them: title, creator, description, type, year (sql/009_search_words.sql). */
export type Tag = 't' | 'c' | 'd' | 'r' | 'y';

/** A work's folded description (suche_text) and whether it has one, read for the checks. */
export type Descriptions = Map<number, { text: string; described: boolean }>;

/** Where a row's folded text comes from for a check: the index, or the description read for it. */
export interface TextSource {
  text(tag: Tag, id: number, prefix: boolean): string;
}

/** The texts of the index's rows by tag; a work's description comes from `descriptions`. */
export function textsOf(kind: Kind, index: WordIndex, descriptions: Descriptions | null): TextSource {
  const { personen, werke } = index;
  if (kind === 'person') return { text: (tag, id) => (tag === 'c' ? personen.folded.get(id) : '') };
  return {
    text: (tag, id, prefix) => {
      switch (tag) {
        case 't':
          return werke.folded.get(id);
        case 'c':
          return personen.folded.get(werke.person.get(id));
        case 'r':
          return foldedArt(index, werke.art.get(id));
        case 'y': {
          const jahr = werke.jahr.get(id);
          return jahr === noYear ? '' : String(jahr);
        }
        case 'd': {
          const description = descriptions?.get(id);
          if (!description) return '';
          // begins_with on desc: a work without a description does not begin with its type.
          return prefix && !description.described ? '' : description.text;
        }
      }
    },
  };
}

const foldedArts = new WeakMap<WordIndex, Map<number, string>>();

/** A type folded as the index folds it (search_fold), once per type. */
function foldedArt(index: WordIndex, code: number): string {
  let arts = foldedArts.get(index);
  if (!arts) foldedArts.set(index, (arts = new Map()));
  let folded = arts.get(code);
  if (folded === undefined) arts.set(code, (folded = fold(index.werke.arts.text(code))));
  return folded;
}
