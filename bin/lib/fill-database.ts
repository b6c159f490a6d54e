// Fills the database with made-up persons and works, deterministically: the same seed and
// sizes give the same rows, ids included. Used by `npm run generate` and the benchmark.
// Bulk path: multi-row INSERT … SELECT FROM unnest() batches inside one transaction, with the
// secondary indexes of person and werk dropped before the load and built again after it.
import type { Db, Queryable } from '../../lib/db/index.ts';
import { createRandom, makeDescription, makeKind, makeName, makeTitle, slugify } from './sample-data.ts';

interface GenerateOptions {
  persons: number;
  /** Works per person. */
  works: number;
  seed: number;
  /** Empty person and werk first (and what references them); without it a filled database is refused. */
  replace: boolean;
  onProgress?: (progress: Progress) => void;
}

export interface Progress {
  phase: 'persons' | 'works' | 'indexes' | 'analyze';
  done: number;
  total: number;
}

interface GenerateSummary {
  persons: number;
  works: number;
  milliseconds: number;
}

export class DatabaseNotEmptyError extends Error {
  override name = 'DatabaseNotEmptyError';
}

const batchSize = 10_000;

export async function generateData(db: Db, options: GenerateOptions): Promise<GenerateSummary> {
  const started = Date.now();
  const progress = options.onProgress ?? (() => {});
  const totalWorks = options.persons * options.works;
  await db.transaction(async (tx) => {
    await emptyTables(tx, options.replace);
    if (db.kind === 'postgres') await tx.exec("SET LOCAL maintenance_work_mem = '256MB'");
    const indexes = await dropSecondaryIndexes(tx);
    const random = createRandom(options.seed);
    let werkId = 0;
    for (let first = 1; first <= options.persons; first += batchSize) {
      const count = Math.min(batchSize, options.persons - first + 1);
      await insertPersons(tx, first, count, random);
      progress({ phase: 'persons', done: first + count - 1, total: options.persons });
    }
    const perBatch = Math.max(1, Math.floor(batchSize / Math.max(1, options.works)));
    for (let first = 1; first <= options.persons; first += perBatch) {
      const last = Math.min(options.persons, first + perBatch - 1);
      werkId = await insertWorks(tx, { first, last, works: options.works, firstId: werkId + 1, random });
      progress({ phase: 'works', done: werkId, total: totalWorks });
    }
    for (const [i, definition] of indexes.entries()) {
      progress({ phase: 'indexes', done: i, total: indexes.length });
      await tx.exec(definition);
    }
    progress({ phase: 'indexes', done: indexes.length, total: indexes.length });
    // Explicit ids leave the identity sequences behind; new rows continue after the last id.
    await tx.query(
      `SELECT setval(pg_get_serial_sequence('person', 'id'), greatest(1, (SELECT max(id) FROM person)), (SELECT count(*) > 0 FROM person))`,
    );
    await tx.query(
      `SELECT setval(pg_get_serial_sequence('werk', 'id'), greatest(1, (SELECT max(id) FROM werk)), (SELECT count(*) > 0 FROM werk))`,
    );
  });
  progress({ phase: 'analyze', done: 0, total: 1 });
  await db.exec('ANALYZE person; ANALYZE werk');
  progress({ phase: 'analyze', done: 1, total: 1 });
  return { persons: options.persons, works: totalWorks, milliseconds: Date.now() - started };
}

async function emptyTables(tx: Queryable, replace: boolean): Promise<void> {
  const [row] = await tx.query<{ filled: boolean }>(
    'SELECT EXISTS (SELECT 1 FROM person) OR EXISTS (SELECT 1 FROM werk) AS filled',
  );
  if (!row?.filled) return;
  if (!replace) {
    throw new DatabaseNotEmptyError(
      'The database already has persons or works; run again with --replace to delete them (and everything that refers to them) and generate new ones.',
    );
  }
  await tx.exec('TRUNCATE person, werk RESTART IDENTITY CASCADE');
}

/**
 * Drops the indexes of person and werk that no constraint needs (search and order indexes)
 * and returns their definitions: building a GIN trigram index once over a million rows is
 * many times faster than maintaining it row by row.
 */
async function dropSecondaryIndexes(tx: Queryable): Promise<string[]> {
  const rows = await tx.query<{ name: string; definition: string }>(
    `SELECT i.indexrelid::regclass::text AS name, pg_get_indexdef(i.indexrelid) AS definition
       FROM pg_index i JOIN pg_class t ON t.oid = i.indrelid
      WHERE t.relname IN ('person', 'werk') AND t.relnamespace = current_schema()::regnamespace
        AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid)
      ORDER BY 1`,
  );
  for (const { name } of rows) await tx.exec(`DROP INDEX ${name}`);
  return rows.map((r) => r.definition);
}

async function insertPersons(tx: Queryable, first: number, count: number, random: () => number): Promise<void> {
  const ids: number[] = [];
  const slugs: string[] = [];
  const vornamen: string[] = [];
  const nachnamen: string[] = [];
  const usernames: string[] = [];
  const images: string[] = [];
  for (let id = first; id < first + count; id++) {
    const { vorname, nachname } = makeName(random);
    const slug = `${slugify(`${vorname} ${nachname}`)}-${id}`;
    ids.push(id);
    slugs.push(slug);
    vornamen.push(vorname);
    nachnamen.push(nachname);
    usernames.push(`${slugify(vorname).slice(0, 1)}${slugify(nachname).replace(/-/g, '').slice(0, 40)}${id}`);
    images.push('/img/person.svg');
  }
  await tx.query(
    `INSERT INTO person (id, slug, vorname, nachname, username, image)
     SELECT * FROM unnest($1::int[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[])`,
    [ids, slugs, vornamen, nachnamen, usernames, images],
  );
}

interface WorkBatch {
  /** First and last person id of the batch. */
  first: number;
  last: number;
  works: number;
  firstId: number;
  random: () => number;
}

/** Inserts the works of persons first…last; returns the last work id used. */
async function insertWorks(tx: Queryable, batch: WorkBatch): Promise<number> {
  const ids: number[] = [];
  const personIds: number[] = [];
  const titles: string[] = [];
  const years: number[] = [];
  const kinds: string[] = [];
  const descriptions: string[] = [];
  let id = batch.firstId;
  for (let person = batch.first; person <= batch.last; person++) {
    for (let n = 0; n < batch.works; n++, id++) {
      const titel = makeTitle(batch.random);
      const art = makeKind(batch.random);
      ids.push(id);
      personIds.push(person);
      titles.push(titel);
      years.push(1900 + Math.floor(batch.random() * 126));
      kinds.push(art);
      descriptions.push(makeDescription(batch.random, titel, art));
    }
  }
  if (ids.length > 0) {
    await tx.query(
      `INSERT INTO werk (id, person_id, titel, jahr, art, beschreibung)
       SELECT * FROM unnest($1::int[], $2::int[], $3::text[], $4::int[], $5::text[], $6::text[])`,
      [ids, personIds, titles, years, kinds, descriptions],
    );
  }
  return id - 1;
}
