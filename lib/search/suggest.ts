// Did you mean (docs/interface.md, Search): for a search without hits, each word the index does
// not have replaced by the closest one it has, by trigram similarity over search_word
// (sql/009_search_words.sql), within the searches' share of connections.
import type { Db } from '../db/index.ts';
import type { Condition, ParsedLine } from './language.ts';
import { maxTermLength } from './language.ts';
import type { Turns } from './turns.ts';

/**
 * For a search without hits: each word the index does not have, replaced by the closest one
 * it has (trigram similarity), as the lines to search instead; null when nothing is closer.
 */
export async function suggest(
  db: Db,
  turns: Turns,
  timeoutMs: number,
  conditions: readonly Condition[],
  lines: readonly ParsedLine[],
): Promise<Condition[] | null> {
  // Each word searched for as written (no wildcard, not after NOT), once.
  const words = new Map(
    lines
      .flatMap((l) => l.clauses.flat())
      .filter((a) => !a.negated && a.kind === 'word' && !/[*?]/.test(a.raw) && (a.words[0] ?? '').length >= 3)
      .map((a) => [a.raw, a.words[0] as string]),
  );
  const candidates = [...words].map(([raw, word]) => ({ raw, word }));
  if (candidates.length === 0) return null;
  const rows = await turns.within(() =>
    db.query<{ i: number; shown: string | null }>(
      `SELECT q.i::int AS i, (SELECT v.shown FROM search_word v WHERE v.word % q.word AND v.word <> q.word
                             AND NOT EXISTS (SELECT 1 FROM search_word s WHERE s.word = q.word)
                           ORDER BY similarity(v.word, q.word) DESC, v.word COLLATE "C" LIMIT 1) AS shown
       FROM unnest($1::text[]) WITH ORDINALITY AS q(word, i)`,
      [candidates.map((c) => c.word)],
      { timeoutMs },
    ),
  );
  const replacements = new Map<string, string>();
  for (const row of rows) {
    const candidate = candidates[row.i - 1];
    if (candidate && row.shown) replacements.set(candidate.raw, row.shown);
  }
  // A term that would grow past the longest a search takes stays as it was: its link would be 400.
  const replaced = conditions.map((c) => {
    if (c.match !== 'contains') return c;
    const term = c.term
      .split(/(\s+)/)
      .map((token) => replacements.get(token) ?? token)
      .join('');
    return term === c.term || [...term].length > maxTermLength ? c : { ...c, term };
  });
  return replaced.some((c, i) => c !== conditions[i]) ? replaced : null;
}
