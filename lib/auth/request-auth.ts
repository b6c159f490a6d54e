// Who is asking, for one request: the session cookie's account or HTTP Basic credentials, read
// only when a script asks (public documents never read or set the session; docs/interface.md,
// Accounts and login), and the session changes a script makes, sent as Set-Cookie headers.
import type { IncomingMessage } from 'node:http';
import { parseCookie } from 'cookie';
import type { Db } from '../db/index.ts';
import type { Exchange, Viewer } from '../http/index.ts';
import { HttpError } from '../http/index.ts';
import type { Account } from './account-store.ts';
import { checkCredentials } from './account-store.ts';
import type { LoginGate } from './login-throttle.ts';
import type { LoginTokens } from './login-token.ts';
import type { CookieOptions, LiveSession, SessionStore } from './session.ts';
import {
  cookieName,
  csrfMatches,
  formatClearedCookie,
  formatLoginCookie,
  formatSessionCookie,
  loginCookie,
  sessionCookie,
} from './session.ts';

/** The requester, and how they proved it. */
export interface Identity extends Account {
  via: 'session' | 'basic';
}

/** The session operations a script may ask for (login, logout, forms with a CSRF token). */
export interface SessionControl {
  /** Whether the request carried a session cookie that names no live session: it timed out. */
  expired(): Promise<boolean>;
  /** The live session's CSRF token; only a page for someone logged in asks. */
  csrfToken(): Promise<string>;
  /** Whether token is the live session's CSRF token. */
  checkCsrf(token: string | null): Promise<boolean>;
  /** The login form's token, in a signed cookie: no session row for anyone who only looks (login-token.ts). */
  loginToken(): Promise<string>;
  /** Whether the login form sent the token of its cookie. */
  checkLoginToken(token: string | null): Promise<boolean>;
  /** Logs the account in: a new session under a new id replaces the current one. */
  start(account: Account): Promise<void>;
  /** Ends the current session and clears the cookie. */
  end(): Promise<void>;
}

type FailureReason = 'user not found' | 'Password Mismatch';

interface AuthOptions {
  req: IncomingMessage;
  db: Db;
  sessions: SessionStore;
  cookie: CookieOptions;
  /** Writes the error-log line fail2ban counts. */
  onFailure: (user: string, reason: FailureReason) => void;
  /** Signs and checks the login form's token. */
  loginTokens: LoginTokens;
  /** Counts the failed attempts of this client (login-throttle.ts); 429 when there were too many. */
  gate?: LoginGate;
  /** Where this client's password checks wait their turn. */
  checks: { run: <T>(work: () => Promise<T>) => Promise<T> };
}

interface State {
  identity: Identity | null;
  session: LiveSession | null;
  /** A session cookie came that names no live session. */
  expired: boolean;
}

export class RequestAuth {
  /** Whether a script asked about the requester or the session: the response is then private. */
  used = false;
  /** Set-Cookie headers the session changes need; settle() sends them. */
  private readonly cookies: string[] = [];
  readonly session: SessionControl;
  private readonly options: AuthOptions;
  private state: Promise<State> | null = null;

  constructor(options: AuthOptions) {
    this.options = options;
    this.session = {
      expired: async () => (await this.read()).expired,
      csrfToken: async () => (await this.liveSession()).csrfToken,
      checkCsrf: async (token) => csrfMatches((await this.read()).session, token),
      loginToken: async () => this.loginToken(),
      checkLoginToken: async (token) => this.options.loginTokens.matches(this.cookie(loginCookie), token),
      start: (account) => this.startSession(account),
      end: () => this.endSession(),
    };
  }

  /** The requester, or null for anyone anonymous (an expired session included). */
  async identify(): Promise<Identity | null> {
    return (await this.read()).identity;
  }

  /**
   * Checks a login; a failure is logged for fail2ban and answers null, whatever its reason. An
   * empty name or password cannot be right: null at once, with no check, no count and no log line,
   * so an API tester's empty Basic credentials hold up nobody behind its address.
   */
  async authenticate(username: string, password: string): Promise<Account | null> {
    this.used = true;
    if (username.trim() === '' || password === '') return null;
    const { gate, checks, db } = this.options;
    await gate?.check(username);
    const check = await checks.run(() => checkCredentials(db, username, password));
    if (check.ok) {
      await gate?.succeed(username);
      return check.account;
    }
    await gate?.fail(username);
    this.options.onFailure(username.slice(0, 100), check.reason);
    return null;
  }

  /**
   * After the script: the cookies its session changes need, %u for the access log, and who the
   * page header shows (the answer is then private).
   */
  async settle(ex: Exchange): Promise<void> {
    if (this.cookies.length > 0) ex.res.setHeader('set-cookie', this.cookies);
    if (!this.state) return;
    const state = await this.state.catch(() => null);
    const identity = state?.identity ?? null;
    ex.user = identity?.username ?? null;
    if (this.used) ex.viewer = viewerOf(identity, state?.session ?? null);
  }

  private read(): Promise<State> {
    this.used = true;
    this.state ??= this.lookUp();
    return this.state;
  }

  // Basic credentials, when sent, decide alone: they create no session and ignore the cookie.
  private async lookUp(): Promise<State> {
    const { req, sessions } = this.options;
    const credentials = parseBasic(req.headers.authorization);
    if (credentials) {
      const account = await this.authenticate(credentials.username, credentials.password);
      return { identity: account && { ...account, via: 'basic' }, session: null, expired: false };
    }
    const token = this.cookie(sessionCookie);
    if (token === undefined) return { identity: null, session: null, expired: false };
    const session = await sessions.find(token);
    const identity = session?.account ? { ...session.account, via: 'session' as const } : null;
    return { identity, session, expired: session === null };
  }

  private async liveSession(): Promise<LiveSession> {
    const { session } = await this.read();
    if (!session)
      throw new Error(
        'A CSRF token belongs to a live session, and this request has none; the login form has loginToken().',
      );
    return session;
  }

  /** The token of the login cookie when it still holds, else a new one in a new cookie. */
  private loginToken(): string {
    this.used = true;
    const { loginTokens, cookie } = this.options;
    const current = this.cookie(loginCookie);
    if (loginTokens.isValid(current)) return current;
    const token = loginTokens.issue();
    this.cookies.push(formatLoginCookie(token, loginTokens.maxAge, cookie));
    return token;
  }

  /** The request's cookie of that name, under the name the site gives it (cookieName). */
  private cookie(name: string): string | undefined {
    const header = this.options.req.headers.cookie;
    return header ? parseCookie(header)[cookieName(name, this.options.cookie)] : undefined;
  }

  private async startSession(account: Account): Promise<void> {
    const state = await this.read();
    // Expired rows go at every login, besides the periodic sweep.
    await this.options.sessions.deleteExpired();
    const session = await this.options.sessions.replace(state.session?.token ?? null, account);
    this.cookies.length = 0;
    this.cookies.push(formatSessionCookie(session.token, this.options.cookie));
    this.state = Promise.resolve({ identity: { ...account, via: 'session' }, session, expired: false });
  }

  private async endSession(): Promise<void> {
    const state = await this.read();
    if (state.session) await this.options.sessions.destroy(state.session.token);
    this.cookies.length = 0;
    this.cookies.push(formatClearedCookie(this.options.cookie));
    this.state = Promise.resolve({ identity: null, session: null, expired: false });
  }
}

/** user:password from `Authorization: Basic …` (RFC 7617); null for other schemes; 400 when malformed. */
function parseBasic(header: string | undefined): { username: string; password: string } | null {
  if (!header) return null;
  const match = /^Basic\s+([A-Za-z0-9+/]+={0,2})\s*$/i.exec(header);
  if (!/^Basic(\s|$)/i.test(header)) return null;
  const decoded = match ? Buffer.from(match[1] as string, 'base64').toString('utf8') : '';
  const colon = decoded.indexOf(':');
  if (colon === -1) {
    throw new HttpError(
      400,
      'The Authorization header holds no valid Basic credentials: send "Basic " and base64 of user:password.',
    );
  }
  return { username: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}

/** What the page header shows of the requester: the name, their own loan list, the log-out token (none for Basic). */
function viewerOf(identity: Identity | null, session: LiveSession | null): Viewer | null {
  if (!identity) return null;
  return {
    name: identity.username,
    loans: `entlehnte/${identity.id}`,
    csrfToken: identity.via === 'session' ? (session?.csrfToken ?? null) : null,
  };
}
