// The matched words of a hit, for the HTML list: a text as pieces, marked or not (the template
// escapes each), and a short excerpt of a description around its first match.
import { fold } from './language.ts';

export interface Piece {
  text: string;
  mark: boolean;
}

/**
 * Words folded before: a page of hits has a few hundred words, mostly the same few thousand
 * across searches, and folding one takes a dozen passes over it. Emptied when full; long
 * words are not kept.
 */
const foldedWords = new Map<string, string>();
const maxFoldedWords = 20_000;

function foldWord(word: string): string {
  let folded = foldedWords.get(word);
  if (folded === undefined) {
    folded = fold(word).replace(/ /g, '');
    if (word.length <= 40) {
      if (foldedWords.size >= maxFoldedWords) foldedWords.clear();
      foldedWords.set(word, folded);
    }
  }
  return folded;
}

/** Marks a word whose folded form is a marked word, begins with a marked stem, or contains a marked part of three letters or more. */
function matches(word: string, marks: readonly string[]): boolean {
  const folded = foldWord(word);
  if (folded === '') return false;
  return marks.some((m) => folded === m || (m.length >= 3 && folded.includes(m)));
}

/** A word: a run of letters and digits. */
const words = /[\p{L}\p{N}]+/gu;

export function highlight(text: string, marks: readonly string[]): Piece[] {
  const pieces: Piece[] = [];
  // Words are runs of letters and digits; the rest passes unmarked.
  for (const part of text.split(/([\p{L}\p{N}]+)/u)) {
    if (part === '') continue;
    const mark = /[\p{L}\p{N}]/u.test(part) && matches(part, marks);
    const last = pieces[pieces.length - 1];
    if (last && last.mark === mark) last.text += part;
    else pieces.push({ text: part, mark });
  }
  return pieces;
}

/**
 * About `length` characters of text around its first marked word, with … where it was cut; null
 * when no word is marked. Its words marked (for HTML), or as one piece (for JSON and XML).
 */
export function excerpt(
  text: string,
  marks: readonly string[],
  options: { marked: boolean; length?: number },
): Piece[] | null {
  const length = options.length ?? 160;
  // The first marked word, read word by word up to it: only the excerpt is taken apart.
  let at = -1;
  let after = -1;
  for (const word of text.matchAll(words)) {
    if (!matches(word[0], marks)) continue;
    at = word.index;
    after = at + word[0].length;
    break;
  }
  if (at === -1) return null;
  // A third before the match, or less where the text ends before the length is filled.
  let start = Math.max(0, Math.min(at - Math.floor(length / 3), text.length - length));
  // Cut at spaces, not inside words, and never past the match.
  if (start > 0) {
    const space = text.indexOf(' ', start);
    if (space !== -1 && space < at) start = space + 1;
  }
  let end = Math.min(text.length, Math.max(start + length, after));
  if (end < text.length) {
    const space = text.lastIndexOf(' ', end);
    if (space >= after) end = space;
  }
  // Not between the two halves of a character outside the BMP (an emoji).
  if (/[\uDC00-\uDFFF]/.test(text.charAt(start))) start -= 1;
  if (/[\uD800-\uDBFF]/.test(text.charAt(end - 1))) end += 1;
  const opening = start > 0 ? '…' : '';
  const closing = end < text.length ? '…' : '';
  if (!options.marked) return [{ text: `${opening}${text.slice(start, end)}${closing}`, mark: false }];
  const cut = highlight(text.slice(start, end), marks);
  if (opening) cut.unshift({ text: opening, mark: false });
  if (closing) cut.push({ text: closing, mark: false });
  return cut;
}
