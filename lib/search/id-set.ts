// A set of row ids as the word index keeps them (docs/performance.md, Search): the ids in blocks
// of 65,536, each block a sorted list of its low 16 bits while it holds up to 4,096 of them, a
// bitmap of 65,536 bits beyond (the layout of Roaring bitmaps). A search combines whole blocks
// word by word and stops after the block that gives it enough hits, so a word in every other row
// costs what its first block costs; adding or dropping an id touches one block.

export const blockBits = 16;
/** 32-bit words of a block's bitmap. */
export const blockWords = 1 << (blockBits - 5);
const lowMask = (1 << blockBits) - 1;
/** Past this many ids a block's list (2 bytes an id) is as large as its bitmap (8 KB): it becomes one. */
const listMax = 4096;

/** One block of a set: a sorted list of low bits, or a bitmap. */
type Block =
  | { list: true; values: Uint16Array; size: number }
  | { list: false; words: Uint32Array; size: number };

export class IdSet {
  private readonly blocks: (Block | undefined)[] = [];
  size = 0;

  has(id: number): boolean {
    const block = this.blocks[id >>> blockBits];
    if (!block) return false;
    const low = id & lowMask;
    if (!block.list) return (block.words[low >>> 5]! & (1 << (low & 31))) !== 0;
    return search(block.values, block.size, low) >= 0;
  }

  add(id: number): void {
    const at = id >>> blockBits;
    const low = id & lowMask;
    let block = this.blocks[at];
    if (!block) this.blocks[at] = block = { list: true, values: new Uint16Array(4), size: 0 };
    if (!block.list) {
      const bit = 1 << (low & 31);
      if ((block.words[low >>> 5]! & bit) !== 0) return;
      block.words[low >>> 5]! |= bit;
    } else {
      const found = search(block.values, block.size, low);
      if (found >= 0) return;
      if (block.size === listMax) {
        const bitmap = toBitmap(block.values, block.size);
        bitmap.words[low >>> 5]! |= 1 << (low & 31);
        this.blocks[at] = block = bitmap;
      } else {
        const place = -found - 1;
        if (block.size === block.values.length) {
          const grown = new Uint16Array(Math.min(listMax, block.size * 2));
          grown.set(block.values);
          block.values = grown;
        }
        block.values.copyWithin(place + 1, place, block.size);
        block.values[place] = low;
      }
    }
    block!.size++;
    this.size++;
  }

  delete(id: number): void {
    const at = id >>> blockBits;
    const block = this.blocks[at];
    if (!block) return;
    const low = id & lowMask;
    if (!block.list) {
      const bit = 1 << (low & 31);
      if ((block.words[low >>> 5]! & bit) === 0) return;
      block.words[low >>> 5]! &= ~bit;
      block.size--;
      // Back to a list only well below the line, so that an id added and dropped in turn does
      // not convert the block each time.
      if (block.size <= listMax / 2) this.blocks[at] = toList(block.words, block.size);
    } else {
      const found = search(block.values, block.size, low);
      if (found < 0) return;
      block.values.copyWithin(found, found + 1, block.size);
      block.size--;
    }
    this.size--;
    if (this.blocks[at]!.size === 0) this.blocks[at] = undefined;
  }

  /** Bytes its blocks hold. */
  get bytes(): number {
    let bytes = 0;
    for (const block of this.blocks) if (block) bytes += block.list ? block.values.byteLength : block.words.byteLength;
    return bytes;
  }

  /** The number of the last block with ids, plus one. */
  get blockCount(): number {
    return this.blocks.length;
  }

  /** Whether block b has an id. */
  hasBlock(b: number): boolean {
    return this.blocks[b] !== undefined;
  }

  /** Sets the bits of block b's ids in words (OR). */
  orInto(b: number, words: Uint32Array): void {
    const block = this.blocks[b];
    if (!block) return;
    if (!block.list) {
      const source = block.words;
      for (let i = 0; i < blockWords; i++) words[i]! |= source[i]!;
      return;
    }
    const values = block.values;
    for (let i = 0; i < block.size; i++) {
      const low = values[i]!;
      words[low >>> 5]! |= 1 << (low & 31);
    }
  }

  /** Clears the bits in words of ids not in block b (AND). */
  andInto(b: number, words: Uint32Array, scratch: Uint32Array): void {
    const block = this.blocks[b];
    if (!block) {
      words.fill(0);
      return;
    }
    if (!block.list) {
      const source = block.words;
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
    for (let b = 0; b < this.blocks.length; b++) {
      if (!this.blocks[b]) continue;
      words.fill(0);
      this.orInto(b, words);
      yield* idsOf(b, words, Infinity);
    }
  }
}

/** The ids of block b whose bits words has set, in order, at most limit of them. */
export function idsOf(b: number, words: Uint32Array, limit: number): number[] {
  const ids: number[] = [];
  const base = b << blockBits;
  for (let i = 0; i < blockWords && ids.length < limit; i++) {
    let word = words[i]!;
    while (word !== 0 && ids.length < limit) {
      const lowest = word & -word;
      ids.push(base + (i << 5) + (31 - Math.clz32(lowest)));
      word ^= lowest;
    }
  }
  return ids;
}

/** Binary search: the place of value, or -(place it would take) - 1. */
function search(values: Uint16Array, size: number, value: number): number {
  let low = 0;
  let high = size - 1;
  while (low <= high) {
    const middle = (low + high) >>> 1;
    const at = values[middle]!;
    if (at < value) low = middle + 1;
    else if (at > value) high = middle - 1;
    else return middle;
  }
  return -low - 1;
}

function toBitmap(values: Uint16Array, size: number): Block & { list: false } {
  const words = new Uint32Array(blockWords);
  for (let i = 0; i < size; i++) words[values[i]! >>> 5]! |= 1 << (values[i]! & 31);
  return { list: false, words, size };
}

function toList(words: Uint32Array, size: number): Block {
  const values = new Uint16Array(Math.max(4, size));
  let n = 0;
  for (let i = 0; i < blockWords; i++) {
    let word = words[i]!;
    while (word !== 0) {
      const lowest = word & -word;
      values[n++] = (i << 5) + (31 - Math.clz32(lowest));
      word ^= lowest;
    }
  }
  return { list: true, values, size };
}
