// The page of a search's hits in the order it asks for (docs/interface.md, Search): ranked,
// by title, by author or by year, each a total order, from what the word index keeps of the hits;
// and the page's rows, from the database (the index keeps no text it does not search or sort by).
import type { Db } from '../db/index.ts';
import type { Kind } from './texts.ts';
import type { Hit, Hits, SearchSpec, Sort } from './spec.ts';
import type { WordIndex } from './word-index.ts';
import { noYear } from './word-index.ts';

/** A hit of the page. */
export interface Ranked {
  typ: Kind;
  id: number;
  score: number;
}

/** Folded texts (lower-case ASCII letters, digits, spaces) in PostgreSQL's C collation: as JavaScript orders them. */
function compareFolded(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * The hits of the page, in a total order for each sort: ties go to persons, then the lower id,
 * so pages never overlap. The hits are numbered persons first, then works, and compared by
 * number; the first offset + size are kept in order as they come, the rest passed by.
 */
export function pageOf(hits: Hits, spec: SearchSpec, index: WordIndex): Ranked[] {
  const { personen, werke } = index;
  const { person: persons, werk: works } = hits;
  const split = persons.ids.length;
  const count = split + works.ids.length;
  const id = (n: number) => (n < split ? persons.ids[n] : works.ids[n - split]) as number;
  const score = (n: number) => (n < split ? persons.scores[n] : works.scores[n - split]) as number;
  const kindOf = (n: number) => (n < split ? 0 : 1);
  // Persons come first and ids rise within each kind: the number breaks every tie.
  const byRank = (a: number, b: number) => score(b) - score(a) || a - b;
  const year = (n: number) => (n < split ? noYear : werke.jahr.get(id(n)));
  const byYear = (direction: 1 | -1) => (a: number, b: number) => {
    const x = year(a);
    const y = year(b);
    // Works without a year after those with one, in both directions.
    return (x === noYear ? 1 : 0) - (y === noYear ? 1 : 0) || direction * (x - y) || byRank(a, b);
  };
  const titles = new Map<number, string>();
  const title = (n: number) => {
    let text = titles.get(n);
    if (text === undefined) titles.set(n, (text = n < split ? personen.folded.get(id(n)) : werke.folded.get(id(n))));
    return text;
  };
  const authors = new Map<number, string>();
  const author = (n: number) => {
    let text = authors.get(n);
    if (text === undefined) authors.set(n, (text = personen.author.get(n < split ? id(n) : werke.person.get(id(n)))));
    return text;
  };
  const ranked = (n: number): Ranked => ({ typ: n < split ? 'person' : 'werk', id: id(n), score: score(n) });
  const orders: Record<Sort, (a: number, b: number) => number> = {
    rank: byRank,
    title: (a, b) => compareFolded(title(a), title(b)) || a - b,
    author: (a, b) =>
      compareFolded(author(a), author(b)) || kindOf(a) - kindOf(b) || compareFolded(title(a), title(b)) || a - b,
    date_d: byYear(-1),
    date_a: byYear(1),
  };
  const order = orders[spec.sort];
  const end = Math.min(count, spec.offset + spec.size);
  // A page far in is sorted with the rest; the first pages are picked out.
  if (end > 100)
    return Array.from({ length: count }, (_, n) => n)
      .sort(order)
      .slice(spec.offset, end)
      .map(ranked);
  const best: number[] = [];
  for (let n = 0; n < count; n++) {
    if (best.length === end && order(n, best[end - 1] as number) >= 0) continue;
    let at = best.length;
    while (at > 0 && order(n, best[at - 1] as number) < 0) at--;
    best.splice(at, 0, n);
    if (best.length > end) best.pop();
  }
  return best.slice(spec.offset).map(ranked);
}

/** A hit's key among the rows of both kinds. */
const keyOf = (h: { typ: Kind; id: number }) => `${h.typ} ${h.id}`;

/**
 * The page's rows as the database has them now, in the page's order; rows `db` does not have are
 * read from `behind` (the primary, when `db` is a replica that may lag), and a row deleted
 * meanwhile is left out.
 */
export async function pageRowsRead(db: Db, page: Ranked[], behind: Db | null = null): Promise<Hit[]> {
  if (page.length === 0) return [];
  const byKey = await rowsByKey(db, page);
  const missing = behind ? page.filter((h) => !byKey.has(keyOf(h))) : [];
  if (behind && missing.length > 0) for (const [key, row] of await rowsByKey(behind, missing)) byKey.set(key, row);
  return page.flatMap((h) => {
    const row = byKey.get(keyOf(h));
    return row ? [{ ...row, score: h.score }] : [];
  });
}

/** The rows of hits, by their keys. */
async function rowsByKey(db: Db, page: Ranked[]): Promise<Map<string, Omit<Hit, 'score'>>> {
  // Ten rows by key: pipelined, as a person page's lookups are. The ids come through a subquery,
  // whose value the planner does not look into: it prices the plan for any ids as the one for
  // these and keeps it. Given the arrays themselves, it priced the kept plan dearer than one for a
  // page's few ids, planned every run anew, and that planning was most of the statement's
  // 280 µs of PostgreSQL's time a search (docs/performance.md, Search).
  const rows = await db.query<Omit<Hit, 'score'>>(
    `SELECT 'werk' AS typ, w.id, w.titel, p.slug, w.urheber AS person, w.beschreibung, w.art, w.jahr
       FROM werk w JOIN person p ON p.id = w.person_id WHERE w.id = ANY((SELECT $1::int[])::int[])
     UNION ALL
     SELECT 'person', p.id, p.vorname || ' ' || p.nachname, p.slug, NULL, NULL, NULL, NULL
       FROM person p WHERE p.id = ANY((SELECT $2::int[])::int[])`,
    [page.filter((h) => h.typ === 'werk').map((h) => h.id), page.filter((h) => h.typ === 'person').map((h) => h.id)],
    { name: 'search-page', pipeline: true },
  );
  return new Map(rows.map((row) => [keyOf(row), row]));
}
