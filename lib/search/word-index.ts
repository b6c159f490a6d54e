// The word index a process searches (docs/performance.md, Search): for persons and works, the rows
// of each lexeme (lexemes.ts), what ranking, sorting, facets and the checks read of each row, and
// the rows of each type, decade and creator; sync.ts fills it and keeps it current. What the result
// list shows is read from the database (result-page.ts).
import { Column, Field, Interned, Texts } from './columns.ts';
import { Groups, Lexemes } from './lexemes.ts';
import type { Saved, SnapshotReader, SnapshotWriter } from './snapshot.ts';
import { nextTurn } from './turns.ts';
import { Vocabulary } from './vocabulary.ts';

/** A person as the index takes it from the database. */
export interface PersonRow {
  id: number;
  /** vorname nachname, as pages and the creator facet show it. */
  name: string;
  /** The name folded (person.suche_name): what creator phrases are checked on and title order sorts by. */
  folded: string;
  /** search_fold(nachname vorname): the order by author. */
  author: string;
  /** The row's lexemes, separated by spaces. */
  lexemes: string;
}

/** A work as the index takes it from the database. */
export interface WerkRow {
  id: number;
  person_id: number;
  /** The creator's name as the work carries it (werk.urheber). */
  urheber: string;
  art: string;
  jahr: number | null;
  /** The title folded (werk.suche_titel). */
  folded: string;
  lexemes: string;
}

/** jahr of a work without one: far below any year (sql/001_schema.sql), and a small integer to V8. */
export const noYear = -0x40000000;

/** The decade a year is in: -5 is in -10, 1995 in 1990. */
export function decadeOf(jahr: number): number {
  return jahr - (((jahr % 10) + 10) % 10);
}

export class Personen {
  readonly lexemes = new Lexemes();
  /** Each person's name as a code of WordIndex.names. */
  readonly name = new Column(-1);
  readonly folded = new Texts();
  readonly author = new Texts();
  readonly byName = new Groups<number>();

  constructor(private readonly names: Interned) {}

  put(row: PersonRow, old: readonly string[]): void {
    this.remove(row.id, old, row.lexemes);
    const name = this.names.code(row.name);
    this.name.set(row.id, name);
    this.byName.add(name, row.id);
    this.folded.set(row.id, row.folded);
    this.author.set(row.id, row.author);
    this.lexemes.add(row.id, row.lexemes);
  }

  /** Takes a person out; old: the lexemes it may have had, now: those it keeps (put again). */
  remove(id: number, old: readonly string[], now = ''): void {
    if (!this.lexemes.rows.has(id)) return;
    this.lexemes.drop(id, old, now);
    this.lexemes.rows.delete(id);
    this.byName.delete(this.name.get(id), id);
    this.name.set(id, -1);
    this.folded.delete(id);
    this.author.delete(id);
  }

  get bytes(): number {
    return this.lexemes.bytes + this.name.bytes + this.folded.bytes + this.author.bytes;
  }

  /** Its parts, one after another (snapshot.ts). */
  get parts(): Saved[] {
    return [this.lexemes, this.name, this.folded, this.author, this.byName];
  }
}

export class Werke {
  readonly lexemes = new Lexemes(true);
  /** What ranking, facets and sorting read of each hit, side by side; gathered for many hits at once. */
  readonly facts = new Column(-1, 4);
  static readonly personField = 0;
  static readonly creatorField = 1;
  static readonly artField = 2;
  static readonly jahrField = 3;
  readonly person = new Field(this.facts, Werke.personField);
  /** The creator's name as a code of WordIndex.names. */
  readonly creator = new Field(this.facts, Werke.creatorField);
  /** The type as a code of arts. */
  readonly art = new Field(this.facts, Werke.artField);
  /** The year, noYear for a work without one. */
  readonly jahr = new Field(this.facts, Werke.jahrField);

  /**
   * The title folded (the order by title, phrases). What the result list shows (title,
   * description, the person's slug) stays in the database: a page's rows are read by key.
   */
  readonly folded = new Texts();
  readonly arts = new Interned();
  readonly byArt = new Groups<number>();
  readonly byDecade = new Groups<number>();
  readonly byCreator = new Groups<number>();

  constructor(private readonly names: Interned) {}

  put(row: WerkRow, old: readonly string[]): void {
    this.remove(row.id, old, row.lexemes);
    const art = this.arts.code(row.art);
    const creator = this.names.code(row.urheber);
    this.person.set(row.id, row.person_id);
    this.creator.set(row.id, creator);
    this.art.set(row.id, art);
    this.jahr.set(row.id, row.jahr ?? noYear);
    this.folded.set(row.id, row.folded);
    this.byArt.add(art, row.id);
    this.byCreator.add(creator, row.id);
    if (row.jahr !== null) this.byDecade.add(decadeOf(row.jahr), row.id);
    this.lexemes.add(row.id, row.lexemes);
  }

  remove(id: number, old: readonly string[], now = ''): void {
    if (!this.lexemes.rows.has(id)) return;
    this.lexemes.drop(id, old, now);
    this.lexemes.rows.delete(id);
    this.byArt.delete(this.art.get(id), id);
    this.byCreator.delete(this.creator.get(id), id);
    const jahr = this.jahr.get(id);
    if (jahr !== noYear) this.byDecade.delete(decadeOf(jahr), id);
    // A search that took the work before it went counts it nowhere (result-page.ts, facets.ts).
    for (const field of [this.person, this.creator, this.art]) field.set(id, -1);
    this.jahr.set(id, noYear);
    this.folded.delete(id);
  }

  get bytes(): number {
    return this.lexemes.bytes + this.facts.bytes + this.folded.bytes;
  }

  /** Its parts, one after another (snapshot.ts). */
  get parts(): Saved[] {
    return [this.lexemes, this.facts, this.folded, this.arts, this.byArt, this.byDecade, this.byCreator];
  }
}

/** Everything a search reads, for one state of the database. */
export class WordIndex implements Saved {
  /** Names of persons and creators of works. */
  readonly names = new Interned();
  readonly personen = new Personen(this.names);
  readonly werke = new Werke(this.names);
  readonly vocabulary = new Vocabulary();

  /** Gives back the room the texts and the sets grew by while the index was read, one part at a time with a turn of the event loop after each. */
  async fit(): Promise<void> {
    for (const part of [
      this.personen.folded,
      this.personen.author,
      this.werke.folded,
      this.personen.lexemes,
      this.personen.byName,
      this.werke.lexemes,
      this.werke.byArt,
      this.werke.byDecade,
      this.werke.byCreator,
    ]) {
      part.fit();
      await nextTurn();
    }
  }

  /** Every part, in the order the snapshot has them (snapshot.ts). */
  async save(writer: SnapshotWriter): Promise<void> {
    for (const part of this.parts) await part.save(writer);
  }

  async restore(reader: SnapshotReader): Promise<void> {
    for (const part of this.parts) await part.restore(reader);
  }

  private get parts(): Saved[] {
    return [this.names, ...this.personen.parts, ...this.werke.parts, this.vocabulary];
  }

  /** Bytes held outside the JavaScript heap: the sets, the fields and the texts (not the groups of the facets). */
  get bytes(): number {
    return this.personen.bytes + this.werke.bytes;
  }
}
