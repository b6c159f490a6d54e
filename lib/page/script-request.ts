// What a handler script in scripts/ receives and returns, and the helpers scripts share to read
// their query parameters. A script returns data and never touches the response; the front
// renders it (docs/development.md, Add a resource).
import type { IncomingHttpHeaders } from 'node:http';
import type { Account, Identity, SessionControl } from '../auth/index.ts';
import type { Db } from '../db/index.ts';
import type { Body, BodyType, Format, NoContent, Upload, Verbatim } from '../http/index.ts';
import type { ApiFragment } from './api-description.ts';
import { clip, HttpError } from '../http/index.ts';
import type { PictureOptions } from './picture.ts';
import type { RequestSearch } from '../search/index.ts';

export interface ScriptRequest {
  /** The method the script runs for: a POST's _method field or X-HTTP-Method-Override decides. */
  method: string;
  /** The representation the answer will have, chosen before the script runs. */
  format: Format;
  /** Query parameters after rewriting (mod_rewrite back references included). */
  query: URLSearchParams;
  headers: IncomingHttpHeaders;
  db: Db;
  /** Absolute URL of a site path, from BASE_URL or an allowed Host. */
  link(path: string): string;
  /** Records a recoverable problem: logged at level warn, shown in development. */
  warn(message: string): void;
  /**
   * The result of an expensive read, remembered until persons or works change
   * (lib/db/data-version.ts); the key must name everything the result depends on.
   */
  remember<T>(key: string, compute: () => Promise<T>): Promise<T>;
  /**
   * Who is asking: the account of the session cookie or of HTTP Basic credentials, null for
   * anyone anonymous. Read only when called; the response is then private (no-store).
   */
  identify(): Promise<Identity | null>;
  /** Checks a login; null (and an error-log line for fail2ban) for an unknown user or a wrong password alike. */
  authenticate(username: string, password: string): Promise<Account | null>;
  /** The site's search, with its bounds (lib/search). */
  searcher: RequestSearch;
  /** Other Primo installations' views, tabs and scopes, mapped to this site's (SEARCH_VIEW_ALIASES). */
  searchAliases: Readonly<Record<string, string>>;
  /** Starting and ending the login session, and its CSRF token. */
  session: SessionControl;
  /** The request body, 1 MiB at most, of one of the accepted types (413, 415 otherwise; 400 when malformed). */
  body<T extends BodyType>(accept: readonly T[]): Promise<Extract<Body, { type: T }>>;
  /**
   * An uploaded file, read to a temporary file as it arrives (multipart/form-data, or a picture's
   * bytes): 413 beyond the size limit, 400 when cut off; discard() it when done.
   */
  upload(): Promise<Upload>;
  /** The limits of picture uploads and the queue of their conversions (lib/page/picture.ts). */
  pictures: PictureOptions;
  /**
   * Tells the caches in front (PURGE_URLS) to drop the documents with these surrogate keys, after
   * a change has committed; resolves once each cache has answered or its first try failed (then
   * it is tried again in the background). change() calls it with what a change touched.
   */
  purge(keys: string[]): Promise<void>;
}

/** A document a script returns: its canonical rewritten path, title and plain data. */
export interface Document<T = unknown> {
  /** Canonical rewritten path without suffix, e.g. /person/max-muster. */
  path: string;
  title: string;
  /** What the page is about in a sentence or two, for search engines' result lists: the HTML page's meta description. */
  description?: string;
  data: T;
  /** Stylesheet of the HTML page, relative to the site root; css/site.css when absent. */
  stylesheet?: string;
  /** A per-user document: Cache-Control private, no-store; public documents leave it out. */
  private?: boolean;
  /**
   * The surrogate keys of what a public document shows, for a cache in front (cache-keys.ts):
   * personKey(3) for a page that shows the person 3, personsKey for a list of persons.
   */
  keys?: string[];
  /** The status, 200 when absent: a form shown again after a failed POST may say 403 or 422. */
  status?: number;
  /** For 201: the new resource's site path, sent as Location. */
  location?: string;
  /** Another document's template and representations, e.g. the new person a POST /personen made. */
  view?: View;
  /** For a page of a list: the site paths of the first, last and neighbouring pages, sent as Link headers (pagingOf). */
  pages?: Paging;
}

/** The pages around one page of a list, as site paths; null where there is none. */
export interface Paging {
  first: string;
  last: string;
  previous: string | null;
  next: string | null;
}

/** How a document is rendered: the template's name, and its data in JSON and XML. */
export interface View {
  template: string;
  /** The JSON representation of the data; the data itself when absent. */
  toJson?: (data: never, link: LinkFn) => unknown;
  /** The XML tree (one root) for writeXml (lib/render/xml.ts): '@_name' attributes, '#text' text; without it, no XML. */
  toXml?: (data: never, link: LinkFn) => Record<string, unknown>;
}

/**
 * What a handler returns: a document, 204, or text of a type of its own. A redirect is thrown,
 * like an HttpError, from the script or from what it calls (303 after a form, 301 for an old slug).
 */
export type Outcome = Document | NoContent | Verbatim;

export type LinkFn = (path: string) => string;

export interface ScriptModule {
  GET?: (req: ScriptRequest) => Promise<Outcome>;
  HEAD?: never;
  POST?: (req: ScriptRequest) => Promise<Outcome>;
  PUT?: (req: ScriptRequest) => Promise<Outcome>;
  DELETE?: (req: ScriptRequest) => Promise<Outcome>;
  /**
   * How its documents are represented: the HTML template, and toJson and toXml; without it, the
   * template of the script's name and the data itself as JSON. A document it returns may name
   * another document's view (a POST that creates a person answers with the person).
   */
  view?: View;
  /**
   * True when GET's document depends on nothing but the URL and the data (no session, no
   * clock): the server then keeps each rendered representation until persons or works change
   * (data_version), and asking who the requester is fails.
   */
  cacheable?: boolean;
  /** Its addresses, parameters and answers for /openapi.json (lib/page/api-description.ts). */
  api?: ApiFragment;
  /**
   * True when anyone may send the script's changes without logging in (the login form, logging
   * out). For every other script a change from someone not logged in is 403 before its body is read.
   */
  anonymous?: boolean;
  /**
   * The one representation of a document that has a media type of its own instead of the three
   * (an Atom feed: its XML, through its view's toXml, served as application/atom+xml; the OpenAPI document's
   * JSON; robots.txt's text, a Verbatim answer, which the suffix .html names). It is served whatever Accept
   * asks; another suffix is 406.
   */
  only?: { format: Format; type: string };
}

/** Reads a non-negative integer parameter; 400 naming the parameter when it is not one. */
export function readNonNegativeInteger(query: URLSearchParams, name: string, fallback: number): number {
  const raw = query.get(name);
  if (raw === null || raw === '') return fallback;
  if (!/^[0-9]{1,9}$/.test(raw)) {
    throw new HttpError(400, `Parameter ${name} must be a non-negative integer (0 to 999999999), not "${clip(raw)}".`);
  }
  return Number(raw);
}

/** Reads a required positive integer id; 400 when it is malformed, so 404 means "no such row". */
export function readId(query: URLSearchParams, name: string): number {
  const raw = query.get(name);
  if (raw === null || raw === '') throw new HttpError(400, `Parameter ${name} is required: a positive integer id.`);
  if (!/^[0-9]{1,10}$/.test(raw) || Number(raw) < 1 || Number(raw) > 2147483647) {
    throw new HttpError(400, `Parameter ${name} must be a positive integer id, not "${clip(raw)}".`);
  }
  return Number(raw);
}

/** Offsets of the neighbouring pages, null where there is none. */
export function pageLinks(offset: number, size: number, total: number) {
  const last = total > 0 ? Math.floor((total - 1) / size) * size : 0;
  return {
    // Past the end, "previous" leads back to the last page that has entries.
    previous: offset === 0 ? null : offset > last ? last : Math.max(0, offset - size),
    next: offset + size < total ? offset + size : null,
  };
}

/** The Link relations of a list's page at offset (RFC 8288 first, last, prev, next); pathOf gives a page's site path. */
export function pagingOf(offset: number, size: number, total: number, pathOf: (offset: number) => string): Paging {
  const { previous, next } = pageLinks(offset, size, total);
  return {
    first: pathOf(0),
    last: pathOf(total > 0 ? Math.floor((total - 1) / size) * size : 0),
    previous: previous === null ? null : pathOf(previous),
    next: next === null ? null : pathOf(next),
  };
}

/** A query string for links: form-encoded, but commas stay readable (query=any,contains,x). */
export function buildQuery(pairs: readonly (readonly [string, string | number])[]): string {
  return pairs.map(([name, value]) => `${encoded(name)}=${encoded(String(value))}`).join('&');
}

/**
 * A name or value as a query string writes it, commas left as they are (Primo's query=any,contains,x).
 * A search page writes the same few values into its fifty links: each is encoded once.
 */
const encodings = new Map<string, string>();

function encoded(text: string): string {
  let result = encodings.get(text);
  if (result === undefined) {
    result = encodeURIComponent(text).replace(/%2C/g, ',');
    if (text.length <= 200) {
      if (encodings.size >= 5000) encodings.clear();
      encodings.set(text, result);
    }
  }
  return result;
}

/** The words of a "log in first" refusal: for anyone anonymous, and for a session that timed out. */
interface LoginReason {
  anonymous: string;
  expired: string;
}

/** The requester, or the one "log in first" 403, with a login link that leads back to `back`. */
export async function requireLogin(req: ScriptRequest, back: string, reason: LoginReason): Promise<Identity> {
  const requester = await req.identify();
  if (requester) return requester;
  throw new HttpError(403, (await req.session.expired()) ? reason.expired : reason.anonymous, { login: back });
}

/** The login page that leads back to a local path afterwards, relative to <base href>: login?back=/entlehnte/3 */
export function loginLink(back: string | null): string {
  return back ? `login?back=${encodeURIComponent(back).replace(/%2F/g, '/')}` : 'login';
}

/** A 403 without a login link gets one that leads back to `back`: log in as someone who may. */
export function withLogin(err: unknown, back: string): unknown {
  if (!(err instanceof HttpError) || err.status !== 403 || err.options.login !== undefined) return err;
  return new HttpError(403, err.message, { ...err.options, login: back });
}
