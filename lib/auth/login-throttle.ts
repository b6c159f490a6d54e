// Slows down password guessing: more than 10 failed logins for one account, or 100 from one
// client address, within 15 minutes are answered 429 with Retry-After until the window ends.
// The counts live in the database, so every worker process (WEB_CONCURRENCY) sees the same ones.
import type { Db } from '../db/index.ts';
import { HttpError } from '../http/index.ts';

interface ThrottleLimits {
  perAccount: number;
  perAddress: number;
  windowSeconds: number;
}

const defaultThrottleLimits: ThrottleLimits = { perAccount: 10, perAddress: 100, windowSeconds: 15 * 60 };

/** One login's view of the throttle: the account name typed and the client's address. */
export interface LoginGate {
  /** Counts the attempt as a failure up front (so parallel guesses cannot slip through); 429 when over a limit. */
  begin: (username: string) => Promise<void>;
  /** The password was right: the attempt is taken back. */
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
      begin: (username) => this.begin(username, address, onBlocked),
      succeed: (username) => this.succeed(username, address),
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

  private async begin(username: string, address: string, onBlocked: (message: string) => void): Promise<void> {
    const keys = [userKey(username), `address:${address}`];
    const rows = await this.db.query<{ key: string; failures: number; retryAfter: number }>(
      `INSERT INTO login_attempt AS a (key, failures, window_start)
       SELECT k, 1, now() FROM unnest($1::text[]) AS k
       ON CONFLICT (key) DO UPDATE SET
         failures = CASE WHEN a.window_start <= now() - make_interval(secs => $2::int) THEN 1 ELSE a.failures + 1 END,
         window_start = CASE WHEN a.window_start <= now() - make_interval(secs => $2::int) THEN now() ELSE a.window_start END
       RETURNING key, failures,
         greatest(1, ceil(extract(epoch FROM a.window_start + make_interval(secs => $2::int) - now())))::int AS "retryAfter"`,
      [keys, this.limits.windowSeconds],
    );
    const over = rows.find((r) => r.failures > (r.key.startsWith('user:') ? this.limits.perAccount : this.limits.perAddress));
    if (!over) return;
    const what = over.key.startsWith('user:') ? `for user ${over.key.slice(5)}` : `from ${address}`;
    onBlocked(`login ${what} refused for ${over.retryAfter} s: ${over.failures - 1} failed logins ${what} within ${this.limits.windowSeconds} s`);
    throw new HttpError(429, `Too many failed logins ${over.key.startsWith('user:') ? 'for this account' : 'from your address'}; try again in ${formatWait(over.retryAfter)}.`, {
      headers: { 'retry-after': String(over.retryAfter) },
    });
  }

  private async succeed(username: string, address: string): Promise<void> {
    // Only this attempt is taken back: a success does not wipe out the guesses others made.
    await this.db.query(
      'UPDATE login_attempt SET failures = greatest(0, failures - 1) WHERE key = ANY($1::text[])',
      [[userKey(username), `address:${address}`]],
    );
  }
}

function userKey(username: string): string {
  return `user:${username.trim().toLowerCase().slice(0, 100)}`;
}

function formatWait(seconds: number): string {
  return seconds < 120 ? `${seconds} seconds` : `${Math.ceil(seconds / 60)} minutes`;
}
