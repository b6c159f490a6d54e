// A query string or a form body as parameters, read as PHP and URLSearchParams read them, but
// strict about UTF-8 (docs/interface.md, URLs).
import { HttpError } from './http-error.ts';

const lonePercentSign = /%(?![0-9A-Fa-f]{2})/g;
const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * The parameters of a query string or form body. Percent-encoded bytes that are not UTF-8
 * (Latin-1's m%FCller) are 400, where URLSearchParams would read them as U+FFFD and answer for
 * another term; a % without two hex digits after it stays the text it is (50%off), as
 * URLSearchParams and PHP read it. `what` names the text in the message.
 */
export function readQuery(raw: string, what = 'The query string'): URLSearchParams {
  if (raw.includes('%')) {
    // decodeURIComponent refuses bytes that are not UTF-8 (and a lone %, which is escaped first).
    try {
      decodeURIComponent(raw.replace(lonePercentSign, '%25'));
    } catch {
      throw new HttpError(
        400,
        `${what} has percent-encoded bytes that are not UTF-8: write each byte of UTF-8 as %XX.`,
      );
    }
  }
  return new URLSearchParams(raw);
}

/** The bytes as UTF-8 text (the decoder drops a leading byte order mark); 400 when they are not UTF-8. */
export function readUtf8(bytes: Uint8Array, what: string): string {
  try {
    return utf8.decode(bytes);
  } catch {
    throw new HttpError(400, `${what} is not valid UTF-8; send it in UTF-8.`);
  }
}
