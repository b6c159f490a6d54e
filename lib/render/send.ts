// Sends what a script produced: a redirect, 204, or its rendered document (or text of a type of
// its own) with the headers a representation carries (type, ETag, caching, links to the canonical
// URL, the alternates and the neighbouring pages, Vary when negotiated), compressed when the
// client accepts it, and 304 for a matching If-None-Match.
import type { Alternate, Encoding, Exchange, Format, LinkRelation, Target } from '../http/index.ts';
import {
  chooseEncoding,
  compressBody,
  encodedEtag,
  linkHeader,
  locate,
  locationHeader,
  matchesEtag,
  mediaTypes,
  minCompressBytes,
  NoContent,
  notModifiedHeaders,
  Redirect,
  sendBody,
  sendEmpty,
} from '../http/index.ts';
import type { Document } from '../page/index.ts';
import { allKey } from '../page/index.ts';

/** A script's answer: a redirect, 204, or its document (or Verbatim text) rendered to bytes. */
export type Produced = Redirect | NoContent | Rendered;

interface Rendered {
  /** The script's document, without its data once rendered; null for Verbatim text, which has a type instead. */
  doc: Document | null;
  /** The media type of Verbatim text. */
  type?: string;
  alternates: Alternate[];
  body: Buffer;
  etag: string;
  /**
   * The body compressed, for a kept document (lib/scripts/run.ts): made once per encoding and kept
   * beside it. Without it the body is compressed here, for each request that asks.
   */
  compressed?: (encoding: Encoding) => Promise<Buffer>;
  /** The surrogate keys of Verbatim text (a document has its own). */
  keys?: string[];
  /** With caches in front to purge: the data version the answer was read at (X-Data-Version). */
  version?: bigint | null;
}

interface Answer {
  format: Format;
  target: Target;
  /** Whether the script asked who is asking: the answer is then private, with no ETag. */
  personal: boolean;
  /** The media type when it is not the format's own (ScriptModule.only). */
  type?: string;
  /** Seconds a shared cache may keep a public document (config sharedCacheSeconds); 0: none. */
  sharedSeconds: number;
}

/**
 * A public document: browsers revalidate it on every use (a 304 by ETag), so an edit shows at
 * once, also to its author; a shared cache in front keeps it for sharedSeconds, until a change
 * purges it by its keys (docs/operations.md, An edge cache).
 */
function publicCacheControl(sharedSeconds: number): string {
  return sharedSeconds > 0 ? `public, max-age=0, s-maxage=${sharedSeconds}` : 'public, no-cache';
}
// Pages that read the session differ per requester: never stored, never revalidated by ETag.
const privateCacheControl = 'private, no-store';

export function respond(ex: Exchange, produced: Produced, answer: Answer): void | Promise<void> {
  const { format, target } = answer;
  if (produced instanceof Redirect) {
    // A permanent move (an old slug) keeps the suffix: /person/old.json leads to /person/new.json.
    const kept = produced.status === 301 || produced.status === 308 ? target.suffix : null;
    return sendEmpty(ex, produced.status, {
      location: locationHeader(locate(target, produced.location, kept)),
      'cache-control': 'no-store',
    });
  }
  if (produced instanceof NoContent) return sendEmpty(ex, 204, { 'cache-control': 'no-store' });
  const { doc } = produced;
  // Documents are HTML, XML and JSON, Verbatim answers text: all worth compressing from 1 KB.
  const compressible = produced.body.length >= minCompressBytes;
  const encoding = compressible ? chooseEncoding(ex.req.headers['accept-encoding']) : null;
  // Shared only when it is the same for everyone: not per user, and with no cookie of its own.
  const shared = !doc?.private && !answer.personal && !ex.res.hasHeader('set-cookie');
  const headers: Record<string, string> = {
    'content-type': produced.type ?? answer.type ?? mediaTypes[format],
    // Each encoding is a representation of its own, with its own ETag.
    etag: encoding ? encodedEtag(produced.etag, encoding) : produced.etag,
    'cache-control': shared ? publicCacheControl(answer.sharedSeconds) : privateCacheControl,
  };
  if (shared) {
    // The keys as Varnish's xkey module and the CDNs that read Surrogate-Key take them: space-separated.
    const keys = [allKey, ...(doc?.keys ?? produced.keys ?? [])].join(' ');
    headers.xkey = keys;
    headers['surrogate-key'] = keys;
    if (produced.version != null) headers['x-data-version'] = produced.version.toString();
  }
  if (doc) {
    // The canonical URL first, then the alternates, then the pages, as many as fit (all but on a long search).
    const link = linkHeader([
      { href: target.link(doc.path), rel: 'canonical' },
      ...produced.alternates.map((a) => ({ href: a.href, rel: 'alternate', type: a.type })),
      ...pageRelations(doc, target),
    ]);
    if (link) headers.link = link;
  }
  const vary = [
    ...(doc && target.suffix === null && !answer.type ? ['Accept'] : []),
    ...(compressible ? ['Accept-Encoding'] : []),
  ];
  if (vary.length > 0) headers.vary = varyWith(vary, ex.res.getHeader('vary'));
  if (encoding) headers['content-encoding'] = encoding;
  if (doc?.location) headers.location = locationHeader(target.link(doc.location));
  const method = ex.req.method;
  if (answer.personal) {
    delete headers.etag;
  } else if (
    (method === 'GET' || method === 'HEAD') &&
    matchesEtag(ex.req.headers['if-none-match'], headers.etag as string)
  ) {
    // Known by its ETag: nothing is compressed for a 304.
    return sendEmpty(ex, 304, notModifiedHeaders(headers));
  }
  const status = doc?.status ?? 200;
  if (!encoding) return sendBody(ex, status, headers, produced.body);
  const body = produced.compressed
    ? produced.compressed(encoding)
    : compressedFor(produced, encoding, !answer.personal && !doc?.private);
  if (body instanceof Promise) return body.then((bytes) => sendBody(ex, status, headers, bytes));
  sendBody(ex, status, headers, body);
}

/**
 * A list page's neighbouring, first and last pages (RFC 8288), in the representation the address
 * named; next first, as a harvester walks the list by it.
 */
function pageRelations(doc: Document, target: Target): LinkRelation[] {
  const pages = doc.pages;
  if (!pages) return [];
  const relations: [string, string | null][] = [
    ['next', pages.next],
    ['prev', pages.previous],
    ['first', pages.first],
    ['last', pages.last],
  ];
  return relations
    .filter(([, path]) => path !== null)
    .map(([rel, path]) => ({ href: locate(target, path as string, target.suffix), rel }));
}

/** Accept and Accept-Encoding first, then what the rewrite conditions read. */
function varyWith(names: string[], current: number | string | string[] | undefined): string {
  const rules = typeof current === 'string' ? current.split(', ') : [];
  return [...new Set([...names, ...rules])].join(', ');
}

/**
 * A document that is not kept (a person page) compressed: a public one finds its compressed
 * bytes by its ETag, a hash of the body, as long as it is among the recently compressed.
 */
function compressedFor(rendered: Rendered, encoding: Encoding, shared: boolean): Buffer | Promise<Buffer> {
  const found = shared ? recent.get(rendered.etag, encoding) : undefined;
  if (found) return found;
  const made = compressBody(rendered.body, encoding);
  if (!shared) return made;
  if (made instanceof Promise) return made.then((bytes) => recent.set(rendered.etag, encoding, bytes));
  return recent.set(rendered.etag, encoding, made);
}

/** Compressed bodies by the identity's ETag and encoding, the least recently used dropped first beyond 16 MB. */
class RecentlyCompressed {
  private readonly entries = new Map<string, Buffer>();
  private bytes = 0;

  constructor(private readonly limit: number) {}

  get(etag: string, encoding: Encoding): Buffer | undefined {
    const key = `${etag}${encoding}`;
    const entry = this.entries.get(key);
    if (entry) {
      this.entries.delete(key);
      this.entries.set(key, entry);
    }
    return entry;
  }

  /** Keeps body and gives it back. */
  set(etag: string, encoding: Encoding, body: Buffer): Buffer {
    const key = `${etag}${encoding}`;
    this.bytes += body.length - (this.entries.get(key)?.length ?? 0);
    this.entries.set(key, body);
    for (const [key, oldest] of this.entries) {
      if (this.bytes <= this.limit) break;
      this.entries.delete(key);
      this.bytes -= oldest.length;
    }
    return body;
  }
}

const recent = new RecentlyCompressed(16 * 1024 * 1024);
