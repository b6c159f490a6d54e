// Sends what a script produced: a redirect, 204, or its rendered document with the headers a
// representation carries (type, ETag, caching, links to the canonical URL, the alternates and
// the neighbouring pages, Vary when negotiated) and 304 for a matching If-None-Match.
import type { Alternate, Encoding, Exchange, Format, LinkRelation, Target } from '../http/index.ts';
import {
  chooseEncoding, compressSync, encodedEtag, linkHeader, locate, locationHeader, matchesEtag, mediaTypes, minCompressBytes, NoContent, notModifiedHeaders,
  Redirect, sendBody, sendEmpty, sendStream, Streamed,
} from '../http/index.ts';
import type { Document } from '../page/index.ts';

/** A script's answer: a redirect, 204, or its document rendered in the chosen representation. */
export type Produced = Redirect | NoContent | Streamed | Rendered;

interface Rendered {
  doc: Document;
  alternates: Alternate[];
  body: Buffer;
  etag: string;
  /**
   * The body compressed, made on the first request that asks for an encoding; a kept document
   * (lib/scripts/run.ts) keeps them too, so it is compressed once per encoding, not per request.
   */
  encoded?: Partial<Record<Encoding, { body: Buffer; etag: string }>>;
}

interface Answer {
  format: Format;
  target: Target;
  /** Whether the script asked who is asking: the answer is then private, with no ETag. */
  personal: boolean;
  /** The media type when it is not the format's own (ScriptModule.only). */
  type?: string;
}

// Revalidated on every use (a 304 by ETag), so an edit shows at once, also to its author.
const publicCacheControl = 'public, no-cache';
// Pages that read the session differ per requester: never stored, never revalidated by ETag.
const privateCacheControl = 'private, no-store';

export function respond(ex: Exchange, produced: Produced, answer: Answer): void | Promise<void> {
  const { format, target } = answer;
  if (produced instanceof Redirect) {
    // A permanent move (an old slug) keeps the suffix: /person/old.json leads to /person/new.json.
    const kept = produced.status === 301 || produced.status === 308 ? target.suffix : null;
    return sendEmpty(ex, produced.status, { location: locationHeader(locate(target, produced.location, kept)), 'cache-control': 'no-store' });
  }
  if (produced instanceof NoContent) return sendEmpty(ex, 204, { 'cache-control': 'no-store' });
  if (produced instanceof Streamed) return sendStream(ex, produced.status, { 'content-type': produced.type, 'cache-control': publicCacheControl }, produced.chunks());
  const { doc, alternates } = produced;
  const { body, etag, encoding } = encodedFor(ex, produced, !answer.personal && !doc.private);
  const headers: Record<string, string> = {
    'content-type': answer.type ?? mediaTypes[format],
    etag,
    'cache-control': doc.private ? privateCacheControl : publicCacheControl,
  };
  // The canonical URL first, then the alternates, then the pages, as many as fit (all but on a long search).
  const link = linkHeader([{ href: target.link(doc.path), rel: 'canonical' }, ...alternates.map((a) => ({ href: a.href, rel: 'alternate', type: a.type })), ...pageRelations(doc, target)]);
  if (link) headers.link = link;
  const vary = [...(target.suffix === null && !answer.type ? ['Accept'] : []), ...(produced.body.length >= minCompressBytes ? ['Accept-Encoding'] : [])];
  if (vary.length > 0) headers.vary = varyWith(vary, ex.res.getHeader('vary'));
  if (encoding) headers['content-encoding'] = encoding;
  if (doc.location) headers.location = locationHeader(target.link(doc.location));
  const method = ex.req.method;
  if (answer.personal) {
    headers['cache-control'] = privateCacheControl;
    delete headers.etag;
  } else if ((method === 'GET' || method === 'HEAD') && matchesEtag(ex.req.headers['if-none-match'], etag)) {
    return sendEmpty(ex, 304, notModifiedHeaders(headers));
  }
  sendBody(ex, doc.status ?? 200, headers, body);
}

/**
 * A list page's neighbouring, first and last pages (RFC 8288), in the representation the address
 * named; next first, as a harvester walks the list by it.
 */
function pageRelations(doc: Rendered['doc'], target: Target): LinkRelation[] {
  const pages = doc.pages;
  if (!pages) return [];
  const relations: [string, string | null][] = [['next', pages.next], ['prev', pages.previous], ['first', pages.first], ['last', pages.last]];
  return relations.filter(([, path]) => path !== null).map(([rel, path]) => ({ href: locate(target, path as string, target.suffix), rel }));
}

/** Accept and Accept-Encoding first, then what the rewrite conditions read. */
function varyWith(names: string[], current: number | string | string[] | undefined): string {
  const rules = typeof current === 'string' ? current.split(', ') : [];
  return [...new Set([...names, ...rules])].join(', ');
}

/**
 * The body in the encoding the client accepts (brotli, else gzip), with its own ETag, or as it is
 * for a body under 1 KB or a client that accepts neither. Documents are HTML, XML and JSON: text.
 * A public document that is not kept (a person page) finds its compressed bytes by its ETag, a
 * hash of the body, as long as it is among the recently compressed.
 */
function encodedFor(ex: Exchange, rendered: Rendered, shared: boolean): { body: Buffer; etag: string; encoding: Encoding | null } {
  const encoding = rendered.body.length >= minCompressBytes ? chooseEncoding(ex.req.headers['accept-encoding']) : null;
  if (!encoding) return { body: rendered.body, etag: rendered.etag, encoding: null };
  rendered.encoded ??= {};
  const encoded = (rendered.encoded[encoding] ??= (shared ? recent.get(rendered.etag, encoding) : undefined) ?? compress(rendered, encoding, shared));
  return { ...encoded, encoding };
}

function compress(rendered: Rendered, encoding: Encoding, shared: boolean): { body: Buffer; etag: string } {
  const encoded = { body: compressSync(rendered.body, encoding), etag: encodedEtag(rendered.etag, encoding) };
  if (shared) recent.set(rendered.etag, encoding, encoded);
  return encoded;
}

/** Compressed bodies by the identity's ETag and encoding, the least recently used dropped first beyond 16 MB. */
class RecentlyCompressed {
  private readonly entries = new Map<string, { body: Buffer; etag: string }>();
  private bytes = 0;

  constructor(private readonly limit: number) {}

  get(etag: string, encoding: Encoding): { body: Buffer; etag: string } | undefined {
    const key = `${etag}${encoding}`;
    const entry = this.entries.get(key);
    if (entry) {
      this.entries.delete(key);
      this.entries.set(key, entry);
    }
    return entry;
  }

  set(etag: string, encoding: Encoding, entry: { body: Buffer; etag: string }): void {
    const key = `${etag}${encoding}`;
    this.bytes += entry.body.length - (this.entries.get(key)?.body.length ?? 0);
    this.entries.set(key, entry);
    for (const [key, oldest] of this.entries) {
      if (this.bytes <= this.limit) break;
      this.entries.delete(key);
      this.bytes -= oldest.body.length;
    }
  }
}

const recent = new RecentlyCompressed(16 * 1024 * 1024);
