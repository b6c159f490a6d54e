// The WAL position after a client's last change, in a short signed cookie, so that its next reads
// go to a replica only once the replica has replayed that far (lib/db/replicas.ts): the client
// reads its own writes, browsers and API clients that keep cookies alike. Signed with the site's
// secret, so a made-up position cannot send reads to the primary or make them wait.
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { parseCookie, stringifySetCookie } from 'cookie';
import type { CookieOptions } from './session.ts';
import { cookieName } from './session.ts';

export const writtenCookie = 'portfolio_written';
const valuePattern = /^([0-9a-f]{1,16})\.([A-Za-z0-9_-]{22})$/;

export class WrittenMarks {
  /**
   * maxAgeSeconds: how long the cookie lives. A replica within the allowed lag has replayed every
   * change older than the lag, so a cookie older than that changes nothing.
   */
  constructor(
    private readonly secret: Buffer,
    private readonly maxAgeSeconds: number,
  ) {}

  /** The position the request's cookie carries; 0 for none or one that does not verify. */
  read(req: IncomingMessage, options: CookieOptions): bigint {
    const header = req.headers.cookie;
    if (!header?.includes(writtenCookie)) return 0n;
    const match = valuePattern.exec(parseCookie(header)[cookieName(writtenCookie, options)] ?? '');
    if (!match) return 0n;
    const [, lsn, mac] = match as unknown as [string, string, string];
    return timingSafeEqual(Buffer.from(mac), Buffer.from(this.sign(lsn))) ? BigInt(`0x${lsn}`) : 0n;
  }

  /** The Set-Cookie value for a change that left the primary at lsn. */
  cookie(lsn: bigint, options: CookieOptions): string {
    const value = lsn.toString(16);
    return stringifySetCookie(cookieName(writtenCookie, options), `${value}.${this.sign(value)}`, {
      httpOnly: true,
      sameSite: 'lax',
      path: options.path,
      secure: options.secure,
      maxAge: this.maxAgeSeconds,
    });
  }

  private sign(value: string): string {
    return createHmac('sha256', this.secret).update(`written.${value}`).digest('base64url').slice(0, 22);
  }
}
