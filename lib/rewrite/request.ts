// The rewrite table applied to an HTTP request: what the rules see of it (method, headers, HTTPS,
// the request line, and -f/-d answered from the app's own files: public/ and the scripts as
// /<name>.php), and what the front does with their decision.
import { statSync } from 'node:fs';
import path from 'node:path';
import type { Exchange, Target } from '../http/index.ts';
import { HttpError } from '../http/index.ts';
import { scriptOf } from '../script-name.ts';
import { rewriteUrl } from './rounds.ts';
import type { RewriteRequest, RewriteTable } from './table.ts';

interface SiteFiles {
  publicDir: string;
  scriptExists: (name: string) => boolean;
}

/** Where the request goes: on to a script or a file (the rewritten path), elsewhere, or upstream. */
type Destination = (
  | { kind: 'pass'; path: string; query: string; rule: number | null }
  | { kind: 'redirect'; status: number; location: string }
  | { kind: 'proxy'; url: string }
) & {
  /** The request headers that the holding conditions read. */
  vary: string[];
};

/**
 * Rewrites the request; F and G are answered 403 and 410 here, a loop of internal redirects is a
 * 500. Headers that holding conditions read go into the response's Vary, as Apache does.
 */
export function rewriteRequest(table: RewriteTable, ex: Exchange, target: Target, site: SiteFiles): Destination {
  const { req } = ex;
  const result = rewriteUrl(table, requestOf(ex, target.bare, target.query, site));
  if (result.vary.length > 0) ex.res.setHeader('vary', [...new Set(result.vary)].join(', '));
  switch (result.kind) {
    case 'pass':
      return result;
    case 'redirect':
      return result;
    case 'forbidden':
      throw new HttpError(403, 'Access to this address is forbidden.');
    case 'gone':
      throw new HttpError(410, 'This address is gone for good.');
    case 'loop':
      throw new Error(
        `The rewrite rules redirected ${target.path} internally more than 10 times (rule ${result.rule + 1} last); end the loop with a condition or the END flag.`,
      );
    case 'proxy': {
      // The old site gets the path as requested: /about.html stays /about.html when a P rule takes it.
      if (target.suffix === null) return result;
      const whole = rewriteUrl(table, requestOf(ex, target.path, target.query, site));
      return { ...result, url: whole.kind === 'proxy' ? whole.url : result.url };
    }
  }
}

function requestOf({ req, client }: Exchange, sitePath: string, query: string, site: SiteFiles): RewriteRequest {
  return {
    path: sitePath,
    query,
    method: req.method ?? 'GET',
    headers: req.headers,
    https: client.https,
    requestLine: `${req.method ?? 'GET'} ${req.url ?? '/'} HTTP/${req.httpVersion}`,
    remoteAddr: client.address,
    fileExists: (p) => isScriptPath(p, site) || statOf(site.publicDir, p)?.isFile() === true,
    dirExists: (p) => p === '/' || statOf(site.publicDir, p)?.isDirectory() === true,
  };
}

function isScriptPath(sitePath: string, site: SiteFiles): boolean {
  const name = scriptOf(sitePath);
  return name !== null && site.scriptExists(name);
}

// Only plain names inside public/: a hidden file, "..", a backslash or NUL is never looked at.
function statOf(publicDir: string, sitePath: string) {
  const parts = sitePath.split('/').filter((part) => part !== '');
  if (parts.some((part) => part.startsWith('.') || part.includes('\\') || part.includes('\0'))) return null;
  return statSync(path.join(publicDir, ...parts), { throwIfNoEntry: false }) ?? null;
}
