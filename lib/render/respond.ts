// Sends what a script produced: a redirect, 204, or its rendered document with the headers a
// representation carries (type, ETag, caching, links to the canonical URL and the alternates,
// Vary when negotiated) and 304 for a matching If-None-Match.
import type { Alternate, Exchange, Format, Target } from '../http/index.ts';
import { locate, matchesEtag, mediaTypes, NoContent, notModifiedHeaders, Redirect, sendBody, sendEmpty } from '../http/index.ts';
import type { Document } from '../page/index.ts';

/** A script's answer: a redirect, 204, or its document rendered in the chosen representation. */
export type Produced = Redirect | NoContent | Rendered;

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
}

// Revalidated on every use (a 304 by ETag), so an edit shows at once, also to its author.
const publicCacheControl = 'public, no-cache';
// Pages that read the session differ per requester: never stored, never revalidated by ETag.
const privateCacheControl = 'private, no-store';

export function respond(ex: Exchange, produced: Produced, answer: Answer): void {
  const { format, target } = answer;
  if (produced instanceof Redirect) {
    // A permanent move (an old slug) keeps the suffix: /person/old.json leads to /person/new.json.
    const kept = produced.status === 301 || produced.status === 308 ? target.suffix : null;
    return sendEmpty(ex, produced.status, { location: locate(target, produced.location, kept), 'cache-control': 'no-store' });
  }
  if (produced instanceof NoContent) return sendEmpty(ex, 204, { 'cache-control': 'no-store' });
  const { doc, alternates, body, etag } = produced;
  const headers: Record<string, string> = {
    'content-type': mediaTypes[format],
    etag,
    'cache-control': doc.private ? privateCacheControl : publicCacheControl,
    link: [`<${target.link(doc.path)}>; rel="canonical"`, ...alternates.map((a) => `<${a.href}>; rel="alternate"; type="${a.type}"`)].join(', '),
  };
  if (target.suffix === null) headers.vary = varyWithAccept(ex.res.getHeader('vary'));
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

/** Accept first, then what the rewrite conditions read. */
function varyWithAccept(current: number | string | string[] | undefined): string {
  const rules = typeof current === 'string' ? current.split(', ') : [];
  return [...new Set(['Accept', ...rules])].join(', ');
}
