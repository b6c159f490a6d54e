// The request target, read once: the percent-decoded path, the raw query, the representation
// suffix, and the origin every absolute link is made from (BASE_URL, or an allowed Host, so a
// forged Host never reaches a link; docs/interface.md, URLs).
import type { Config } from '../config.ts';
import { HttpError } from './http-error.ts';
import type { Format } from './negotiate.ts';
import { takeSuffix } from './negotiate.ts';
import type { Exchange } from './respond.ts';

export interface Target {
  /** The percent-decoded path as asked for, suffix included. */
  path: string;
  /** The path without its representation suffix: what the rewrite rules see. */
  bare: string;
  suffix: Format | null;
  /** The raw query string without "?". */
  query: string;
  /** https://example.org, without a path. */
  origin: string;
  /** BASE_URL's path prefix, '' at the root of the host. */
  basePath: string;
  /** The absolute URL of a site path. */
  link: (sitePath: string) => string;
  /** Whether the session cookie must be Secure: TLS here, or an https BASE_URL in front. */
  secure: boolean;
}

const maxTargetLength = 8192;

/**
 * 414 for an address over 8192 characters, 400 for a bad percent-encoding or a Host that is not
 * served here, 404 for a NUL or a ".." segment (never a file read). Suffixes are taken off only
 * when the rewrite table wants them (an imported .htaccess table does not). The suffix is noted
 * on the exchange, where an error answer takes it: the one of the address as sent until the path
 * is read, then the one of the decoded path, which the rewrite and the answer use.
 */
export function readTarget(ex: Exchange, config: Config, options: { suffixes: boolean }): Target {
  const { req } = ex;
  const url = req.url ?? '/';
  const mark = url.indexOf('?');
  const rawPath = mark === -1 ? url : url.slice(0, mark);
  // Until the path is read, a refusal of the address answers in the suffix it was asked with.
  if (options.suffixes) ex.suffix = takeSuffix(rawPath)[1];
  if (url.length > maxTargetLength)
    throw new HttpError(414, `The address is longer than ${maxTargetLength} characters.`);
  if (!url.startsWith('/')) throw new HttpError(400, 'The request target must be a path beginning with /.');
  let path: string;
  try {
    path = decodeURIComponent(rawPath);
  } catch {
    throw new HttpError(400, 'The address contains an invalid percent-encoding.');
  }
  if (path.includes('\0') || path.split('/').includes('..'))
    throw new HttpError(404, 'There is no document at this address.');
  const [bare, suffix] = options.suffixes ? takeSuffix(path) : [path, null];
  ex.suffix = suffix;
  const base = baseOf(config);
  const origin = base ? base.origin : originOf(ex, config);
  const basePath = base ? base.path : '';
  const secure = ex.client.https || base?.origin.startsWith('https:') === true;
  return {
    path,
    bare,
    suffix,
    query: mark === -1 ? '' : url.slice(mark + 1),
    origin,
    basePath,
    link: (p) => origin + basePath + p,
    secure,
  };
}

/** A redirect's absolute Location; the suffix is kept on the path (/person/old.json → /person/new.json). */
export function locate(target: Target, location: string, suffix: Format | null): string {
  if (/^https?:\/\//i.test(location)) return location;
  const mark = location.indexOf('?');
  const pathPart = mark === -1 ? location : location.slice(0, mark);
  return target.link(pathPart + (suffix ? `.${suffix}` : '')) + (mark === -1 ? '' : location.slice(mark));
}

// BASE_URL taken apart once per configuration, not on every request.
const bases = new WeakMap<Config, { origin: string; path: string } | null>();

function baseOf(config: Config): { origin: string; path: string } | null {
  let base = bases.get(config);
  if (base === undefined) {
    const url = config.baseUrl ? new URL(config.baseUrl) : null;
    base = url && { origin: url.origin, path: url.pathname.replace(/\/$/, '') };
    bases.set(config, base);
  }
  return base;
}

/** BASE_URL's path prefix without the trailing slash, '' at the root of the host. */
export function basePathOf(config: Config): string {
  return baseOf(config)?.path ?? '';
}

// A host name or an IPv6 address in brackets, and the port, if any.
const hostPattern = /^([a-z0-9.-]+|\[[0-9a-f:.]+\])(?::([0-9]{1,5}))?$/;

/**
 * The origin of the Host asked for (a trusted proxy's X-Forwarded-Host first), when it is one we
 * serve. A name of ALLOWED_HOSTS is served at its scheme's default port and at the port the
 * request came in on; another port is served only when ALLOWED_HOSTS names it with the name
 * (localhost:8443). The origin is written one way (no default port, no leading zeros), so that
 * a client cannot make new origins, and with them new kept documents (lib/scripts/run.ts), by
 * varying the Host (docs/operations.md, Configuration).
 */
function originOf(ex: Exchange, config: Config): string {
  const host = (ex.client.host ?? ex.req.headers.host ?? 'localhost').toLowerCase();
  const parts = hostPattern.exec(host);
  const name = parts?.[1] ?? host;
  const port = parts?.[2] === undefined ? null : Number(parts[2]);
  if (!parts || (!config.allowedHosts.includes(name) && !config.allowedHosts.includes(`${name}:${port}`))) {
    throw new HttpError(
      400,
      `The host ${host.slice(0, 100)} is not served here; add it to ALLOWED_HOSTS or set BASE_URL.`,
    );
  }
  const scheme = ex.client.https ? 'https' : 'http';
  const standard = scheme === 'https' ? 443 : 80;
  if (port === null || port === standard) return `${scheme}://${name}`;
  if (port < 1 || port > 65535) {
    throw new HttpError(
      400,
      `The Host header names port ${parts[2]}, which no server listens on; use a port from 1 to 65535.`,
    );
  }
  if (port !== ex.req.socket.localPort && !config.allowedHosts.includes(`${name}:${port}`)) {
    throw new HttpError(
      400,
      `The host ${host} is not served here: ${name} is served at port ${standard} and at the port this server listens on; add ${name}:${port} to ALLOWED_HOSTS or set BASE_URL.`,
    );
  }
  return `${scheme}://${name}:${port}`;
}
