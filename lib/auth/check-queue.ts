// Password checks in turn per client address: a check costs a third of a second and 128 MiB
// (scrypt), two run at once, and a client that sends many waits behind its own, not everyone:
// the next free slot goes to the next address in turn. A full queue answers 503 at once.
import { HttpError } from '../http/index.ts';

interface Limits {
  /** Checks that run at once. */
  running: number;
  /** Checks one address may have waiting. */
  perClient: number;
  /** Checks waiting in all. */
  total: number;
}

export class CheckQueue {
  private running = 0;
  private waiting = 0;
  // Each address's waiting checks; the Map's order is the order of turns.
  private readonly queues = new Map<string, (() => void)[]>();

  constructor(private readonly limits: Limits = { running: 2, perClient: 16, total: 256 }) {}

  /** Runs work once it is this address's turn; 503 with Retry-After when too many wait. */
  async run<T>(client: string, work: () => Promise<T>): Promise<T> {
    if (this.running < this.limits.running && this.waiting === 0) {
      this.running++;
    } else {
      const queue = this.queues.get(client) ?? [];
      if (queue.length >= this.limits.perClient || this.waiting >= this.limits.total) {
        throw new HttpError(503, 'Too many logins are being checked at the moment; please try again in a second.', { headers: { 'retry-after': '1' } });
      }
      await new Promise<void>((resolve) => {
        queue.push(resolve);
        this.queues.set(client, queue);
        this.waiting++;
      });
    }
    try {
      return await work();
    } finally {
      this.next();
    }
  }

  /** Hands the slot to the first address in turn, which then goes to the back of the line. */
  private next(): void {
    const first = this.queues.entries().next();
    if (first.done) {
      this.running--;
      return;
    }
    const [client, queue] = first.value;
    const resolve = queue.shift() as () => void;
    this.waiting--;
    this.queues.delete(client);
    if (queue.length > 0) this.queues.set(client, queue);
    resolve();
  }
}
