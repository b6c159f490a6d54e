// The URLs a response's headers carry (Link, Location), within a budget: nginx reads the whole
// header block into one 4 KB buffer and counts a larger one as the instance's failure; Node's
// client refuses one over 16 KB (docs/robustness.md, Response headers).
import { HttpError } from './http-error.ts';

/**
 * The longest Link header and Location the site writes, in bytes (headers go out as Latin-1, a
 * byte a character; the URLs are percent-encoded ASCII). With the other headers, at most about
 * 1 KB, a header block stays under 3.2 KB.
 */
export const maxHeaderUrlBytes = 2048;

export interface LinkRelation {
  href: string;
  rel: string;
  type?: string;
}

/**
 * The Link header (RFC 8288) of the relations in the order given, as many as fit in
 * maxHeaderUrlBytes: the first that does not fit ends it, so what is left out is always the end
 * of the list. Null when not even the first fits. A comma in a URL is written %2C, so that a
 * parser that splits the header at its commas finds whole links.
 */
export function linkHeader(relations: readonly LinkRelation[]): string | null {
  let header = '';
  for (const { href, rel, type } of relations) {
    const link = `<${href.includes(',') ? href.replaceAll(',', '%2C') : href}>; rel="${rel}"${type ? `; type="${type}"` : ''}`;
    const longer = header === '' ? link : `${header}, ${link}`;
    if (longer.length > maxHeaderUrlBytes) break;
    header = longer;
  }
  return header === '' ? null : header;
}

/**
 * A redirect's or a new resource's Location. A redirect echoes the address it was asked with
 * (a trailing slash taken off, an old slug replaced): one longer than maxHeaderUrlBytes is
 * refused with 414 rather than sent in a header block a proxy cannot read.
 */
export function locationHeader(url: string): string {
  if (url.length > maxHeaderUrlBytes) {
    throw new HttpError(
      414,
      `This address redirects to one of ${url.length} characters, more than the ${maxHeaderUrlBytes} a redirect may carry; shorten its query.`,
    );
  }
  return url;
}
