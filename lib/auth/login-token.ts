// The login form's token against login CSRF, with no session row per visitor: a signed
// double-submit token. GET /login puts a random value, the time and an HMAC of both under the
// site's secret in an HttpOnly cookie and in the form; POST /login accepts only the pair, within
// the session idle time. Another site can neither read the cookie nor make a value that verifies.
// https://cheatsheetseries.owasp.org/cheatsheets/Cross-Site_Request_Forgery_Prevention_Cheat_Sheet.html
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Queryable } from '../db/index.ts';

const tokenPattern = /^([0-9]{1,12})\.([A-Za-z0-9_-]{22})\.([A-Za-z0-9_-]{43})$/;

/** The site's secret, made once and kept in the database so every process signs alike. */
export async function siteSecret(db: Queryable): Promise<Buffer> {
  await db.query('INSERT INTO site_secret (id, secret) VALUES (1, $1) ON CONFLICT (id) DO NOTHING', [
    randomBytes(32).toString('base64url'),
  ]);
  const [row] = await db.query<{ secret: string }>('SELECT secret FROM site_secret WHERE id = 1');
  return Buffer.from((row as { secret: string }).secret, 'base64url');
}

export class LoginTokens {
  constructor(
    private readonly secret: Buffer,
    private readonly maxAgeSeconds: number,
  ) {}

  /** A new token: issued now, a random value, their signature. */
  issue(now = Date.now()): string {
    const issued = String(Math.floor(now / 1000));
    const nonce = randomBytes(16).toString('base64url');
    return `${issued}.${nonce}.${this.sign(issued, nonce)}`;
  }

  /** Whether a token is one of ours and not older than the session idle time. */
  isValid(token: string | undefined | null, now = Date.now()): token is string {
    const match = tokenPattern.exec(token ?? '');
    if (!match) return false;
    const [, issued, nonce, mac] = match as unknown as [string, string, string, string];
    const age = Math.floor(now / 1000) - Number(issued);
    if (age < -60 || age > this.maxAgeSeconds) return false;
    return timingSafeEqual(Buffer.from(mac), Buffer.from(this.sign(issued, nonce)));
  }

  /** The double submit: the cookie's token is valid and the form sent the same one. */
  matches(cookie: string | undefined, submitted: string | null, now = Date.now()): boolean {
    if (!this.isValid(cookie, now) || !submitted || submitted.length !== cookie.length) return false;
    return timingSafeEqual(Buffer.from(cookie), Buffer.from(submitted));
  }

  get maxAge(): number {
    return this.maxAgeSeconds;
  }

  private sign(issued: string, nonce: string): string {
    return createHmac('sha256', this.secret).update(`login.${issued}.${nonce}`).digest('base64url');
  }
}
