// A set of row ids of the word index: a compressed bitmap of CRoaring's Node port (the roaring
// package), which keeps the ids of each block of 65,536 as a sorted list, a bitmap or runs,
// whichever is smallest, and combines sets natively (docs/performance.md, Id sets: roaring).
import roaring from 'roaring';
import type { RoaringBitmap32 } from 'roaring';

export type IdSet = RoaringBitmap32;
export const IdSet = roaring.RoaringBitmap32;

/** Gives back the room a set grew by, and keeps runs of consecutive ids as runs. */
export function fitSet(set: IdSet): void {
  set.runOptimize();
  set.shrinkToFit();
}

/** Bytes a set holds: its size written out in CRoaring's own format, about what it takes in memory. */
export function bytesOf(set: IdSet): number {
  return set.getSerializationSizeInBytes('croaring');
}
