// Slows down password guessing without letting anyone lock an account for its owner: more than
// 10 failed logins for one account from one client address, or 100 from one address, within 15
// minutes are answered 429 with Retry-After until the window ends. A failure is counted after its
// password check failed, never before. The counts live in the database, so every worker process
// and instance sees the same ones. Password checks themselves wait in turn per address (CheckQueue).
import type { Db } from '../db/index.ts';
import { HttpError } from '../http/index.ts';

interface ThrottleLimits {
  /** Failures of one account from one address. */
  perPair: number;
  perAddress: number;
  windowSeconds: number;
}

const defaultThrottleLimits: ThrottleLimits = { perPair: 10, perAddress: 100, windowSeconds: 15 * 60 };

/** One login's view of the throttle: the account name typed and the client's address. */
export interface LoginGate {
  /** 429 when this account from this address, or this address, has failed too often. */
  check: (username: string) => Promise<void>;
  /** The password check failed: counted for the account from this address and for the address. */
  fail: (username: string) => Promise<void>;
  /** The password was right: this account from this address starts over. */
  succeed: (username: string) => Promise<void>;
}

interface ThrottleOptions {
  db: Db;
  limits?: ThrottleLimits;
}

export class LoginThrottle {
  private readonly db: Db;
  private readonly limits: ThrottleLimits;

  constructor(options: ThrottleOptions) {
    this.db = options.db;
    this.limits = options.limits ?? defaultThrottleLimits;
  }

  /** The gate for one request from address; onBlocked writes the error-log line of a refused attempt. */
  gate(address: string, onBlocked: (message: string) => void): LoginGate {
    return {
      check: (username) => this.check(keysOf(username, address), address, onBlocked),
      fail: (username) => this.fail(keysOf(username, address)),
      succeed: (username) => this.succeed(keysOf(username, address)),
    };
  }

  /** Deletes the counts of windows that have ended; returns how many. */
  async deleteExpired(): Promise<number> {
    const rows = await this.db.query(
      'DELETE FROM login_attempt WHERE window_start <= now() - make_interval(secs => $1::int) RETURNING 1',
      [this.limits.windowSeconds],
    );
    return rows.length;
  }

  private async check(keys: string[], address: string, onBlocked: (message: string) => void): Promise<void> {
    const rows = await this.db.query<{ key: string; failures: number; retryAfter: number }>(
      `SELECT key, failures,
              greatest(1, ceil(extract(epoch FROM window_start + make_interval(secs => $2::int) - now())))::int AS "retryAfter"
         FROM login_attempt
        WHERE key = ANY($1::text[]) AND window_start > now() - make_interval(secs => $2::int)`,
      [keys, this.limits.windowSeconds],
    );
    const over = rows.find((r) => r.failures >= (r.key.startsWith('pair:') ? this.limits.perPair : this.limits.perAddress));
    if (!over) return;
    const what = over.key.startsWith('pair:') ? `for user ${over.key.slice(5, over.key.lastIndexOf('|'))} from ${address}` : `from ${address}`;
    onBlocked(`login ${what} refused for ${over.retryAfter} s: ${over.failures} failed logins ${what} within ${this.limits.windowSeconds} s`);
    const whose = over.key.startsWith('pair:') ? 'for this account from your address' : 'from your address';
    throw new HttpError(429, `Too many failed logins ${whose}; try again in ${formatWait(over.retryAfter)}.`, {
      headers: { 'retry-after': String(over.retryAfter) },
    });
  }

  private async fail(keys: string[]): Promise<void> {
    await this.db.query(
      `INSERT INTO login_attempt AS a (key, failures, window_start)
       SELECT k, 1, now() FROM unnest($1::text[]) AS k
       ON CONFLICT (key) DO UPDATE SET
         failures = CASE WHEN a.window_start <= now() - make_interval(secs => $2::int) THEN 1 ELSE a.failures + 1 END,
         window_start = CASE WHEN a.window_start <= now() - make_interval(secs => $2::int) THEN now() ELSE a.window_start END`,
      [keys, this.limits.windowSeconds],
    );
  }

  private async succeed(keys: string[]): Promise<void> {
    // The owner typed the right password from here: their account starts over from this address;
    // what the address did with other accounts still counts.
    await this.db.query('DELETE FROM login_attempt WHERE key = $1', [keys[0]]);
  }
}

/** The account from the address, and the address. */
function keysOf(username: string, address: string): [string, string] {
  return [`pair:${username.trim().toLowerCase().slice(0, 100)}|${address}`, `address:${address}`];
}

function formatWait(seconds: number): string {
  return seconds < 120 ? `${seconds} seconds` : `${Math.ceil(seconds / 60)} minutes`;
}
