// Who is asking, for one request: the session cookie's account or HTTP Basic credentials,
// read only when a script asks (public documents never read or set the session, CONTRACT 4),
// and the session changes a script makes, collected as Set-Cookie headers for the front.
import type { IncomingMessage } from 'node:http';
import { parseCookie } from 'cookie';
import type { Account } from './accounts.ts';
import { checkCredentials } from './accounts.ts';
import type { Db } from './db.ts';
import { HttpError } from './http-error.ts';
import type { LoginGate } from './login-throttle.ts';
import type { CookieOptions, LiveSession, SessionStore } from './session.ts';
import { csrfMatches, formatClearedCookie, formatSessionCookie, sessionCookie } from './session.ts';

/** The requester, and how they proved it. */
export interface Identity extends Account {
  via: 'session' | 'basic';
}

/** What the page header shows of the requester. */
export interface PageUser {
  name: string;
  /** Their own loan list, relative to <base href>. */
  loans: string;
  /** For the log-out form; null for Basic credentials, which have nothing to log out of. */
  csrfToken: string | null;
}

/** The session operations a script may ask for (login, logout, forms with a CSRF token). */
export interface SessionControl {
  /** Whether the request carried a session cookie that names no live session: it timed out. */
  expired(): Promise<boolean>;
  /** The live session's CSRF token; starts an anonymous session when there is none (login form). */
  csrfToken(): Promise<string>;
  /** Whether token is the live session's CSRF token. */
  checkCsrf(token: string | null): Promise<boolean>;
  /** Logs the account in: a new session under a new id replaces the current one. */
  start(account: Account): Promise<void>;
  /** Ends the current session and clears the cookie. */
  end(): Promise<void>;
}

/**
 * A SessionControl that asks find() for the real one when a method is called. The front gives
 * every request one of these instead of a `get session()` accessor: an object literal with an
 * accessor gets a hidden class of its own per request, and the dead classes, collected only
 * with the old generation, kept each request's objects alive through every young collection:
 * under load a person page moved about 10 KB per request into the old generation, and the
 * server ran a full collection every few thousand requests (README, Benchmark).
 */
export function deferredSession(find: () => SessionControl): SessionControl {
  return {
    expired: () => find().expired(),
    csrfToken: () => find().csrfToken(),
    checkCsrf: (token) => find().checkCsrf(token),
    start: (account) => find().start(account),
    end: () => find().end(),
  };
}

export type FailureReason = 'user not found' | 'Password Mismatch';

export interface AuthOptions {
  req: IncomingMessage;
  db: Db;
  sessions: SessionStore;
  cookie: CookieOptions;
  /** Writes the error-log line fail2ban counts. */
  onFailure: (user: string, reason: FailureReason) => void;
  /** Counts the attempts of this client (lib/login-throttle.ts); 429 when there were too many. */
  gate?: LoginGate;
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
  /** Set-Cookie headers for the front to send. */
  readonly cookies: string[] = [];
  readonly session: SessionControl;
  private readonly options: AuthOptions;
  private state: Promise<State> | null = null;

  constructor(options: AuthOptions) {
    this.options = options;
    this.session = {
      expired: async () => (await this.read()).expired,
      csrfToken: async () => (await this.openSession()).csrfToken,
      checkCsrf: async (token) => csrfMatches((await this.read()).session, token),
      start: (account) => this.startSession(account),
      end: () => this.endSession(),
    };
  }

  /** The requester, or null for anyone anonymous (an expired session included). */
  async identify(): Promise<Identity | null> {
    return (await this.read()).identity;
  }

  /** Checks a login; a failure is logged for fail2ban and answers null, whatever its reason. */
  async authenticate(username: string, password: string): Promise<Account | null> {
    this.used = true;
    await this.options.gate?.begin(username);
    const check = await checkCredentials(this.options.db, username, password);
    if (check.ok) {
      await this.options.gate?.succeed(username);
      return check.account;
    }
    this.options.onFailure(username.slice(0, 100), check.reason);
    return null;
  }

  /** The header's view of the requester, once a script has asked who it is. */
  async pageUser(): Promise<PageUser | null> {
    if (!this.state) return null;
    const { identity, session } = await this.state;
    if (!identity) return null;
    return { name: identity.username, loans: `entlehnte/${identity.id}`, csrfToken: identity.via === 'session' ? (session?.csrfToken ?? null) : null };
  }

  /** The authenticated user name for the access log (%u), when a script asked. */
  async username(): Promise<string | null> {
    if (!this.state) return null;
    return (await this.state.catch(() => null))?.identity?.username ?? null;
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
    const token = req.headers.cookie ? parseCookie(req.headers.cookie)[sessionCookie] : undefined;
    if (token === undefined) return { identity: null, session: null, expired: false };
    const session = await sessions.find(token);
    const identity = session?.account ? { ...session.account, via: 'session' as const } : null;
    return { identity, session, expired: session === null };
  }

  private async openSession(): Promise<LiveSession> {
    const state = await this.read();
    if (state.session) return state.session;
    const session = await this.options.sessions.create(null);
    this.cookies.push(formatSessionCookie(session.token, this.options.cookie));
    this.state = Promise.resolve({ ...state, session });
    return session;
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
    throw new HttpError(400, 'The Authorization header holds no valid Basic credentials: send "Basic " and base64 of user:password.');
  }
  return { username: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}
