// Server-side login sessions in the session table: a random 32-byte id in an HttpOnly,
// SameSite=Lax cookie, stored only as its SHA-256, with idle and absolute time-outs.
// https://cheatsheetseries.owasp.org/cheatsheets/Session_Management_Cheat_Sheet.html
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { stringifySetCookie } from 'cookie';
import type { Account } from './account-store.ts';
import type { Db, Queryable } from '../db/index.ts';

export const sessionCookie = 'portfolio_session';
const tokenPattern = /^[A-Za-z0-9_-]{43}$/;
// last_seen_at is written at most this often, not on every request.
const touchEverySeconds = 60;

interface SessionSettings {
  idleMinutes: number;
  maxHours: number;
}

/** A session that has not timed out; account is null before the login. */
export interface LiveSession {
  token: string;
  csrfToken: string;
  account: Account | null;
}

export interface CookieOptions {
  /** The site's path prefix plus '/'. */
  path: string;
  secure: boolean;
}

export class SessionStore {
  private readonly db: Db;
  private readonly settings: SessionSettings;

  constructor(db: Db, settings: SessionSettings) {
    this.db = db;
    this.settings = settings;
  }

  /** A new session with a fresh id: at login a new id, never the one the browser had (session fixation). */
  create(account: Account | null): Promise<LiveSession> {
    return this.insert(this.db, account);
  }

  /**
   * A login: the browser's old session goes and a new one under a new id comes, in one
   * transaction, so a database failure between the two leaves the old session as it was.
   */
  replace(oldToken: string | null, account: Account): Promise<LiveSession> {
    return this.db.transaction(async (tx) => {
      if (oldToken !== null && tokenPattern.test(oldToken))
        await tx.query('DELETE FROM session WHERE id = $1', [hashToken(oldToken)]);
      return this.insert(tx, account);
    });
  }

  private async insert(db: Queryable, account: Account | null): Promise<LiveSession> {
    const token = randomBytes(32).toString('base64url');
    const csrfToken = randomBytes(32).toString('base64url');
    await db.query(
      `INSERT INTO session (id, account_id, csrf_token, expires_at) VALUES ($1, $2, $3, now() + make_interval(hours => $4::int))`,
      [hashToken(token), account?.id ?? null, csrfToken, this.settings.maxHours],
    );
    return { token, csrfToken, account };
  }

  /** The live session of a cookie value; null when it names none (unknown, ended or timed out). */
  async find(token: string): Promise<LiveSession | null> {
    if (!tokenPattern.test(token)) return null;
    const id = hashToken(token);
    const [row] = await this.db.query<{ live: boolean; touch: boolean; csrfToken: string; account: Account | null }>(
      `SELECT s.expires_at > now() AND s.last_seen_at > now() - make_interval(mins => $2::int) AS live,
              s.last_seen_at < now() - make_interval(secs => $3::int) AS touch,
              s.csrf_token AS "csrfToken",
              CASE WHEN a.id IS NULL THEN NULL ELSE json_build_object(
                'id', a.id, 'username', a.username, 'role', a.role,
                'person', CASE WHEN p.id IS NULL THEN NULL
                               ELSE json_build_object('slug', p.slug, 'vorname', p.vorname, 'nachname', p.nachname) END) END AS account
         FROM session s
         LEFT JOIN account a ON a.id = s.account_id
         LEFT JOIN person p ON p.username = a.person_username
        WHERE s.id = $1`,
      [id, this.settings.idleMinutes, touchEverySeconds],
    );
    if (!row) return null;
    if (!row.live) {
      await this.db.query('DELETE FROM session WHERE id = $1', [id]);
      return null;
    }
    if (row.touch) await this.db.query('UPDATE session SET last_seen_at = now() WHERE id = $1', [id]);
    return { token, csrfToken: row.csrfToken, account: row.account };
  }

  /**
   * A log-out, in a transaction although it is one statement: a statement sent to a server that
   * hangs may still run when it resumes, after the client got 503; a transaction whose COMMIT
   * was never sent cannot, and one whose COMMIT got no answer is looked up (lib/db/postgres.ts).
   */
  async destroy(token: string): Promise<void> {
    if (!tokenPattern.test(token)) return;
    await this.db.transaction((tx) => tx.query('DELETE FROM session WHERE id = $1', [hashToken(token)]));
  }

  /** Sessions within both time-outs: signed in, and anonymous ones that carry a login form's token. */
  async countLive(): Promise<{ signedIn: number; anonymous: number }> {
    const [row] = await this.db.query<{ signedIn: number | string; anonymous: number | string }>(
      `SELECT count(*) FILTER (WHERE account_id IS NOT NULL) AS "signedIn", count(*) FILTER (WHERE account_id IS NULL) AS anonymous
         FROM session WHERE expires_at > now() AND last_seen_at > now() - make_interval(mins => $1::int)`,
      [this.settings.idleMinutes],
    );
    return { signedIn: Number(row?.signedIn ?? 0), anonymous: Number(row?.anonymous ?? 0) };
  }

  /** Deletes sessions past either time-out; returns how many. */
  async deleteExpired(): Promise<number> {
    const rows = await this.db.query(
      `DELETE FROM session WHERE expires_at <= now() OR last_seen_at <= now() - make_interval(mins => $1::int) RETURNING 1`,
      [this.settings.idleMinutes],
    );
    return rows.length;
  }
}

/**
 * A cookie's name for the site as the request reached it: with the __Host- prefix where it is
 * served over HTTPS at the root of its host, so that browsers take the cookie only from this very
 * host over HTTPS and never from a sibling host or plain HTTP (RFC 6265bis, section 4.1.3.2).
 */
export function cookieName(name: string, options: CookieOptions): string {
  return options.secure && options.path === '/' ? `__Host-${name}` : name;
}

/** The cookie that carries the session id; no Max-Age, so it ends with the browser too. */
export function formatSessionCookie(token: string, options: CookieOptions): string {
  return stringifySetCookie(cookieName(sessionCookie, options), token, {
    httpOnly: true,
    sameSite: 'lax',
    path: options.path,
    secure: options.secure,
  });
}

/** The login form's token (login-token.ts): HttpOnly like the session's, and gone with the idle time. */
export const loginCookie = 'portfolio_login';

export function formatLoginCookie(token: string, maxAgeSeconds: number, options: CookieOptions): string {
  return stringifySetCookie(cookieName(loginCookie, options), token, {
    httpOnly: true,
    sameSite: 'lax',
    path: options.path,
    secure: options.secure,
    maxAge: maxAgeSeconds,
  });
}

export function formatClearedCookie(options: CookieOptions): string {
  return stringifySetCookie(cookieName(sessionCookie, options), '', {
    httpOnly: true,
    sameSite: 'lax',
    path: options.path,
    secure: options.secure,
    maxAge: 0,
    expires: new Date(0),
  });
}

/** Compares a submitted CSRF token with the session's in constant time. */
export function csrfMatches(session: LiveSession | null, submitted: string | null | undefined): boolean {
  if (!session || !submitted) return false;
  const a = Buffer.from(session.csrfToken);
  const b = Buffer.from(submitted);
  return a.length === b.length && timingSafeEqual(a, b);
}

function hashToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}
