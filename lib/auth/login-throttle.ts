// Slows down password guessing without letting anyone lock an account for its owner: an account
// with 10 failed logins from one client (an address, or an IPv6 /64: addressGroup), or with 3
// from a client that has 100 in all, within 15 minutes is answered 429 with Retry-After from
// there. A client's failures never refuse an account that has not been failing from it: behind
// one NAT, a noisy neighbour cannot lock everyone out (docs/robustness.md, Password guessing).
// A failure is counted after its password check failed, never before. The counts live in the
// database, so every worker process and instance sees the same ones. Password checks themselves
// wait their turn by client (CheckQueue).
import type { Db } from '../db/index.ts';
import { HttpError } from '../http/index.ts';

interface ThrottleLimits {
  /** Failures of one account from one client. */
  perPair: number;
  /** Failures from one client that make it noisy. */
  perAddress: number;
  /** Failures of one account from a noisy client. */
  perPairFromNoisy: number;
  windowSeconds: number;
}

const defaultThrottleLimits: ThrottleLimits = {
  perPair: 10,
  perAddress: 100,
  perPairFromNoisy: 3,
  windowSeconds: 15 * 60,
};

/** One login's view of the throttle: the account name typed and the client's address. */
export interface LoginGate {
  /** 429 when this account has failed too often from this client. */
  check: (username: string) => Promise<void>;
  /** The password check failed: counted for the account from this client and for the client. */
  fail: (username: string) => Promise<void>;
  /** The password was right: this account from this client starts over. */
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

  /** The gate for one request from address (a client: addressGroup); onBlocked writes the error-log line of a refused attempt. */
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

  private async check(keys: [string, string], address: string, onBlocked: (message: string) => void): Promise<void> {
    const rows = await this.db.query<{ key: string; failures: number; retryAfter: number }>(
      `SELECT key, failures,
              greatest(1, ceil(extract(epoch FROM window_start + make_interval(secs => $2::int) - now())))::int AS "retryAfter"
         FROM login_attempt
        WHERE key = ANY($1::text[]) AND window_start > now() - make_interval(secs => $2::int)`,
      [keys, this.limits.windowSeconds],
    );
    const pair = rows.find((r) => r.key === keys[0]);
    const whole = rows.find((r) => r.key === keys[1]);
    if (!pair) return;
    const { perPair, perAddress, perPairFromNoisy, windowSeconds } = this.limits;
    const noisy = whole !== undefined && whole.failures >= perAddress;
    if (pair.failures < (noisy ? perPairFromNoisy : perPair)) return;
    // Under its own limit, the account is held only as long as the client stays noisy.
    const retryAfter =
      pair.failures >= perPair || !whole ? pair.retryAfter : Math.min(pair.retryAfter, whole.retryAfter);
    const user = keys[0].slice(5, keys[0].lastIndexOf('|'));
    const also = pair.failures < perPair && whole ? `, and ${whole.failures} from ${address}` : '';
    onBlocked(
      `login for user ${user} from ${address} refused for ${retryAfter} s: ${pair.failures} failed logins for user ${user} from ${address}${also} within ${windowSeconds} s`,
    );
    throw new HttpError(
      429,
      `Too many failed logins for this account from your address; try again in ${formatWait(retryAfter)}.`,
      {
        headers: { 'retry-after': String(retryAfter) },
      },
    );
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
    // The owner typed the right password from here: their account starts over from this client;
    // what the client did with other accounts still counts.
    await this.db.query('DELETE FROM login_attempt WHERE key = $1', [keys[0]]);
  }
}

/** The account from the client, and the client. */
function keysOf(username: string, address: string): [string, string] {
  return [`pair:${username.trim().toLowerCase().slice(0, 100)}|${address}`, `address:${address}`];
}

function formatWait(seconds: number): string {
  return seconds < 120 ? `${seconds} seconds` : `${Math.ceil(seconds / 60)} minutes`;
}
