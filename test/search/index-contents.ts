// What the search's tests of the word index share: a test database with the demo data, and an
// index's contents as plain values to compare two indexes by.
import path from 'node:path';
import { DataVersion, migrate } from '../../lib/db/index.ts';
import { loadDemoData } from '../../lib/db/migrate.ts';
import type { WordIndex } from '../../lib/search/word-index.ts';
import type { TestDb } from '../helpers.ts';
import { openTestDb, root } from '../helpers.ts';

/** A test database, migrated, with the demo data, and its data version. */
export async function openDemoDb(): Promise<{ testDb: TestDb; version: DataVersion }> {
  const testDb = await openTestDb();
  await migrate(testDb.db, path.join(root, 'sql'));
  await loadDemoData(testDb.db, path.join(root, 'sql'));
  return { testDb, version: new DataVersion(testDb.db) };
}

/** What an index holds, as plain values: every set of lexemes and facets, each row's fields, the vocabulary. */
export function contents(index: WordIndex) {
  // Keyed by text, not by code: two indexes may number the same names and types differently.
  const sets = <K>(entries: IterableIterator<[K, Iterable<number>]>, key: (k: K) => unknown = (k) => k) =>
    [...entries].map(([k, set]) => [key(k), [...set]]).sort((a, b) => String(a[0]).localeCompare(String(b[0])));
  const { personen, werke, names, vocabulary } = index;
  return {
    personen: sets(personen.lexemes.entries()),
    werke: sets(werke.lexemes.entries()),
    facets: [
      sets(personen.byName.entries(), (c) => names.text(c)),
      sets(werke.byArt.entries(), (c) => werke.arts.text(c)),
      sets(werke.byDecade.entries()),
      sets(werke.byCreator.entries(), (c) => names.text(c)),
    ],
    persons: [...personen.lexemes.rows].map((id) => [
      id,
      names.text(personen.name.get(id)),
      personen.folded.get(id),
      personen.author.get(id),
    ]),
    works: [...werke.lexemes.rows].map((id) => [
      id,
      werke.person.get(id),
      names.text(werke.creator.get(id)),
      werke.arts.text(werke.art.get(id)),
      werke.jahr.get(id),
      werke.folded.get(id),
    ]),
    vocabulary: [
      vocabulary.size,
      vocabulary.stemOf('hafen'),
      vocabulary.expand({ kind: 'begins', word: 'ha' }, 'ha', 50),
    ],
  };
}
