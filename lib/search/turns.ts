// The shares searches take (docs/interface.md, Search, Cost): of the database's connections, at
// most `concurrency` of a process's searches at once, the others waiting for a turn in the order
// they came, up to waitMs (a statement stopped by its time-out is 503 as well); and of the
// process's own time, one search's work on the word index per turn of the event loop.
import { HttpError } from '../http/index.ts';

/** Searches of one process that may wait for their turn at once: each holds only its request. */
const maxWaiting = 1000;

export class Turns {
  private running = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(private readonly limits: { concurrency: number; waitMs: number }) {}

  /**
   * fn within the searches' share of connections: beyond it a search waits for its turn, at most
   * waitMs, then it is 503; a statement stopped by the time-out (57014) is 503 as well.
   */
  async within<T>(fn: () => Promise<T>): Promise<T> {
    if (this.running >= this.limits.concurrency) {
      if (this.waiting.length >= maxWaiting) throw busy('Too many searches are waiting; try again in a moment.');
      // A search that finishes hands its place to the first waiting one (running stays as it
      // is), so no search that comes later takes it in between: while any waits, all places
      // are taken.
      await new Promise<void>((resolve, reject) => {
        const turn = () => {
          clearTimeout(timer);
          resolve();
        };
        // A search that waited too long gives up: its client hears so in time.
        const timer = setTimeout(() => {
          this.waiting.splice(this.waiting.indexOf(turn), 1);
          reject(busy('Too many searches are running; try again in a moment.'));
        }, this.limits.waitMs);
        this.waiting.push(turn);
      });
    } else {
      this.running++;
    }
    try {
      return await fn();
    } catch (err) {
      if ((err as { code?: string }).code === '57014')
        throw busy(
          'The search took too long and was stopped; try again in a moment, or with fewer or longer words.',
          err,
        );
      throw err;
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.running--;
    }
  }
}

export function busy(message: string, cause?: unknown): HttpError {
  return new HttpError(503, message, { headers: { 'Retry-After': '2' }, cause });
}

/** Lets the event loop answer what waits (I/O, timers) before going on: loading the index takes turns too. */
export function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * Turns of the event loop for the searches' work on the word index, one search a turn, in the
 * order they asked: between two of them, the loop reads and answers what else has come (person
 * pages, logins), which would otherwise wait behind every search that was ready at once.
 */
export class LoopTurns {
  private readonly waiting: (() => void)[] = [];
  private scheduled = false;

  /** Resolves in a turn of the event loop of its own. */
  next(): Promise<void> {
    return new Promise((resolve) => {
      this.waiting.push(resolve);
      if (!this.scheduled) this.schedule();
    });
  }

  private schedule(): void {
    this.scheduled = true;
    // An immediate set while immediates run waits for the loop's next turn, after its I/O.
    setImmediate(() => {
      this.waiting.shift()?.();
      if (this.waiting.length > 0) this.schedule();
      else this.scheduled = false;
    });
  }
}
