// Chooses the representation: a suffix wins, otherwise the Accept header through negotiator
// (q-value, then specificity, then our order HTML, XML, JSON); docs/interface.md, Representations.
import Negotiator from 'negotiator';
import { HttpError } from './http-error.ts';

export type Format = 'html' | 'xml' | 'json';

export const formats: readonly Format[] = ['html', 'xml', 'json'];

export const mediaTypes: Record<Format, string> = {
  html: 'text/html; charset=utf-8',
  xml: 'application/xml; charset=utf-8',
  json: 'application/json; charset=utf-8',
};

// The order is the server's preference when the client has none.
const offered = ['text/html', 'application/xml', 'text/xml', 'application/json'];
const formatOf: Record<string, Format> = {
  'text/html': 'html',
  'application/xml': 'xml',
  'text/xml': 'xml',
  'application/json': 'json',
};

const suffix = /\.(html|xml|json)$/;

/**
 * The acceptable types, best first: q-value, then specificity, then OUR order.
 * negotiator breaks the last tie by the order of the client's header instead; asking it
 * again with the header's entries reversed shows which pairs are such ties, and those
 * are put in the server's order.
 */
function rankMediaTypes(accept: string, available: readonly string[]): string[] {
  const ranked = new Negotiator({ headers: { accept } }).mediaTypes([...available]);
  if (ranked.length < 2) return ranked;
  const reversed = new Negotiator({ headers: { accept: splitHeader(accept).reverse().join(',') } }).mediaTypes([
    ...available,
  ]);
  const position = (list: string[], type: string) => list.indexOf(type);
  return [...ranked].sort((a, b) => {
    const forward = position(ranked, a) - position(ranked, b);
    const backward = position(reversed, a) - position(reversed, b);
    // Same order both ways: q or specificity decided. Flipped: only the header order did.
    return Math.sign(forward) === Math.sign(backward) ? forward : available.indexOf(a) - available.indexOf(b);
  });
}

/** Splits a header list on commas outside quoted strings (RFC 9110 section 5.6.1). */
function splitHeader(value: string): string[] {
  const parts: string[] = [];
  let start = 0;
  let quoted = false;
  for (let i = 0; i < value.length; i++) {
    const c = value[i];
    if (c === '"') quoted = !quoted;
    else if (c === '\\' && quoted) i++;
    else if (c === ',' && !quoted) {
      parts.push(value.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(value.slice(start));
  return parts;
}

export interface Alternate {
  format: Format;
  type: string;
  href: string;
}

// The media types without their parameters, as the Link header and <link rel="alternate"> give them.
const typeNames = Object.fromEntries(formats.map((f) => [f, mediaTypes[f].split(';')[0] as string])) as Record<
  Format,
  string
>;

/** The URLs of a document's representations: /search?query=… has /search.xml?query=…, the start page /index.html etc. */
export function alternatesOf(path: string, available: readonly Format[], link: (path: string) => string): Alternate[] {
  const mark = path.indexOf('?');
  const pathname = mark === -1 ? path : path.slice(0, mark);
  const query = mark === -1 ? '' : path.slice(mark);
  const stem = pathname === '/' ? '/index' : pathname;
  return available.map((format) => ({ format, type: typeNames[format], href: link(`${stem}.${format}${query}`) }));
}

interface Choice {
  suffix: Format | null;
  accept: string | undefined;
  /** What the script offers. */
  available: readonly Format[];
  /** The document's path as far as it is known before the script runs, for the 406's list. */
  path: string;
  link: (path: string) => string;
}

/** The representation to answer in; 406 with the alternatives when none is acceptable. */
export function chooseFormat(choice: Choice): Format {
  const format = choice.suffix ?? negotiateFormat(choice.accept);
  if (format !== null && choice.available.includes(format)) return format;
  throw new HttpError(406, 'None of the representations of this document is acceptable.', {
    alternates: alternatesOf(choice.path, choice.available, choice.link),
  });
}

/** Splits a representation suffix off a path: /personen.xml → ['/personen', 'xml']. */
export function takeSuffix(path: string): [string, Format | null] {
  const match = suffix.exec(path);
  if (!match || match.index === 0 || path[match.index - 1] === '/') return [path, null];
  return [path.slice(0, match.index), match[1] as Format];
}

// Clients send few distinct Accept headers; remembering the answer keeps negotiation
// off the hot path. Bounded so hostile headers cannot grow it.
const remembered = new Map<string, Format | null>();
const rememberLimit = 200;

// Browsers send about 100 characters and five ranges. Ranking costs the product of ranges and
// offered types, twice, so a crafted header of 16 KiB cost milliseconds; beyond these bounds the
// header is refused before it is parsed (docs/interface.md, Representations).
const maxAcceptLength = 1024;
const maxAcceptRanges = 32;

/** Whether an Accept header is small enough to rank; a refused one is answered 400 (and HTML). */
function isRankable(accept: string): boolean {
  if (accept.length > maxAcceptLength) return false;
  let commas = 0;
  for (let i = accept.indexOf(','); i !== -1; i = accept.indexOf(',', i + 1)) commas++;
  return commas < maxAcceptRanges;
}

/** The format the Accept header prefers, or null when none is acceptable (406). */
function negotiateFormat(accept: string | undefined): Format | null {
  if (accept === undefined || accept === '' || accept === '*/*') return 'html';
  const known = remembered.get(accept);
  if (known !== undefined) return known;
  if (!isRankable(accept)) {
    throw new HttpError(
      400,
      `The Accept header is longer than ${maxAcceptLength} characters or has more than ${maxAcceptRanges} media ranges; send the types you accept, such as application/json.`,
    );
  }
  const best = rankMediaTypes(accept, offered)[0];
  const format = best === undefined ? null : (formatOf[best] ?? null);
  if (remembered.size >= rememberLimit) remembered.clear();
  remembered.set(accept, format);
  return format;
}

// Error bodies: an HTML page or RFC 9457 problem details in JSON or XML.
const errorOffered = [
  'text/html',
  'application/problem+json',
  'application/json',
  'application/problem+xml',
  'application/xml',
  'text/xml',
];
const errorFormatOf: Record<string, Format> = {
  'text/html': 'html',
  'application/problem+json': 'json',
  'application/json': 'json',
  'application/problem+xml': 'xml',
  'application/xml': 'xml',
  'text/xml': 'xml',
};

/** The format for an error body; HTML when the client accepts nothing we have. */
export function negotiateErrorFormat(accept: string | undefined): Format {
  if (!accept || !isRankable(accept)) return 'html';
  const best = rankMediaTypes(accept, errorOffered)[0];
  return (best && errorFormatOf[best]) || 'html';
}
