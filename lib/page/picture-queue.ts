// The picture conversions of one process in turn: a few run at once (config pictureConcurrency),
// each holding one of libuv's threads, which files and password checks need too; a few more wait
// in the order they came (pictureQueue), and beyond them an upload is 503 with Retry-After
// (docs/operations.md, Pictures).
import { HttpError } from '../http/index.ts';

export class PictureQueue {
  private running = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(private readonly limits: { running: number; waiting: number }) {}

  /** Runs work when a conversion may start; 503 when too many wait already. */
  async run<T>(work: () => Promise<T>): Promise<T> {
    if (this.running < this.limits.running) {
      this.running++;
    } else if (this.waiting.length < this.limits.waiting) {
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    } else {
      throw new HttpError(
        503,
        'Too many pictures are being converted at the moment; send yours again in a few seconds.',
        { headers: { 'retry-after': '5' } },
      );
    }
    try {
      return await work();
    } finally {
      // The place goes straight to the first that waits, so none that comes later takes it in between.
      const next = this.waiting.shift();
      if (next) next();
      else this.running--;
    }
  }
}
