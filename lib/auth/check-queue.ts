// Password checks in turn by client (an IPv4 address or an IPv6 /64: addressGroup in
// lib/http/forwarded.ts). A check costs a third of a second and 128 MiB (scrypt), so two run at once
// and the rest wait; the next free slot goes to the client with the fewest checks lately, so a
// quiet client runs next however many others flood, and a check whose client has gone is dropped
// (docs/robustness.md, Password checks).
import { HttpError } from '../http/index.ts';

interface Limits {
  /** Checks that run at once. */
  running: number;
  /** Checks one client may have waiting. */
  perClient: number;
  /** Checks waiting in all: each holds its request (a form body of up to 1 MiB), not a scrypt's memory. */
  total: number;
  /** How many checks may start while one waits before it is answered 503: it would wait on and on. */
  patience: number;
  /** How long a check that started counts against its client's place in the turns. */
  memoryMs: number;
}

// At about six checks a second, 64 waiting are some 10 s of work; a longer line would only hold
// requests that end in 503 all the same. A check that 64 others pass is one of a client that
// floods: quieter ones keep going first. Counted in turns, not seconds, so a slow machine refuses
// no more than a fast one.
const defaultLimits: Limits = { running: 2, perClient: 16, total: 64, patience: 64, memoryMs: 60_000 };

/** A check waiting for its turn. */
interface Waiting {
  since: number;
  /** The checks started before it came (CheckQueue.turns). */
  turn: number;
  /** Its turn: it runs now (the queue has taken it out). */
  start: () => void;
  /** Takes it out of the queue and answers err instead: it never runs. */
  drop: (err: HttpError) => void;
}

interface Client {
  waiting: Waiting[];
  /** When its checks of the last memoryMs started, oldest first. */
  started: number[];
}

export class CheckQueue {
  private running = 0;
  private waitingCount = 0;
  /** Checks started in all. */
  private turns = 0;
  private readonly clients = new Map<string, Client>();

  constructor(private readonly limits: Limits = defaultLimits) {}

  /** Checks waiting for their turn, for the metrics. */
  get waiting(): number {
    return this.waitingCount;
  }

  /**
   * Runs work once it is this client's turn; 503 with Retry-After when the client has too many
   * waiting, when a quieter client needs the room, or when `patience` others started first. When
   * signal aborts first (its client has gone), work never runs.
   */
  async run<T>(key: string, work: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    if (signal?.aborted) throw gone();
    const client = this.clientOf(key);
    if (this.running < this.limits.running && this.waitingCount === 0) {
      this.running++;
      this.turns++;
      client.started.push(Date.now());
    } else {
      await this.wait(client, signal);
    }
    try {
      return await work();
    } finally {
      this.next();
    }
  }

  private wait(client: Client, signal: AbortSignal | undefined): Promise<void> {
    if (client.waiting.length >= this.limits.perClient)
      throw busy('Too many logins from your address are being checked at the moment; please try again in a second.');
    if (this.waitingCount >= this.limits.total) this.makeRoom(client);
    return new Promise<void>((resolve, reject) => {
      const done = () => signal?.removeEventListener('abort', onAbort);
      const entry: Waiting = {
        since: Date.now(),
        turn: this.turns,
        start: () => {
          done();
          client.started.push(Date.now());
          resolve();
        },
        drop: (err) => {
          done();
          client.waiting.splice(client.waiting.indexOf(entry), 1);
          this.waitingCount--;
          reject(err);
        },
      };
      const onAbort = () => entry.drop(gone());
      signal?.addEventListener('abort', onAbort, { once: true });
      client.waiting.push(entry);
      this.waitingCount++;
    });
  }

  /** The line is full: the newest check of the noisiest client gives up its room, unless that is this one's. */
  private makeRoom(client: Client): void {
    let noisiest: Client | null = null;
    for (const other of this.clients.values()) {
      if (other.waiting.length > 0 && (!noisiest || this.load(other) > this.load(noisiest))) noisiest = other;
    }
    if (!noisiest || this.load(noisiest) <= this.load(client) + 1) {
      throw busy('Too many logins are being checked at the moment; please try again in a second.');
    }
    noisiest.waiting[noisiest.waiting.length - 1]?.drop(
      busy('Too many logins from your address are being checked at the moment; please try again in a second.'),
    );
  }

  /** A slot is free: the first check of the client with the fewest checks lately runs, else the slot stays free. */
  private next(): void {
    let quietest: Client | null = null;
    const forgotten = Date.now() - this.limits.memoryMs;
    for (const [key, client] of this.clients) {
      while (client.started.length > 0 && (client.started[0] as number) <= forgotten) client.started.shift();
      if (client.waiting.length === 0) {
        if (client.started.length === 0) this.clients.delete(key);
        continue;
      }
      if (
        !quietest ||
        this.load(client) < this.load(quietest) ||
        (this.load(client) === this.load(quietest) && this.since(client) < this.since(quietest))
      ) {
        quietest = client;
      }
    }
    if (!quietest) {
      this.running--;
      return;
    }
    const entry = quietest.waiting.shift() as Waiting;
    this.waitingCount--;
    this.turns++;
    entry.start();
    this.dropPassedOver();
  }

  /** Answers 503 to the checks that `patience` others have passed. */
  private dropPassedOver(): void {
    const passedOver: Waiting[] = [];
    for (const client of this.clients.values()) {
      for (const entry of client.waiting) if (this.turns - entry.turn >= this.limits.patience) passedOver.push(entry);
    }
    for (const entry of passedOver)
      entry.drop(busy('Too many logins are being checked at the moment; please try again in a few seconds.'));
  }

  /** How much a client has asked for lately: its checks waiting, and those started within memoryMs. */
  private load(client: Client): number {
    return client.waiting.length + client.started.length;
  }

  /** When its first waiting check came: among equals, the one that waited longest goes first. */
  private since(client: Client): number {
    return client.waiting[0]?.since ?? Infinity;
  }

  private clientOf(key: string): Client {
    let client = this.clients.get(key);
    if (!client) {
      client = { waiting: [], started: [] };
      this.clients.set(key, client);
    }
    return client;
  }
}

function busy(message: string): HttpError {
  return new HttpError(503, message, { headers: { 'retry-after': '1' } });
}

/**
 * Nobody hears this answer; it ends the request. 499, as nginx logs a request its client closed:
 * the access log says what happened, and the error log has nothing of the site's to say.
 */
function gone(): HttpError {
  return new HttpError(499, 'The client closed the connection before its password was checked.');
}
