// What the word index keeps of each row by its id, outside the JavaScript heap: numbers in pages
// of typed arrays, texts in one growing buffer. A million titles as strings would be a million
// objects for every full garbage collection to visit; here they are a few dozen arrays.
import { blockBits } from './id-set.ts';

const pageSize = 1 << blockBits;
const pageMask = pageSize - 1;

/**
 * `width` integers per id, side by side, so that reading the fields of one id reads one cache
 * line (a search reads a few fields of a thousand ids spread over a million); ids never set
 * read as `empty`.
 */
export class Column {
  private readonly pages: (Int32Array | undefined)[] = [];

  constructor(private readonly empty = 0, private readonly width = 1) {}

  get(id: number, field = 0): number {
    const page = this.pages[id >>> blockBits];
    return page ? page[(id & pageMask) * this.width + field]! : this.empty;
  }

  set(id: number, value: number, field = 0): void {
    let page = this.pages[id >>> blockBits];
    if (!page) {
      this.pages[id >>> blockBits] = page = new Int32Array(pageSize * this.width);
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
}

/** A text per id, as UTF-8 in one buffer; a text replaced or dropped is garbage until compact(). */
export class Texts {
  private buffer = Buffer.alloc(1 << 16);
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

  /** Room for length more bytes: the live texts copied into a buffer of their size and then some. */
  private grow(length: number): void {
    const live = this.used - this.garbage;
    const buffer = Buffer.alloc(Math.max(1 << 16, Math.ceil((live + length) * 1.5)));
    // Only when half is garbage are the texts copied one by one; otherwise the buffer whole.
    if (this.garbage * 2 < this.used) {
      this.buffer.copy(buffer, 0, 0, this.used);
    } else {
      this.compactInto(buffer);
      this.garbage = 0;
      this.buffer = buffer;
      return;
    }
    this.buffer = buffer;
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
        const id = (p << blockBits) + i;
        const length = this.length.get(id);
        if (length >= 0) yield [id, this.start.get(id), length];
      }
    }
  }
}

/** One field of a Column of several. */
export class Field {
  constructor(private readonly column: Column, private readonly field: number) {}

  get(id: number): number {
    return this.column.get(id, this.field);
  }

  set(id: number, value: number): void {
    this.column.set(id, value, this.field);
  }
}
