// Login sessions and the login throttle of a running server: each request's Requester is made
// from them, failed logins go to the error log in fail2ban's words, and expired rows are swept.
import type { Config } from '../config.ts';
import type { Db } from '../db/index.ts';
import type { Exchange, Target } from '../http/index.ts';
import { addressGroup, clientGone, HttpError } from '../http/index.ts';
import type { Logs } from '../log/index.ts';
import { CheckQueue } from './check-queue.ts';
import { LoginThrottle } from './login-throttle.ts';
import { LoginTokens, siteSecret } from './login-token.ts';
import { RequestAuth } from './request-auth.ts';
import { WrittenMarks } from './written-mark.ts';
import { Requester } from './requester.ts';
import { SessionStore } from './session.ts';

const sweepEveryMs = 10 * 60 * 1000;

/** Refused and failed logins, and the password checks run, since the start, for the metrics. */
export interface LoginTally {
  /** Wrong name or password. */
  failed: number;
  /** Refused by the throttle (429). */
  throttled: number;
  /** Refused because too many checks were waiting (503). */
  busy: number;
  /** Not checked because the client closed the connection before its check's turn. */
  left: number;
  /** Password checks run (each a scrypt). */
  checked: number;
}

export class Auth {
  private readonly sessions: SessionStore;
  private readonly throttle: LoginThrottle;
  private readonly checks = new CheckQueue();
  private readonly sweep: NodeJS.Timeout;
  readonly tally: LoginTally = { failed: 0, throttled: 0, busy: 0, left: 0, checked: 0 };
  /** The cookie that tells where a client's last change left the primary (reads from replicas). */
  readonly written: WrittenMarks;
  private readonly loginTokens: LoginTokens;

  /** The sessions and the throttle on db, with the site's secret for the login form's tokens and the written marks. */
  static async open(db: Db, config: Config, logs: Logs): Promise<Auth> {
    return new Auth(db, config, logs, await siteSecret(db));
  }

  private constructor(
    private readonly db: Db,
    config: Config,
    private readonly logs: Logs,
    secret: Buffer,
  ) {
    this.loginTokens = new LoginTokens(secret, config.sessionIdleMinutes * 60);
    this.written = new WrittenMarks(secret, Math.ceil(config.replicaMaxLagMs / 1000) + 5);
    this.sessions = new SessionStore(db, { idleMinutes: config.sessionIdleMinutes, maxHours: config.sessionMaxHours });
    this.throttle = new LoginThrottle({ db });
    this.sweep = setInterval(() => {
      this.sessions
        .deleteExpired()
        .catch((err: unknown) => logs.error(`deleting expired sessions failed: ${(err as Error).message}`));
      this.throttle
        .deleteExpired()
        .catch((err: unknown) => logs.error(`deleting old login counts failed: ${(err as Error).message}`));
    }, sweepEveryMs).unref();
  }

  /** Checks waiting for their turn, for the metrics. */
  get checksWaiting(): number {
    return this.checks.waiting;
  }

  /** Who is asking in this exchange, read only when a script asks. */
  requester(ex: Exchange, target: Target): Requester {
    const { req, res, client } = ex;
    return new Requester(() => {
      // The throttle counts, and the checks take turns, by the same client: an IPv6 /64 is one.
      const group = addressGroup(client.address);
      return new RequestAuth({
        req,
        db: this.db,
        sessions: this.sessions,
        loginTokens: this.loginTokens,
        cookie: { path: target.basePath + '/', secure: target.secure },
        gate: this.throttle.gate(group, (message) => {
          this.tally.throttled++;
          this.logs.error(message, { client: client.label });
        }),
        checks: { run: (work) => this.check(group, work, clientGone(res)) },
        onFailure: (user, reason) => {
          this.tally.failed++;
          this.logs.authFailure({ client: client.label, user, uri: target.path, reason, referer: req.headers.referer });
        },
      });
    });
  }

  /** One password check in the client's turn; dropped when the client leaves before it. */
  private async check<T>(group: string, work: () => Promise<T>, gone: AbortSignal): Promise<T> {
    let ran = false;
    try {
      return await this.checks.run(
        group,
        () => {
          ran = true;
          this.tally.checked++;
          return work();
        },
        gone,
      );
    } catch (err) {
      if (!ran && gone.aborted) this.tally.left++;
      else if (err instanceof HttpError && err.status === 503) this.tally.busy++;
      throw err;
    }
  }

  /** Live sessions, for the metrics. */
  countSessions(): Promise<{ signedIn: number; anonymous: number }> {
    return this.sessions.countLive();
  }

  close(): void {
    clearInterval(this.sweep);
  }
}
