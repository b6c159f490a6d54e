// The statements that read the word index (word-index.ts) from the database: everything, in
// chunks, at the start; and in one statement the rows and words that changed since a snapshot, as
// the notes of sql/012_search_changes.sql name them. sync.ts decides when.
import type { Db } from '../db/index.ts';
import { nextTurn } from './turns.ts';
import type { PersonRow, WerkRow, WordIndex } from './word-index.ts';

/** Rows read in one statement while loading. */
const loadChunk = 10_000;
/** Rows taken in between two turns of the event loop, so that requests are served while it loads. */
const takeSlice = 500;

/** Takes the rows in slices, with a turn of the event loop after each. */
async function takeAll<R>(rows: readonly R[], take: (row: R) => void): Promise<void> {
  for (let from = 0; from < rows.length; from += takeSlice) {
    for (const row of rows.slice(from, from + takeSlice)) take(row);
    await nextTurn();
  }
}

const personColumns = `p.id, p.vorname || ' ' || p.nachname AS name, coalesce(p.suche_name, '') AS folded,
  search_fold(p.nachname || ' ' || p.vorname) AS author, array_to_string(tsvector_to_array(coalesce(p.suche, ''::tsvector)), ' ') AS lexemes`;
const werkColumns = `w.id, w.person_id, w.urheber, w.art, w.jahr, coalesce(w.suche_titel, '') AS folded,
  array_to_string(tsvector_to_array(coalesce(w.suche, ''::tsvector)), ' ') AS lexemes`;

/** A changed row (change: its id): its state now (id null when it is gone) and the lexemes it had before. */
type Changed<R> = { change: number; old: string | null; id: number | null } & Partial<R>;

/** What one catch-up read: the snapshot and version it reached, and the rows and words that changed, or reload. */
interface CatchUp {
  snapshot: string;
  timeline: string;
  version: string;
  reload: boolean;
  personen: unknown;
  werke: unknown;
  words: unknown;
}

/** Every person, work and word, in chunks by id; the next chunk is on its way while one is taken in. */
export async function load(db: Db, index: WordIndex): Promise<void> {
  const chunks = async <R extends { id: number }>(name: string, text: string, take: (row: R) => void) => {
    const read = (after: number) => db.query<R>(text, [after, loadChunk], { name });
    for (let rows = await read(0); rows.length > 0; ) {
      const next = rows.length === loadChunk ? read((rows[rows.length - 1] as R).id) : null;
      // Awaited below; until then a failure must not count as unhandled.
      next?.catch(() => undefined);
      await takeAll(rows, take);
      rows = next ? await next : [];
    }
  };
  await chunks<PersonRow>(
    'search-load-personen',
    `SELECT ${personColumns} FROM person p WHERE p.id > $1 ORDER BY p.id LIMIT $2`,
    (row) => index.personen.put(row, []),
  );
  await chunks<WerkRow>(
    'search-load-werke',
    `SELECT ${werkColumns} FROM werk w WHERE w.id > $1 ORDER BY w.id LIMIT $2`,
    (row) => index.werke.put(row, []),
  );
  const words = await db.query<{ word: string; stem: string | null }>('SELECT word, stem FROM search_word');
  await takeAll(words, ({ word, stem }) => index.vocabulary.add(word, stem));
}

/**
 * The rows and words that changed since the snapshot `since`, in one statement (one snapshot), or
 * reload: notes were deleted that it may not have read, everything was changed (TRUNCATE, a
 * statement of many rows), too many rows changed, or the database is not the one it was (its
 * transactions are behind the snapshot; a new timeline is told by the caller).
 */
export async function readChanges(db: Db, since: string): Promise<CatchUp> {
  const [row] = await db.query<CatchUp>(
    `WITH changes AS MATERIALIZED (
            SELECT c.kind, c.id, c.old FROM search_change c
             WHERE c.xid >= pg_snapshot_xmin($1::pg_snapshot) AND NOT pg_visible_in_snapshot(c.xid, $1::pg_snapshot)
             LIMIT search_many() + 1),
          state AS MATERIALIZED (
            SELECT pg_current_snapshot() AS now, (SELECT n FROM data_version) AS version,
                   substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8) AS timeline,
                   (SELECT xid FROM search_change_pruned) >= pg_snapshot_xmin($1::pg_snapshot)
                   OR pg_snapshot_xmax(pg_current_snapshot()) < pg_snapshot_xmax($1::pg_snapshot)
                   OR (SELECT count(*) FROM changes) > search_many()
                   OR EXISTS (SELECT 1 FROM changes WHERE kind = '*') AS reload),
          changed AS (
            SELECT kind, id, string_agg(array_to_string(tsvector_to_array(old), ' '), ' ') AS old FROM changes GROUP BY kind, id)
     SELECT s.now::text AS snapshot, s.timeline, s.version::text AS version, s.reload,
            CASE WHEN NOT s.reload THEN (SELECT json_agg(x) FROM (
              SELECT c.id AS change, c.old, ${personColumns} FROM changed c LEFT JOIN person p ON p.id = c.id WHERE c.kind = 'p') x) END AS personen,
            CASE WHEN NOT s.reload THEN (SELECT json_agg(x) FROM (
              SELECT c.id AS change, c.old, ${werkColumns} FROM changed c LEFT JOIN werk w ON w.id = c.id WHERE c.kind = 'w') x) END AS werke,
            CASE WHEN NOT s.reload THEN (SELECT json_agg(json_build_array(v.word, v.stem)) FROM search_word v
              WHERE v.added >= pg_snapshot_xmin($1::pg_snapshot) AND NOT pg_visible_in_snapshot(v.added, $1::pg_snapshot)) END AS words
       FROM state s`,
    [since],
    { name: 'search-changes' },
  );
  if (!row) throw new Error('the search index found no state to read');
  return row;
}

/** Takes the rows and words a catch-up read into the index. */
export function apply(index: WordIndex, caught: CatchUp): void {
  for (const person of parsed<Changed<PersonRow>>(caught.personen)) {
    const old = person.old ? person.old.split(' ') : [];
    if (person.id === null) index.personen.remove(person.change, old);
    else index.personen.put(person as PersonRow, old);
  }
  for (const werk of parsed<Changed<WerkRow>>(caught.werke)) {
    const old = werk.old ? werk.old.split(' ') : [];
    if (werk.id === null) index.werke.remove(werk.change, old);
    else index.werke.put(werk as WerkRow, old);
  }
  for (const [word, stem] of parsed<[string, string | null]>(caught.words)) index.vocabulary.add(word, stem);
}

/** json columns arrive parsed from node-postgres and PGlite alike; null when there is nothing. */
function parsed<T>(value: unknown): T[] {
  return ((typeof value === 'string' ? JSON.parse(value) : value) ?? []) as T[];
}
