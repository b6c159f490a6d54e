// A set of row ids as the word index keeps them (docs/performance.md, Search): blocks of 65,536
// ids, each a sorted list of up to 4,096 low bits or a bitmap (the layout of Roaring bitmaps),
// combined block by block so that a search stops after the block that gives it enough hits.
import { blockBits, blockWords, idsOf, listMax, lowMask, search, toBitmap, toList } from './blocks.ts';

export { blockBits, blockWords, idsOf } from './blocks.ts';

/** A block's start in `meta` when it has no ids, and when they are in a bitmap. */
const none = -1;
const bitmap = -2;
const noLists = new Uint16Array(0);

/**
 * Adding or dropping an id touches one block. The lists of a set's blocks share one buffer: a set
 * is a few objects for the garbage collector to mark, not three a block (docs/performance.md,
 * Person pages and the rest).
 */
export class IdSet {
  /** The lists of the blocks, each in a region of its own; between them, room given up. */
  private lists = noLists;
  /** For block b: meta[3b] the start of its list in `lists` (or none, or bitmap), meta[3b + 1] its ids, meta[3b + 2] its list's room. */
  private readonly meta: number[] = [];
  private bitmaps: (Uint32Array | undefined)[] | null = null;
  /** The end of the last region. */
  private end = 0;
  size = 0;

  has(id: number): boolean {
    const b = id >>> blockBits;
    const start = this.meta[3 * b];
    if (start === undefined || start === none) return false;
    const low = id & lowMask;
    if (start === bitmap) return (this.bitmaps![b]![low >>> 5]! & (1 << (low & 31))) !== 0;
    return search(this.lists, start, this.meta[3 * b + 1]!, low) >= 0;
  }

  add(id: number): void {
    const b = id >>> blockBits;
    const low = id & lowMask;
    const m = 3 * b;
    while (this.meta.length <= m) this.meta.push(none, 0, 0);
    let start = this.meta[m]!;
    if (start === bitmap) {
      const words = this.bitmaps![b]!;
      const bit = 1 << (low & 31);
      if ((words[low >>> 5]! & bit) !== 0) return;
      words[low >>> 5]! |= bit;
    } else {
      if (start === none) start = this.place(b, 4, 0);
      const count = this.meta[m + 1]!;
      const found = search(this.lists, start, count, low);
      if (found >= 0) return;
      if (count === listMax) {
        const words = toBitmap(this.lists, start, count);
        words[low >>> 5]! |= 1 << (low & 31);
        this.release(b);
        (this.bitmaps ??= [])[b] = words;
        this.meta[m] = bitmap;
      } else {
        if (count === this.meta[m + 2]) start = this.place(b, Math.min(listMax, count * 2), count);
        const place = start - found - 1;
        this.lists.copyWithin(place + 1, place, start + count);
        this.lists[place] = low;
      }
    }
    this.meta[m + 1]!++;
    this.size++;
  }

  delete(id: number): void {
    const b = id >>> blockBits;
    const m = 3 * b;
    const start = this.meta[m];
    if (start === undefined || start === none) return;
    const low = id & lowMask;
    const count = this.meta[m + 1]!;
    if (start === bitmap) {
      const words = this.bitmaps![b]!;
      const bit = 1 << (low & 31);
      if ((words[low >>> 5]! & bit) === 0) return;
      words[low >>> 5]! &= ~bit;
      // Back to a list only well below the line, so that an id added and dropped in turn does
      // not convert the block each time.
      if (count - 1 <= listMax / 2) {
        this.bitmaps![b] = undefined;
        this.meta[m] = none;
        const at = this.place(b, Math.max(4, count - 1), 0);
        toList(words, this.lists, at);
      }
    } else {
      const found = search(this.lists, start, count, low);
      if (found < 0) return;
      this.lists.copyWithin(start + found, start + found + 1, start + count);
    }
    this.meta[m + 1]!--;
    this.size--;
    if (count === 1) this.release(b);
  }

  /** Gives back the room the lists grew by: each takes what it holds, as after a full reading. */
  fit(): void {
    let held = 0;
    for (let b = 0; b < this.blockCount; b++) if (this.meta[3 * b]! >= 0) held += this.meta[3 * b + 1]!;
    if (held !== this.lists.length) this.repack(0, 0);
  }

  /** Bytes its blocks hold. */
  get bytes(): number {
    let bytes = this.lists.byteLength;
    for (const words of this.bitmaps ?? []) if (words) bytes += words.byteLength;
    return bytes;
  }

  /** The number of the last block with ids, plus one. */
  get blockCount(): number {
    return this.meta.length / 3;
  }

  /** Whether block b has an id. */
  hasBlock(b: number): boolean {
    const start = this.meta[3 * b];
    return start !== undefined && start !== none;
  }

  /** Sets the bits of block b's ids in words (OR). */
  orInto(b: number, words: Uint32Array): void {
    const start = this.meta[3 * b];
    if (start === undefined || start === none) return;
    if (start === bitmap) {
      const source = this.bitmaps![b]!;
      for (let i = 0; i < blockWords; i++) words[i]! |= source[i]!;
      return;
    }
    const lists = this.lists;
    const end = start + this.meta[3 * b + 1]!;
    for (let i = start; i < end; i++) {
      const low = lists[i]!;
      words[low >>> 5]! |= 1 << (low & 31);
    }
  }

  /** Clears the bits in words of ids not in block b (AND). */
  andInto(b: number, words: Uint32Array, scratch: Uint32Array): void {
    const start = this.meta[3 * b];
    if (start === undefined || start === none) {
      words.fill(0);
      return;
    }
    if (start === bitmap) {
      const source = this.bitmaps![b]!;
      for (let i = 0; i < blockWords; i++) words[i]! &= source[i]!;
      return;
    }
    scratch.fill(0);
    this.orInto(b, scratch);
    for (let i = 0; i < blockWords; i++) words[i]! &= scratch[i]!;
  }

  /** Every id, in order (for tests and for building another set). */
  *ids(): IterableIterator<number> {
    const words = new Uint32Array(blockWords);
    for (let b = 0; b < this.blockCount; b++) {
      if (!this.hasBlock(b)) continue;
      words.fill(0);
      this.orInto(b, words);
      yield* idsOf(b, words, Infinity);
    }
  }

  /**
   * A region of `room` for block b's list, its first `keep` ids copied from where they were: the
   * region grown where it ends the lists, else a new one at the end (the lists repacked when they
   * are full). Returns its start.
   */
  private place(b: number, room: number, keep: number): number {
    const m = 3 * b;
    const start = this.meta[m]!;
    const last = start >= 0 && start + this.meta[m + 2]! === this.end;
    const needed = last ? room - this.meta[m + 2]! : room;
    if (this.end + needed > this.lists.length) {
      this.repack(b, room);
      return this.meta[m]!;
    }
    if (!last) {
      if (start >= 0) this.lists.copyWithin(this.end, start, start + keep);
      this.meta[m] = this.end;
    }
    this.end += needed;
    this.meta[m + 2] = room;
    return this.meta[m]!;
  }

  /** Gives up block b's region; with the last list, the buffer too. */
  private release(b: number): void {
    const m = 3 * b;
    if (this.meta[m]! >= 0 && this.meta[m]! + this.meta[m + 2]! === this.end) this.end = this.meta[m]!;
    this.meta[m] = none;
    this.meta[m + 2] = 0;
    for (let c = 0; c < this.blockCount; c++) if (this.meta[3 * c]! >= 0) return;
    this.lists = noLists;
    this.end = 0;
  }

  /**
   * Copies every list to a new buffer, in the order of the blocks and without the room given up,
   * block b's (if it has a list) with `room` for it; a quarter more for lists to come (as much
   * again while the index was read, paired: 12% fewer person pages a second at a million works
   * after it, p99 22 ms against 14).
   */
  private repack(b: number, room: number): void {
    // Each block's room: block b's as asked (never a bitmap here: one becoming a list again has
    // none as its start by now), a list's what it holds (fit) or had, none for the others.
    const rooms = Array.from({ length: this.blockCount }, (_, c) => {
      const start = this.meta[3 * c]!;
      const count = this.meta[3 * c + 1]!;
      if (c === b && room > 0) return Math.max(room, count);
      return start < 0 ? 0 : room === 0 ? count : this.meta[3 * c + 2]!;
    });
    const total = rooms.reduce((sum, r) => sum + r, 0);
    const lists = total === 0 ? noLists : new Uint16Array(room === 0 ? total : total + Math.max(16, total >> 2));
    let end = 0;
    rooms.forEach((r, c) => {
      if (r === 0) return;
      const start = this.meta[3 * c]!;
      if (start >= 0) lists.set(this.lists.subarray(start, start + this.meta[3 * c + 1]!), end);
      this.meta[3 * c] = end;
      this.meta[3 * c + 2] = r;
      end += r;
    });
    this.lists = lists;
    this.end = end;
  }
}
