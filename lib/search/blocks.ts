// One block of 65,536 ids of a set (id-set.ts): as a bitmap of 2,048 32-bit words, or as a sorted
// list of the ids' low 16 bits; and the ids a bitmap holds, in order.

export const blockBits = 16;
/** 32-bit words of a block's bitmap. */
export const blockWords = 1 << (blockBits - 5);
export const lowMask = (1 << blockBits) - 1;
/** Past this many ids a block's list (2 bytes an id) is as large as its bitmap (8 KB): it becomes one. */
export const listMax = 4096;

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

/** Binary search in the count values from start: the place of value, or -(place it would take) - 1. */
export function search(values: Uint16Array, start: number, count: number, value: number): number {
  let low = 0;
  let high = count - 1;
  while (low <= high) {
    const middle = (low + high) >>> 1;
    const at = values[start + middle]!;
    if (at < value) low = middle + 1;
    else if (at > value) high = middle - 1;
    else return middle;
  }
  return -low - 1;
}

export function toBitmap(values: Uint16Array, start: number, count: number): Uint32Array {
  const words = new Uint32Array(blockWords);
  for (let i = start; i < start + count; i++) words[values[i]! >>> 5]! |= 1 << (values[i]! & 31);
  return words;
}

/** Writes the ids of a bitmap as a sorted list from at. */
export function toList(words: Uint32Array, values: Uint16Array, at: number): void {
  let n = at;
  for (let i = 0; i < blockWords; i++) {
    let word = words[i]!;
    while (word !== 0) {
      const lowest = word & -word;
      values[n++] = (i << 5) + (31 - Math.clz32(lowest));
      word ^= lowest;
    }
  }
}
