// The URLs a response carries in its headers, within a budget: nginx reads a response's whole
// header block into one buffer of 4 KB and counts a larger one as the instance's failure, and
// Node's client refuses one over 16 KB (docs/robustness.md, Response headers).

/**
 * The longest Link header the site writes, in bytes (headers go out as Latin-1, a byte a
 * character; the URLs are percent-encoded ASCII). With the other headers, at most about 1 KB, a
 * header block stays under 3.2 KB.
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

