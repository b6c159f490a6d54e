// Writing responses: bodies with Content-Length, HEAD without a body, strong ETags and
// conditional GET (RFC 9110 sections 8.8.3 and 13.1.2), and the bytes the access log counts.
import { hash } from 'node:crypto';
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { PageUser } from './auth.ts';

/** One request and its response, as the access log sees them. */
export interface Exchange {
  req: IncomingMessage;
  res: ServerResponse;
  /** Body bytes sent (%b). */
  bytes: number;
  /** Authenticated user name (%u), when there is one. */
  user: string | null;
  /** The page header's view of the requester, when the script asked who it is. */
  account?: PageUser | null;
}

// The one-shot hash() skips the Hash object that createHash() builds for every response;
// the profile of a person page under load showed that object's cost (see bench/results.md).
export function etagOf(body: string | Buffer): string {
  return `"${hash('sha1', body, 'base64url').slice(0, 27)}"`;
}

/** If-None-Match uses the weak comparison: W/"x" matches "x" (RFC 9110 section 13.1.2). */
export function matchesEtag(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  if (header.trim() === '*') return true;
  for (const candidate of header.split(',')) {
    const tag = candidate.trim();
    if ((tag.startsWith('W/') ? tag.slice(2) : tag) === etag) return true;
  }
  return false;
}

export function sendBody(ex: Exchange, status: number, headers: OutgoingHttpHeaders, body: string | Buffer): void {
  const { req, res } = ex;
  const length = typeof body === 'string' ? Buffer.byteLength(body) : body.length;
  res.writeHead(status, { ...headers, 'content-length': length });
  if (req.method === 'HEAD' || status === 204 || status === 304) {
    res.end();
    return;
  }
  ex.bytes = length;
  res.end(body);
}

export function sendEmpty(ex: Exchange, status: number, headers: OutgoingHttpHeaders = {}): void {
  ex.res.writeHead(status, status === 204 || status === 304 ? headers : { ...headers, 'content-length': 0 });
  ex.res.end();
}

export function clientAddress(req: IncomingMessage): string {
  return req.socket.remoteAddress?.replace(/^::ffff:/, '') ?? '-';
}
