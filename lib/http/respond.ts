// Writing responses: bodies with Content-Length, HEAD without a body, strong ETags and
// conditional GET (RFC 9110 sections 8.8.3 and 13.1.2), and the bytes the access log counts.
import { hash } from 'node:crypto';
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { AccessEntry } from '../log/index.ts';
import type { Client, Trust } from './forwarded.ts';
import { clientOf } from './forwarded.ts';
import type { Format } from './negotiate.ts';

/** One request and its response, as the access log and the error answers see them. */
export interface Exchange {
  req: IncomingMessage;
  res: ServerResponse;
  /** Body bytes sent (%b). */
  bytes: number;
  /** Authenticated user name (%u), when there is one. */
  user: string | null;
  /** The representation suffix of the address, once read: an error answer takes it too. */
  suffix: Format | null;
  /** Who the page header shows, once a script asked who is asking (lib/auth); null otherwise. */
  viewer: Viewer | null;
  /** The client, behind the trusted proxies if any (forwarded.ts). */
  client: Client;
  /** What answered, for the metrics: a script's name, static, proxy, probe, or none (refused before). */
  route: string;
}

/** The requester as the page header shows them: the name, their own loan list, the log-out token (none for Basic). */
export interface Viewer {
  name: string;
  /** Relative to <base href>: entlehnte/2. */
  loans: string;
  csrfToken: string | null;
}

export function createExchange(req: IncomingMessage, res: ServerResponse, trust: Trust | null): Exchange {
  return { req, res, bytes: 0, user: null, suffix: null, viewer: null, client: clientOf(req, trust), route: 'none' };
}

/** The one ETag of the site: a hash of the bytes sent (docs/performance.md, Per request). */
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

/** A 304 carries the validators and caching headers only (RFC 9110 section 15.4.5). */
export function notModifiedHeaders(headers: Record<string, string>): Record<string, string> {
  const kept: Record<string, string> = {};
  // A cache that revalidates keeps the stored document's keys and version up to date.
  for (const name of ['etag', 'cache-control', 'vary', 'xkey', 'surrogate-key', 'x-data-version'])
    if (headers[name] !== undefined) kept[name] = headers[name];
  return kept;
}

/**
 * Sent with every response the server writes, errors and files included; a response may bring
 * its own Content-Security-Policy (the display_errors page, whose style is inline).
 */
export const securityHeaders: Readonly<Record<string, string>> = {
  'content-security-policy':
    "default-src 'self'; img-src 'self' https: http: data:; style-src 'self'; frame-ancestors 'none'; form-action 'self'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'same-origin',
};

function withSecurity(headers: OutgoingHttpHeaders): OutgoingHttpHeaders {
  const all = { ...headers };
  for (const name of Object.keys(securityHeaders)) all[name] ??= securityHeaders[name];
  return all;
}

export function sendBody(ex: Exchange, status: number, headers: OutgoingHttpHeaders, body: string | Buffer): void {
  const { req, res } = ex;
  const length = typeof body === 'string' ? Buffer.byteLength(body) : body.length;
  res.writeHead(status, { ...withSecurity(headers), 'content-length': length });
  if (req.method === 'HEAD' || status === 204 || status === 304) {
    res.end();
    return;
  }
  ex.bytes = length;
  res.end(body);
}

/**
 * Aborts when the client closes the connection before its answer is sent: work done only for
 * that answer can be dropped. (The request's own 'close' comes once its body is read, not then.)
 */
export function clientGone(res: ServerResponse): AbortSignal {
  const controller = new AbortController();
  if (res.destroyed) controller.abort();
  else res.once('close', () => res.writableFinished || controller.abort());
  return controller.signal;
}

export function sendEmpty(ex: Exchange, status: number, headers: OutgoingHttpHeaders = {}): void {
  const all = withSecurity(headers);
  ex.res.writeHead(status, status === 204 || status === 304 ? all : { ...all, 'content-length': 0 });
  ex.res.end();
}

/** The exchange as the access log writes it, once the response is done. */
export function accessEntryOf(ex: Exchange): AccessEntry {
  const { req, res } = ex;
  return {
    remoteAddr: ex.client.address,
    user: ex.user,
    time: new Date(),
    method: req.method ?? '-',
    target: req.url ?? '-',
    httpVersion: req.httpVersion,
    status: res.statusCode,
    bytes: ex.bytes,
    referer: req.headers.referer,
    userAgent: req.headers['user-agent'],
  };
}
