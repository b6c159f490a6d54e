// What the word index keeps of each row by its id, outside the JavaScript heap: numbers in pages
// of typed arrays, texts in one growing buffer. A million titles as strings would be a million
// objects for every full garbage collection to visit; here they are a few dozen arrays.
import type { SnapshotReader, SnapshotWriter } from './snapshot.ts';
import { nextTurn } from './turns.ts';

/** Rows a page of columns holds: 65,536. */
const pageBits = 16;
const pageSize = 1 << pageBits;
const pageMask = pageSize - 1;

/**
 * `width` integers per id, side by side, so that reading the fields of one id reads one cache
 * line (a search reads a few fields of a thousand ids spread over a million); ids never set
 * read as `empty`.
 */
export class Column {
  private readonly pages: (Int32Array | undefined)[] = [];

  constructor(
    private readonly empty = 0,
    readonly width = 1,
  ) {}

  get(id: number, field = 0): number {
    const page = this.pages[id >>> pageBits];
    return page ? page[(id & pageMask) * this.width + field]! : this.empty;
  }

  /**
   * The fields of each of ids into out (out[i * width + field]), in one pass: the reads of one id
   * do not wait for those of the one before, where a loop that does more with each would wait for
   * every read from memory in turn (a thousand ids spread over a million are as many cache misses).
   */
  gather(ids: readonly number[], out: Int32Array): void {
    const { width, empty } = this;
    for (let i = 0; i < ids.length; i++) {
      const id = ids[i] as number;
      const page = this.pages[id >>> pageBits];
      const at = (id & pageMask) * width;
      for (let field = 0; field < width; field++) out[i * width + field] = page ? page[at + field]! : empty;
    }
  }

  set(id: number, value: number, field = 0): void {
    let page = this.pages[id >>> pageBits];
    if (!page) {
      this.pages[id >>> pageBits] = page = new Int32Array(pageSize * this.width);
      if (this.empty !== 0) page.fill(this.empty);
    }
    page[(id & pageMask) * this.width + field] = value;
  }

  /** Pages of ids (65,536 each), some of them never set. */
  get pageCount(): number {
    return this.pages.length;
  }

  hasPage(p: number): boolean {
    return this.pages[p] !== undefined;
  }

  /** Bytes held. */
  get bytes(): number {
    return this.pages.reduce((n, page) => n + (page ? page.byteLength : 0), 0);
  }

  /** Which pages there are, then each (snapshot.ts). */
  async save(writer: SnapshotWriter): Promise<void> {
    await writer.value(Array.from(this.pages, (page) => page !== undefined));
    for (const page of this.pages) if (page) await writer.frame(page);
  }

  async restore(reader: SnapshotReader): Promise<void> {
    const present = reader.value<boolean[]>();
    // Ids are below 2^31: at most 32,768 pages.
    if (
      !Array.isArray(present) ||
      present.length > 1 << (31 - pageBits) ||
      !present.every((there) => typeof there === 'boolean')
    ) {
      throw new Error("a column's pages are not a list of at most 32,768");
    }
    this.pages.length = 0;
    for (const [p, there] of present.entries()) {
      this.pages[p] = there ? reader.numbers(pageSize * this.width) : undefined;
      await nextTurn();
    }
  }
}

/** A text per id, as UTF-8 in one buffer; a text replaced or dropped is garbage until the buffer grows. */
export class Texts {
  private buffer: Buffer = Buffer.alloc(1 << 16);
  private used = 0;
  private garbage = 0;
  private readonly start = new Column();
  private readonly length = new Column(-1);

  get(id: number): string {
    const length = this.length.get(id);
    if (length <= 0) return '';
    const start = this.start.get(id);
    return this.buffer.toString('utf8', start, start + length);
  }

  set(id: number, text: string): void {
    this.delete(id);
    const length = Buffer.byteLength(text);
    if (this.used + length > this.buffer.length) this.grow(length);
    this.buffer.write(text, this.used, 'utf8');
    this.start.set(id, this.used);
    this.length.set(id, length);
    this.used += length;
  }

  delete(id: number): void {
    const length = this.length.get(id);
    if (length < 0) return;
    this.garbage += length;
    this.length.set(id, -1);
  }

  get bytes(): number {
    return this.buffer.length + this.start.bytes + this.length.bytes;
  }

  /** The texts as they lie in the buffer, garbage and all, and where each is (snapshot.ts). */
  async save(writer: SnapshotWriter): Promise<void> {
    await writer.value([this.used, this.garbage]);
    await writer.frame(this.buffer.subarray(0, this.used));
    await this.start.save(writer);
    await this.length.save(writer);
  }

  /** Read back with a sixteenth of room for the changes to come, as fit leaves. */
  async restore(reader: SnapshotReader): Promise<void> {
    const [used, garbage] = reader.value<[number, number]>();
    if (!Number.isSafeInteger(used) || !Number.isSafeInteger(garbage) || garbage < 0 || garbage > used)
      throw new Error("a text buffer's sizes are not sizes");
    const buffer = reader.frameWithRoom(used, Math.max(1 << 16, Math.ceil(used / 16)));
    this.buffer = buffer;
    this.used = used;
    this.garbage = garbage;
    await this.start.restore(reader);
    await this.length.restore(reader);
  }

  /**
   * Gives back the room the last growth left (up to half of the buffer), keeping a sixteenth for
   * the changes to come: after the index is read whole.
   */
  fit(): void {
    const size = Math.max(1 << 16, Math.ceil((this.used - this.garbage) * 1.0625));
    if (size >= this.buffer.length) return;
    const buffer = Buffer.alloc(size);
    if (this.garbage === 0) this.buffer.copy(buffer, 0, 0, this.used);
    else this.compactInto(buffer);
    this.buffer = buffer;
    this.garbage = 0;
  }

  /**
   * Room for length more bytes: a buffer half again as large as what it must hold, into which
   * the live texts are copied one by one when half of the old one is garbage, or the old one
   * whole otherwise.
   */
  private grow(length: number): void {
    const live = this.used - this.garbage;
    if (this.garbage * 2 >= this.used) {
      const buffer = Buffer.alloc(Math.max(1 << 16, Math.ceil((live + length) * 1.5)));
      this.compactInto(buffer);
      this.buffer = buffer;
      this.garbage = 0;
    } else {
      const buffer = Buffer.alloc(Math.max(1 << 16, Math.ceil((this.used + length) * 1.5)));
      this.buffer.copy(buffer, 0, 0, this.used);
      this.buffer = buffer;
    }
  }

  private compactInto(buffer: Buffer): void {
    let used = 0;
    for (const [id, start, length] of this.entries()) {
      this.buffer.copy(buffer, used, start, start + length);
      this.start.set(id, used);
      used += length;
    }
    this.used = used;
  }

  private *entries(): IterableIterator<[id: number, start: number, length: number]> {
    for (let p = 0; p < this.length.pageCount; p++) {
      if (!this.length.hasPage(p)) continue;
      for (let i = 0; i < pageSize; i++) {
        const id = (p << pageBits) + i;
        const length = this.length.get(id);
        if (length >= 0) yield [id, this.start.get(id), length];
      }
    }
  }
}

/** One field of a Column of several. */
export class Field {
  constructor(
    private readonly column: Column,
    private readonly field: number,
  ) {}

  get(id: number): number {
    return this.column.get(id, this.field);
  }

  set(id: number, value: number): void {
    this.column.set(id, value, this.field);
  }
}

/** Numbers for strings that many rows share (types, names): a row keeps a number. */
export class Interned {
  private readonly codes = new Map<string, number>();
  private readonly texts: string[] = [];
  private readonly orders: (string | undefined)[] = [];

  code(text: string): number {
    let code = this.codes.get(text);
    if (code === undefined) {
      code = this.texts.length;
      this.codes.set(text, code);
      this.texts.push(text);
      this.orders.push(undefined);
    }
    return code;
  }

  text(code: number): string {
    return this.texts[code] ?? '';
  }

  async save(writer: SnapshotWriter): Promise<void> {
    await writer.value(this.texts);
  }

  async restore(reader: SnapshotReader): Promise<void> {
    for (const text of reader.value<string[]>()) this.code(text);
    await nextTurn();
  }

  find(text: string): number | undefined {
    return this.codes.get(text);
  }

  /**
   * The text of code as a string that `<` orders as PostgreSQL's C collation does (by UTF-8
   * bytes, which is by code point): its UTF-8 bytes, one character each. JavaScript compares
   * UTF-16 units, which put a character beyond U+FFFF before one from U+E000.
   */
  order(code: number): string {
    let order = this.orders[code];
    if (order === undefined) this.orders[code] = order = Buffer.from(this.text(code), 'utf8').toString('latin1');
    return order;
  }
}
