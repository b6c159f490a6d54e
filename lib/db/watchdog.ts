// Statements that get no answer: a server that hangs (stopped, unreachable) is given up on here,
// since PostgreSQL enforces statement_timeout only while it runs.
import type pg from 'pg';

export const started = Symbol('read watchdog: tick the running statement started at, 0 when idle');
const timedOut = Symbol('read watchdog: the connection was cut for want of an answer');
export type WatchedClient = pg.PoolClient & { [started]?: number; [timedOut]?: boolean };

/**
 * Gives up on statements that get no answer within timeoutMs, as node-postgres's query_timeout
 * does, but with one timer for the whole pool instead of one per statement (per-statement timers
 * kept statement objects alive past young collections; docs/performance.md): a clock that ticks
 * four times a second, and each connection stamped with the tick its statement started at.
 * A connection past its time is cut: its statement fails as unavailable (503) and the pool
 * drops it. The answer comes between timeoutMs and timeoutMs + 250 ms.
 */
export class ReadWatchdog {
  static readonly tickMs = 250;
  private tick = 1;
  /** Ticks a statement may run. */
  private readonly limit: number;
  private readonly clients = new Set<WatchedClient>();
  private readonly timer: NodeJS.Timeout;

  constructor(pool: pg.Pool, timeoutMs: number, onError?: (err: Error) => void) {
    this.limit = Math.ceil(timeoutMs / ReadWatchdog.tickMs);
    pool.on('connect', (client) => {
      this.clients.add(client as WatchedClient);
      // A checked-out connection that fails between statements emits here; without a listener
      // the process dies. Its next statement then fails as unavailable. An idle connection's
      // error is the pool's to report (its own listener, pool.on('error') above).
      client.on('error', (err) => {
        if (client.listenerCount('error') === 1) onError?.(err);
      });
    });
    pool.on('remove', (client) => this.clients.delete(client as WatchedClient));
    this.timer = setInterval(() => this.check(), ReadWatchdog.tickMs).unref();
  }

  /** The current tick, for connections that stamp themselves (Pipelines). */
  get now(): number {
    return this.tick;
  }

  /** Watches a connection from outside the pool: its stamp is its oldest unanswered statement's tick. */
  watch(client: WatchedClient): void {
    this.clients.add(client);
  }

  forget(client: WatchedClient): void {
    this.clients.delete(client);
  }

  /**
   * Runs a statement, watched from `since` (a tick of this clock): the time a statement waited
   * for its connection counts as its own, so waiting in the pool and then getting no answer
   * fails as soon as not getting an answer alone would.
   */
  async query(client: pg.PoolClient, config: pg.QueryConfig | string, since = this.tick): Promise<pg.QueryResult> {
    const watched = client as WatchedClient;
    watched[started] = since;
    try {
      // The callback form: with pg's promise form, every statement's objects outlived the young
      // generation under load (docs/performance.md).
      return await new Promise<pg.QueryResult>((resolve, reject) => {
        // { text } without values runs as a simple query, as the string does: several statements may go in one.
        client.query(
          typeof config === 'string' ? { text: config } : config,
          (err: Error | null, result: pg.QueryResult) => (err ? reject(err) : resolve(result)),
        );
      });
    } catch (err) {
      throw readFailure(watched, err);
    } finally {
      watched[started] = 0;
    }
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private check(): void {
    this.tick++;
    for (const client of this.clients) {
      const since = client[started] ?? 0;
      // Cut after more than limit ticks: a stamp may fall just before a tick, so it takes limit + 1
      // ticks to be sure of timeoutMs.
      if (since === 0 || this.tick - since <= this.limit) continue;
      client[timedOut] = true;
      client[started] = 0;
      (client as unknown as { connection: { stream: { destroy(): void } } }).connection.stream.destroy();
    }
  }
}

/**
 * What a failed statement is thrown as. Called in the async function that awaited it, as pg's
 * promise form does: the stack leads back to the code that sent the statement (async frames),
 * not to the socket that brought the error. On a connection the watchdog cut, the message
 * node-postgres's query_timeout gives, so logs read the same.
 */
export function readFailure(client: WatchedClient, err: unknown): unknown {
  if (!(err instanceof Error)) return err;
  Error.captureStackTrace(err, readFailure);
  return client[timedOut] ? new Error('Query read timeout', { cause: err }) : err;
}
