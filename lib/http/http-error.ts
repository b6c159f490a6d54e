// The one error type that ends a request with a status (404, 400, 405 …), and the answers a
// script gives instead of a document: a redirect, 204, and text of a type of its own.
// lib/render/problem.ts turns an HttpError into an HTML page or RFC 9457 problem details.
interface HttpErrorOptions {
  /** Problem type URI (RFC 9457 section 3.1.1); about:blank when the status says it all. */
  type?: string;
  /** Methods the resource supports, for 405 (RFC 9110 section 15.5.6). */
  allow?: readonly string[];
  /** Other representations of the resource, for 406. */
  alternates?: readonly { type: string; href: string }[];
  headers?: Record<string, string>;
  /** For 403: the local path a login should return to; the HTML page then offers the login link. */
  login?: string;
  /** For 422 and 409: one message per field, listed as `errors` in problem details. */
  errors?: readonly FieldError[];
  /** A refusal the error log should see too, at this level: the shape of an attack, not a typo. */
  log?: 'warn';
  cause?: unknown;
}

/** What is wrong with one field of a request body. */
export interface FieldError {
  field: string;
  message: string;
}

/** Control characters other than tab and line breaks: no text, in stored fields or in a search. */
export const controlCharacters = /[\x00-\x08\x0B\x0C\x0E-\x1F\x7F]/;
const controlCharactersAll = new RegExp(controlCharacters.source, 'g');

/**
 * A value of the request quoted in a message or on a page, cut to max characters (not between
 * the halves of an emoji), its control characters as U+FFFD: HTML's parser reports them as errors.
 */
export function clip(text: string, max = 60): string {
  const shown = controlCharacters.test(text) ? text.replace(controlCharactersAll, '\uFFFD') : text;
  if (shown.length <= max) return shown;
  const end = /[\uD800-\uDBFF]/.test(shown.charAt(max - 1)) ? max - 1 : max;
  return shown.slice(0, end) + '…';
}

export class HttpError extends Error {
  override name = 'HttpError';
  readonly status: number;
  readonly options: HttpErrorOptions;

  constructor(status: number, message: string, options: HttpErrorOptions = {}) {
    super(message, { cause: options.cause });
    this.status = status;
    this.options = options;
  }
}

/**
 * Thrown by a script to send the client elsewhere, like PHP's header('Location: …'); exit;
 * The location is a site path; the front makes it absolute.
 */
export class Redirect {
  readonly location: string;
  readonly status: 301 | 302 | 303 | 307 | 308;

  constructor(location: string, status: 301 | 302 | 303 | 307 | 308 = 303) {
    this.location = location;
    this.status = status;
  }
}

/** Returned by a script whose change leaves nothing to show: 204 (a DELETE from an API client). */
export class NoContent {
  readonly status = 204;
}

/**
 * Returned by a script whose answer is text of a media type of its own, not a document in the
 * three representations (robots.txt, the sitemap): sent as written, with an ETag, compressed,
 * and kept until the data changes when the script is cacheable, as documents are.
 */
export class Verbatim {
  constructor(
    readonly type: string,
    readonly text: string,
    /** The surrogate keys of what the text shows, as a document's keys. */
    readonly keys: string[] = [],
  ) {}
}
