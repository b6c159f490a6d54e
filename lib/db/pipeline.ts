// Short statements on a few connections in node-postgres's pipeline mode: many requests'
// statements in one write, answered in order (docs/performance.md, Statements in one write).
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { classifyError, DbUnavailableError } from './db.ts';
import type { Timeouts } from './timeouts.ts';
import type { ReadWatchdog, WatchedClient } from './watchdog.ts';
import { readFailure, started } from './watchdog.ts';

/** What a pipelined connection is opened with: the pool's settings. */
interface PipelineOptions {
  connectionString: string;
  connectTimeoutMs?: number;
  /** How many connections carry pipelined statements (default 2): a slow statement holds up only its own. */
  pipelineConnections?: number;
  /** Statements on each connection at once (default: no bound); more wait in `queue`. */
  pipelineDepth?: number;
  /**
   * After this many ms without an answer, a connection's statements are sent again on another
   * that is answering (default: never); the first answer counts.
   */
  pipelineRetryMs?: number;
  timeouts: Timeouts;
  onError?: (err: Error) => void;
}

interface Pipe {
  client: WatchedClient;
  /** Settles once connected; statements wait for it here, not in pg's queue. */
  ready: Promise<void>;
  connected: boolean;
  /** Lost, cut or closed: the next statement opens a new connection in its place. */
  broken: boolean;
  /** Statements waiting for the connection to open, or given this connection and about to be sent. */
  waiting: number;
  /** The statements now on the wire, in the order sent. */
  sent: Sent[];
  /** When it last answered, or was sent a statement with none on the wire (performance.now()). */
  answeredAt: number;
  /** Writes wait until the end of this turn of the event loop (setImmediate). */
  corked: boolean;
}

interface Sent {
  /** The watchdog's tick from which the statement is watched. */
  tick: number;
  /**
   * The request's statement whose answer or failure its caller waits for, and which may be sent
   * again (with retryMs); null for a copy, the pooler's BEGIN and COMMIT, and once it has been
   * sent again.
   */
  call: Call | null;
}

/** A request's statement, as query() was asked for it. */
interface Call {
  config: pg.QueryConfig;
  /** Its own BEGIN and settings, or null. */
  opening: string | null;
  since: number;
  /** Its copy on another connection, once sent. */
  copy: Promise<pg.QueryResult> | null;
  /** Settles the caller's answer (the first answer counts); set when it is sent. */
  answer: (result: pg.QueryResult) => void;
}

/**
 * The connections that carry statements marked `pipeline` (QueryOptions), in node-postgres's
 * pipeline mode. Each statement goes to the connection with the fewest waiting or unanswered,
 * once one has fewer than `pipelineDepth`; until then it waits its turn in the process. The
 * socket is corked from the first statement of a turn of the event loop to its end, so the
 * statements it gets in that turn leave in one write, where a pool writes
 * once per statement and wakes a server process each time (docs/performance.md).
 * Failures are classified as the pool's are; a connection that fails, or whose oldest statement
 * gets no answer in time (the watchdog), fails all of its statements and is replaced.
 * A connection whose server process stops answering for a while (it lost the processor; the
 * others go on) would hold up every statement on it: after `pipelineRetryMs` they are sent
 * again, once, on the connection with the fewest statements among those still answering, and
 * each takes the first answer. So pipelined statements must be reads, safe to run twice.
 */
export class Pipelines {
  private readonly pipes: (Pipe | null)[];
  /** Statements waiting for a connection with fewer than `depth` of them, oldest first. */
  private readonly queue: { resolve: (pipe: Pipe) => void; reject: (err: Error) => void }[] = [];
  private readonly depth: number;
  /** Milliseconds without an answer after which a connection's statements are sent again; 0: never. */
  private readonly retryMs: number;
  /** Looks for held-up connections while statements that may be sent again are on the wire. */
  private retryTimer: NodeJS.Timeout | null = null;
  #retried = 0;

  constructor(
    private readonly options: PipelineOptions,
    private readonly watchdog: ReadWatchdog,
  ) {
    this.pipes = Array.from({ length: options.pipelineConnections ?? 2 }, () => null);
    this.depth = options.pipelineDepth ?? Infinity;
    this.retryMs = options.pipelineRetryMs ?? 0;
  }

  /** Statements sent again on another connection since the start. */
  get retried(): number {
    return this.#retried;
  }

  /**
   * opening: BEGIN and settings of its own (Timeouts.within), sent before the statement and
   * COMMIT after it, the three in the same write; only the statement's answer is waited for.
   */
  async query<R>(config: pg.QueryConfig, opening: string | null = null): Promise<R[]> {
    // The wait for a connection to open counts as the statement's own time (ReadWatchdog.query).
    const since = this.watchdog.now;
    const pipe = await this.take();
    if (!pipe.connected) {
      try {
        await pipe.ready;
      } catch (err) {
        pipe.waiting--;
        this.release();
        throw err;
      }
    }
    // Counted in `sent` from here on, in the same turn.
    pipe.waiting--;
    try {
      return (await this.run(pipe, config, since, opening, { config, opening, since, copy: null, answer: noop }))
        .rows as R[];
    } catch (err) {
      const failure = classifyError(readFailure(pipe.client, err));
      if (failure instanceof DbUnavailableError) this.discard(pipe, 'destroy');
      throw failure;
    }
  }

  /** Sends the statement on pipe, which is open, after its opening if any; `call`: a request's, which may be sent again. */
  private run(
    pipe: Pipe,
    config: pg.QueryConfig,
    since: number,
    opening: string | null,
    call: Call | null,
  ): Promise<pg.QueryResult> {
    const begin = opening ?? this.options.timeouts.perStatement;
    if (!begin) return this.send(pipe, config, since, call);
    // Behind a pooler, or with settings of its own: a transaction of its own around it, the
    // three sent in the same write. COMMIT ends a failed one too (as ROLLBACK); only the
    // statement's answer is waited for.
    this.send(pipe, { text: begin }, since, null).catch(() => undefined);
    const answer = this.send(pipe, config, since, call);
    this.send(pipe, { text: 'COMMIT' }, since, null).catch(() => undefined);
    return answer;
  }

  /** Statements sent or waiting for their connection to open, not answered yet. */
  unanswered(): number {
    return this.pipes.reduce((sum, pipe) => sum + (pipe ? load(pipe) : 0), this.queue.length);
  }

  /** Says goodbye on idle connections; one with a statement still unanswered is cut, as end() would wait for it. */
  async close(): Promise<void> {
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = null;
    // Emptied here, so that the answers of the connections cut below hand nothing on.
    for (const waiter of this.queue.splice(0))
      waiter.reject(new DbUnavailableError('database unavailable: the connections are closing'));
    await Promise.all(
      this.pipes.map((pipe) => {
        if (!pipe) return undefined;
        const idle = pipe.connected && !pipe.broken && pipe.sent.length === 0;
        this.discard(pipe, idle ? 'end' : 'destroy');
        return idle ? pipe.client.end().catch(() => undefined) : undefined;
      }),
    );
  }

  /** A connection for one statement, counted in its `waiting` until sent; in turn when all are full. */
  private take(): Promise<Pipe> | Pipe {
    const pipe = this.queue.length === 0 ? this.withRoom() : null;
    return pipe ?? new Promise((resolve, reject) => this.queue.push({ resolve, reject }));
  }

  /** Hands connections with room to the statements in the queue. */
  private release(): void {
    while (this.queue.length > 0) {
      const pipe = this.withRoom();
      if (!pipe) return;
      this.queue.shift()?.resolve(pipe);
    }
  }

  /** The connection pick() chooses, counted for one more statement, if it has fewer than `depth`. */
  private withRoom(): Pipe | null {
    const pipe = this.pick();
    if (load(pipe) >= this.depth) return null;
    pipe.waiting++;
    return pipe;
  }

  /**
   * The connection with the fewest statements waiting or unanswered, one held up only if all
   * are (what it gets would wait for retryMs, then go elsewhere); a missing or broken one is opened.
   */
  private pick(): Pipe {
    const now = this.retryMs ? performance.now() : 0;
    let best: Pipe | null = null;
    let least = Infinity;
    for (const [i, slot] of this.pipes.entries()) {
      const pipe = slot && !slot.broken ? slot : (this.pipes[i] = this.open());
      const counted = load(pipe) + (this.retryMs && this.heldUp(pipe, now) ? heldUpLoad : 0);
      if (counted < least) {
        best = pipe;
        least = counted;
      }
    }
    return best as Pipe;
  }

  private open(): Pipe {
    const { connectionString, connectTimeoutMs = 3000, timeouts, onError } = this.options;
    const client = new pg.Client({
      connectionString,
      connectionTimeoutMillis: connectTimeoutMs,
      application_name: 'portfolio',
      pipeline: true,
    } as pg.ClientConfig) as WatchedClient;
    const pipe: Pipe = {
      client,
      ready: Promise.resolve(),
      connected: false,
      broken: false,
      waiting: 0,
      sent: [],
      answeredAt: performance.now(),
      corked: false,
    };
    // Without a listener the process dies. Statements on the wire fail with it (pg fails them
    // all), and their requests log it; a loss that no request hears of (between statements, or
    // with only copies and statements whose requests have their answer) is logged here, as the pool's are.
    client.on('error', (err) => {
      if (!pipe.broken && !pipe.sent.some((sent) => sent.call)) onError?.(err);
      this.discard(pipe, 'destroy');
    });
    const { session } = timeouts;
    pipe.ready = client
      .connect()
      .then(() => (session ? client.query(session) : undefined))
      .then(
        () => {
          pipe.connected = true;
          this.watchdog.watch(client);
        },
        (err: Error) => {
          this.discard(pipe, 'destroy');
          // The pool's words for the same failure, so logs read the same.
          const message = err.message === 'timeout expired' ? 'timeout exceeded when trying to connect' : err.message;
          throw new DbUnavailableError(`database unavailable: ${message}`, { cause: err });
        },
      );
    // Opened beside the one a statement waits for, it may fail with nobody waiting.
    pipe.ready.catch(() => undefined);
    return pipe;
  }

  private send(pipe: Pipe, config: pg.QueryConfig, since: number, call: Call | null): Promise<pg.QueryResult> {
    const { client } = pipe;
    this.cork(pipe);
    // The first on the wire: the connection is held up from now if no answer comes.
    if (pipe.sent.length === 0) pipe.answeredAt = performance.now();
    pipe.sent.push({ tick: since, call });
    client[started] = oldest(pipe.sent);
    if (call && this.retryMs) this.retryTimer ??= setTimeout(this.retryHeldUp, this.retryMs).unref();
    return new Promise((resolve, reject) => {
      // A copy's answer settles it too: the first answer counts.
      if (call) call.answer = resolve;
      client.query(config, (err: Error | null, result: pg.QueryResult) => {
        // Answers come in the order the statements were sent; a failed connection fails them all.
        pipe.sent.shift();
        pipe.answeredAt = performance.now();
        client[started] = oldest(pipe.sent);
        this.release();
        if (!err) resolve(result);
        // The original's failure counts only when no copy is on its way: the copy's outcome then.
        else if (call?.copy) call.copy.then(resolve, () => reject(err));
        else reject(err);
      });
    });
  }

  /**
   * Sends the requests' statements on connections held up for retryMs again, once, each on the
   * connection with the fewest statements of those that are not; the copy's answer settles the
   * request if it comes first. Copies may take a connection past the depth bound, by at most
   * `depth` per held-up connection. Looks again while any may be sent again.
   */
  private readonly retryHeldUp = () => {
    this.retryTimer = null;
    const now = performance.now();
    let next = Infinity;
    for (const pipe of this.pipes) {
      if (!pipe || pipe.broken || !pipe.sent.some((sent) => sent.call)) continue;
      if (!this.heldUp(pipe, now)) {
        next = Math.min(next, pipe.answeredAt + this.retryMs);
        continue;
      }
      for (const sent of pipe.sent) {
        const { call } = sent;
        if (!call) continue;
        const other = this.answering(pipe, now);
        // Every connection held up: the server is slow, not one of its processes, and sending
        // more would not help. Looked at again after retryMs.
        if (!other) {
          next = Math.min(next, now + this.retryMs);
          break;
        }
        sent.call = null;
        this.#retried++;
        // Watched from the request's start, as the original is.
        call.copy = this.run(other, call.config, call.since, call.opening, null);
        call.copy.then(call.answer, () => undefined);
      }
    }
    if (next !== Infinity) this.retryTimer = setTimeout(this.retryHeldUp, Math.max(1, next - now)).unref();
  };

  /** Whether pipe has statements on the wire and has answered none for retryMs. */
  private heldUp(pipe: Pipe, now: number): boolean {
    return pipe.sent.length > 0 && now - pipe.answeredAt >= this.retryMs;
  }

  /** The open connection with the fewest statements other than pipe, of those not held up; null if none. */
  private answering(pipe: Pipe, now: number): Pipe | null {
    let best: Pipe | null = null;
    for (const other of this.pipes) {
      if (!other?.connected || other.broken || other === pipe || this.heldUp(other, now)) continue;
      if (!best || load(other) < load(best)) best = other;
    }
    return best;
  }

  private cork(pipe: Pipe): void {
    if (pipe.corked) return;
    pipe.corked = true;
    const { stream } = (pipe.client as unknown as { connection: { stream: { cork(): void; uncork(): void } } })
      .connection;
    stream.cork();
    setImmediate(() => {
      pipe.corked = false;
      stream.uncork();
    });
  }

  private discard(pipe: Pipe, how: 'end' | 'destroy'): void {
    if (pipe.broken) return;
    pipe.broken = true;
    this.watchdog.forget(pipe.client);
    if (how === 'destroy')
      (pipe.client as unknown as { connection: { stream: { destroy(): void } } }).connection.stream.destroy();
  }
}

function noop(): void {}

/** Statements a connection carries: waiting to be sent on it, or unanswered. */
function load(pipe: Pipe): number {
  return pipe.waiting + pipe.sent.length;
}

/** What pick() counts a held-up connection as carrying beyond its statements: more than any other. */
const heldUpLoad = 1e9;

/** The earliest tick of the statements on the wire (those that waited for the connection may be earlier than ones sent before them); 0 for none. */
function oldest(sent: readonly Sent[]): number {
  let least = sent[0]?.tick ?? 0;
  for (const { tick } of sent) if (tick < least) least = tick;
  return least;
}
