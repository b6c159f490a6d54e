// Sends what a script produced: a redirect, 204, or its rendered document with the headers a
// representation carries (type, ETag, caching, links to the canonical URL and the alternates,
// Vary when negotiated) and 304 for a matching If-None-Match.
import type { Alternate, Exchange, Format, Target } from '../http/index.ts';
import { locate, matchesEtag, mediaTypes, NoContent, notModifiedHeaders, Redirect, sendBody, sendEmpty, sendStream, Streamed } from '../http/index.ts';
import type { Document } from '../page/index.ts';

/** A script's answer: a redirect, 204, or its document rendered in the chosen representation. */
export type Produced = Redirect | NoContent | Streamed | Rendered;

interface Rendered {
  doc: Document;
  alternates: Alternate[];
  body: Buffer;
  etag: string;
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
    return sendEmpty(ex, produced.status, { location: locate(target, produced.location, kept), 'cache-control': 'no-store' });
  }
  if (produced instanceof NoContent) return sendEmpty(ex, 204, { 'cache-control': 'no-store' });
  if (produced instanceof Streamed) return sendStream(ex, produced.status, { 'content-type': produced.type, 'cache-control': publicCacheControl }, produced.chunks());
  const { doc, alternates, body, etag } = produced;
  const headers: Record<string, string> = {
    'content-type': answer.type ?? mediaTypes[format],
    etag,
    'cache-control': doc.private ? privateCacheControl : publicCacheControl,
    link: [`<${target.link(doc.path)}>; rel="canonical"`, ...alternates.map((a) => `<${a.href}>; rel="alternate"; type="${a.type}"`), ...pageRelations(doc, target)].join(', '),
  };
  if (target.suffix === null && !answer.type) headers.vary = varyWithAccept(ex.res.getHeader('vary'));
  if (doc.location) headers.location = target.link(doc.location);
  const method = ex.req.method;
  if (answer.personal) {
    headers['cache-control'] = privateCacheControl;
    delete headers.etag;
  } else if ((method === 'GET' || method === 'HEAD') && matchesEtag(ex.req.headers['if-none-match'], etag)) {
    return sendEmpty(ex, 304, notModifiedHeaders(headers));
  }
  sendBody(ex, doc.status ?? 200, headers, body);
}

/** A list page's first, last and neighbouring pages (RFC 8288), in the representation the address named. */
function pageRelations(doc: Rendered['doc'], target: Target): string[] {
  const pages = doc.pages;
  if (!pages) return [];
  const relations: [string, string | null][] = [['first', pages.first], ['prev', pages.previous], ['next', pages.next], ['last', pages.last]];
  return relations.filter(([, path]) => path !== null).map(([rel, path]) => `<${locate(target, path as string, target.suffix)}>; rel="${rel}"`);
}

/** Accept first, then what the rewrite conditions read. */
function varyWithAccept(current: number | string | string[] | undefined): string {
  const rules = typeof current === 'string' ? current.split(', ') : [];
  return [...new Set(['Accept', ...rules])].join(', ');
}
