// Keeps a process's word index (word-index.ts) as the database is: it reads every person, work and
// word of the vocabulary at the start, and before a search the rows that changed since, as the
// notes of sql/012_search_changes.sql name them. A search sees every change committed before it
// came, as the rest of the site does (docs/interface.md, Search).
import type { Db } from '../db/index.ts';
import type { PersonRow, WerkRow } from './word-index.ts';
import { WordIndex } from './word-index.ts';

/** Changed rows past which reading everything again is cheaper than reading them. */
const manyChanges = 10_000;
/** Rows read in one statement while loading. */
const loadChunk = 10_000;
/** How long change notes are kept, and how often a process looks for changes without a search. */
export const keepChangesMs = 10 * 60_000;
const followMs = 30_000;
const pruneMs = 60_000;

const personColumns = `p.id, p.vorname || ' ' || p.nachname AS name, coalesce(p.suche_name, '') AS folded,
  search_fold(p.nachname || ' ' || p.vorname) AS author, array_to_string(tsvector_to_array(p.suche), ' ') AS lexemes`;
const werkColumns = `w.id, w.person_id, w.urheber, w.art, w.jahr, coalesce(w.suche_titel, '') AS titel,
  array_to_string(tsvector_to_array(w.suche), ' ') AS lexemes`;

/** A changed row: its state now (null when it is gone) and the lexemes it had before. */
interface Change<R> { change: number; old: string | null; id: number | null }
type Changed<R> = Change<R> & Partial<R>;

interface CatchUp {
  snapshot: string;
  version: string;
  reload: boolean;
  personen: unknown;
  werke: unknown;
  words: unknown;
}

export interface SyncOptions {
  onError: (message: string) => void;
}

/** How the index has been read: catch-ups and whole readings since the start. */
export interface SyncStats { catchUps: number; reloads: number }

export class IndexSync {
  private index = new WordIndex();
  readonly stats: SyncStats = { catchUps: 0, reloads: 0 };
  private snapshot = '';
  private version = -1n;
  private stepping: Promise<void> | null = null;
  private readonly timers: NodeJS.Timeout[] = [];

  constructor(readonly db: Db, private readonly options: SyncOptions) {}

  /** The index as it last caught up, for when the database cannot be asked. */
  get latest(): WordIndex {
    return this.index;
  }

  /** Reads everything; then follows changes even while nobody searches, so that their notes are never gone first. */
  async start(): Promise<void> {
    await this.step(true);
    this.timers.push(setInterval(() => this.step().catch((err: unknown) => this.options.onError(`search index: ${(err as Error).message}`)), followMs).unref());
    this.timers.push(setInterval(() => this.prune().catch((err: unknown) => this.options.onError(`search index: deleting old change notes failed: ${(err as Error).message}`)), pruneMs).unref());
  }

  close(): void {
    for (const timer of this.timers) clearInterval(timer);
  }

  /**
   * Deletes the change notes older than keepChangesMs and remembers the highest transaction they
   * came from; notes another process is deleting at the same time are left to it.
   */
  async prune(): Promise<void> {
    await this.db.query(
      `WITH gone AS (
              DELETE FROM search_change WHERE ctid IN (
                SELECT ctid FROM search_change WHERE at < now() - make_interval(secs => $1) FOR UPDATE SKIP LOCKED)
              RETURNING xid)
       UPDATE search_change_pruned SET xid = greatest(xid, (SELECT max(xid) FROM gone)) WHERE EXISTS (SELECT 1 FROM gone)`,
      [keepChangesMs / 1000],
    );
  }

  /**
   * The index with every change that the data version `wanted` counts (lib/db/data-version.ts),
   * read by the request on this database after it came; null (not read) catches up once.
   */
  async current(wanted: bigint | null): Promise<WordIndex> {
    if (wanted === null) {
      await this.step();
      return this.index;
    }
    // A catch-up under way may have started before the change the version counts: it is waited
    // for, and then one more if the index is still behind. Each reads at a snapshot taken after
    // the version was read, so the first that starts after it brings the index there.
    for (let i = 0; i < 3 && this.version < wanted; i++) {
      if (this.stepping) await this.stepping.catch(() => undefined);
      else await this.step();
    }
    return this.index;
  }

  /** One catch-up (or a reload) at a time: a caller that finds one under way waits for it first. */
  private async step(reload = false): Promise<void> {
    while (this.stepping) await this.stepping.catch(() => undefined);
    this.stepping = (reload ? this.reload() : this.catchUp()).finally(() => {
      this.stepping = null;
    });
    return this.stepping;
  }

  private async reload(): Promise<void> {
    this.stats.reloads++;
    const index = new WordIndex();
    const [start] = await this.db.query<{ snapshot: string }>('SELECT pg_current_snapshot()::text AS snapshot');
    await load(this.db, index);
    // The rows were read after the snapshot, each at its own: the changes since bring them all
    // to one state (a row already read as changed is read again).
    const caught = await readChanges(this.db, start?.snapshot ?? '');
    if (caught.reload) throw new Error('the data changed too much while the search index was read; it is read again at the next search');
    apply(index, caught);
    this.index = index;
    this.snapshot = caught.snapshot;
    this.version = BigInt(caught.version);
  }

  private async catchUp(): Promise<void> {
    this.stats.catchUps++;
    const caught = await readChanges(this.db, this.snapshot);
    if (caught.reload) return this.reload();
    apply(this.index, caught);
    this.snapshot = caught.snapshot;
    this.version = BigInt(caught.version);
  }
}

/** Every person, work and word, in chunks by id; the next chunk is on its way while one is taken in. */
async function load(db: Db, index: WordIndex): Promise<void> {
  const chunks = async <R extends { id: number }>(name: string, text: string, take: (row: R) => void) => {
    const read = (after: number) => db.query<R>(text, [after, loadChunk], { name });
    for (let rows = await read(0); rows.length > 0;) {
      const next = rows.length === loadChunk ? read((rows[rows.length - 1] as R).id) : null;
      // Awaited below; until then a failure must not count as unhandled.
      next?.catch(() => undefined);
      for (const row of rows) take(row);
      rows = next ? await next : [];
    }
  };
  await chunks<PersonRow>('search-load-personen', `SELECT ${personColumns} FROM person p WHERE p.id > $1 ORDER BY p.id LIMIT $2`, (row) => index.personen.put(row, []));
  await chunks<WerkRow>('search-load-werke', `SELECT ${werkColumns} FROM werk w WHERE w.id > $1 ORDER BY w.id LIMIT $2`, (row) => index.werke.put(row, []));
  const words = await db.query<{ word: string; stem: string | null }>('SELECT word, stem FROM search_word');
  for (const { word, stem } of words) index.vocabulary.add(word, stem);
}

/**
 * The rows and words that changed since the snapshot `since`, in one statement (one snapshot), or
 * reload: notes were deleted that it may not have read, everything was changed (TRUNCATE, a
 * statement of many rows), too many rows changed, or the database is not the one it was (its
 * transactions are behind the snapshot).
 */
async function readChanges(db: Db, since: string): Promise<CatchUp> {
  const [row] = await db.query<CatchUp>(
    `WITH changes AS MATERIALIZED (
            SELECT c.kind, c.id, c.old FROM search_change c
             WHERE c.xid >= pg_snapshot_xmin($1::pg_snapshot) AND NOT pg_visible_in_snapshot(c.xid, $1::pg_snapshot)
             LIMIT $2 + 1),
          state AS MATERIALIZED (
            SELECT pg_current_snapshot() AS now, (SELECT n FROM data_version) AS version,
                   (SELECT xid FROM search_change_pruned) >= pg_snapshot_xmin($1::pg_snapshot)
                   OR pg_snapshot_xmax(pg_current_snapshot()) < pg_snapshot_xmax($1::pg_snapshot)
                   OR (SELECT count(*) FROM changes) > $2
                   OR EXISTS (SELECT 1 FROM changes WHERE kind = '*') AS reload),
          changed AS (
            SELECT kind, id, string_agg(array_to_string(tsvector_to_array(old), ' '), ' ') AS old FROM changes GROUP BY kind, id)
     SELECT s.now::text AS snapshot, s.version::text AS version, s.reload,
            CASE WHEN NOT s.reload THEN (SELECT json_agg(x) FROM (
              SELECT c.id AS change, c.old, ${personColumns} FROM changed c LEFT JOIN person p ON p.id = c.id WHERE c.kind = 'p') x) END AS personen,
            CASE WHEN NOT s.reload THEN (SELECT json_agg(x) FROM (
              SELECT c.id AS change, c.old, ${werkColumns} FROM changed c LEFT JOIN werk w ON w.id = c.id WHERE c.kind = 'w') x) END AS werke,
            CASE WHEN NOT s.reload THEN (SELECT json_agg(json_build_array(v.word, v.stem)) FROM search_word v
              WHERE v.added >= pg_snapshot_xmin($1::pg_snapshot) AND NOT pg_visible_in_snapshot(v.added, $1::pg_snapshot)) END AS words
       FROM state s`,
    [since, manyChanges],
    { name: 'search-changes' },
  );
  if (!row) throw new Error('the search index found no state to read');
  return row;
}

function apply(index: WordIndex, caught: CatchUp): void {
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
