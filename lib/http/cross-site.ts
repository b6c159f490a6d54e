// A change comes from a page of this site: browsers name the page's origin in Origin, and the few
// that leave it out (older ones, some privacy settings) still send a Referer, which must then be
// this site's (docs/interface.md, Changing data). API clients send neither and are let through.
import type { IncomingMessage } from 'node:http';
import { HttpError } from './http-error.ts';
import type { Target } from './target.ts';

/** 403 for a change whose Origin, or without one its Referer, names another site. */
export function refuseCrossSite(req: IncomingMessage, target: Target): void {
  const { origin, referer } = req.headers;
  const from = origin ?? (referer === undefined ? undefined : originOf(referer));
  if (from === undefined || from === target.origin) return;
  throw new HttpError(
    403,
    `A ${req.method} from ${from.slice(0, 100)} is not accepted here; send it from ${target.origin}.`,
  );
}

/** The site path (query included) of a Referer on this site, e.g. /person/max-muster/bearbeiten; null for none or another site's. */
export function refererPath(req: IncomingMessage, target: Target): string | null {
  const referer = req.headers.referer;
  if (referer === undefined || originOf(referer) !== target.origin) return null;
  const url = new URL(referer);
  if (!url.pathname.startsWith(`${target.basePath}/`)) return null;
  return url.pathname.slice(target.basePath.length) + url.search;
}

/** The origin of an absolute URL; 'null' for anything else, which is no site's. */
function originOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return 'null';
  }
}
