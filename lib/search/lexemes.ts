// The sets of a kind of row in the word index (word-index.ts): the ids of the rows having each
// lexeme (t:haus, ts:haus, c:muller …), and the ids of each type, decade and creator for the facets.
import { bytesOf, fitSet, IdSet } from './id-set.ts';
import type { SnapshotReader, SnapshotWriter } from './snapshot.ts';
import { nextTurn } from './turns.ts';

/** The rows of one kind and the ids of each lexeme. */
export class Lexemes {
  readonly rows = new IdSet();
  private readonly sets = new Map<string, IdSet>();

  /**
   * unions: whether each stem is also kept for all fields at once (*s:haus, the rows with
   * ts:haus, cs:haus, ds:haus or rs:haus): a search in any field reads one set where it would
   * combine four (a work's fields; a person has one).
   */
  constructor(private readonly unions = false) {}

  /** The rows having lexeme; undefined when none has. */
  of(lexeme: string): IdSet | undefined {
    return this.sets.get(lexeme);
  }

  /** Each lexeme with its rows. */
  entries(): IterableIterator<[string, IdSet]> {
    return this.sets.entries();
  }

  /** Gives back the room the sets grew by. */
  fit(): void {
    fitSet(this.rows);
    for (const set of this.sets.values()) fitSet(set);
  }

  /** Bytes the sets hold. */
  get bytes(): number {
    let bytes = bytesOf(this.rows);
    for (const set of this.sets.values()) bytes += bytesOf(set);
    return bytes;
  }

  /** The rows, then each lexeme and its rows (snapshot.ts). */
  async save(writer: SnapshotWriter): Promise<void> {
    await writer.set(this.rows);
    await saveSets(writer, this.sets);
  }

  async restore(reader: SnapshotReader): Promise<void> {
    IdSet.swap(this.rows, reader.set());
    await restoreSets(reader, this.sets);
  }

  add(id: number, lexemes: string): void {
    this.rows.add(id);
    for (const lexeme of this.withUnions(split(lexemes))) {
      let set = this.sets.get(lexeme);
      if (!set) this.sets.set(lexeme, (set = new IdSet()));
      set.add(id);
    }
  }

  /** Drops id from the lexemes of old that are not in now. */
  drop(id: number, old: readonly string[], now: string): void {
    const kept = new Set(this.withUnions(split(now)));
    for (const lexeme of this.withUnions(old)) {
      if (kept.has(lexeme)) continue;
      const set = this.sets.get(lexeme);
      if (!set) continue;
      set.delete(id);
      if (set.size === 0) this.sets.delete(lexeme);
    }
  }

  /** The lexemes and, with unions, the stems of all fields they make (ts:haus makes *s:haus). */
  private withUnions(lexemes: readonly string[]): readonly string[] {
    if (!this.unions) return lexemes;
    const stems = lexemes.filter((l) => l.charCodeAt(1) === 115 && l.charCodeAt(2) === 58).map((l) => `*${l.slice(1)}`);
    return stems.length === 0 ? lexemes : [...lexemes, ...new Set(stems)];
  }
}

/** Sets of ids by a key (a type, a decade, a creator), for the facets' filters. */
export class Groups<K> {
  private readonly sets = new Map<K, IdSet>();

  of(key: K): IdSet | undefined {
    return this.sets.get(key);
  }

  /** Each key with its rows. */
  entries(): IterableIterator<[K, IdSet]> {
    return this.sets.entries();
  }

  add(key: K, id: number): void {
    let set = this.sets.get(key);
    if (!set) this.sets.set(key, (set = new IdSet()));
    set.add(id);
  }

  /** Gives back the room the sets grew by. */
  fit(): void {
    for (const set of this.sets.values()) fitSet(set);
  }

  save(writer: SnapshotWriter): Promise<void> {
    return saveSets(writer, this.sets);
  }

  restore(reader: SnapshotReader): Promise<void> {
    return restoreSets(reader, this.sets);
  }

  delete(key: K, id: number): void {
    const set = this.sets.get(key);
    if (!set) return;
    set.delete(id);
    if (set.size === 0) this.sets.delete(key);
  }
}

/** Sets read back between two turns of the event loop. */
const restoreSlice = 2000;

/** The keys, then each one's set in their order. */
async function saveSets<K>(writer: SnapshotWriter, sets: Map<K, IdSet>): Promise<void> {
  await writer.value([...sets.keys()]);
  for (const set of sets.values()) await writer.set(set);
}

async function restoreSets<K>(reader: SnapshotReader, sets: Map<K, IdSet>): Promise<void> {
  const keys = reader.value<K[]>();
  sets.clear();
  for (const [i, key] of keys.entries()) {
    sets.set(key, reader.set());
    if (i % restoreSlice === restoreSlice - 1) await nextTurn();
  }
}

function split(lexemes: string): string[] {
  return lexemes === '' ? [] : lexemes.split(' ');
}
