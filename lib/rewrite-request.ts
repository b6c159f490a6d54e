// What the rewrite rules see of an HTTP request: method, headers, HTTPS, the request line,
// and -f/-d answered from the app's own files: public/ and the scripts (as /<name>.php).
import { statSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import path from 'node:path';
import type { RewriteRequest } from './rewrite.ts';

export interface SiteFiles {
  publicDir: string;
  scriptExists: (name: string) => boolean;
}

const SCRIPT_PATH = /^\/([A-Za-z0-9_-]+)\.php$/;

export function rewriteRequestOf(req: IncomingMessage, target: { path: string; query: string }, site: SiteFiles): RewriteRequest {
  return {
    path: target.path,
    query: target.query,
    method: req.method ?? 'GET',
    headers: req.headers,
    https: (req.socket as { encrypted?: boolean }).encrypted === true,
    requestLine: `${req.method ?? 'GET'} ${req.url ?? '/'} HTTP/${req.httpVersion}`,
    remoteAddr: req.socket.remoteAddress?.replace(/^::ffff:/, '') ?? '',
    fileExists: (sitePath) => isScriptPath(sitePath, site) || statOf(site.publicDir, sitePath)?.isFile() === true,
    dirExists: (sitePath) => sitePath === '/' || statOf(site.publicDir, sitePath)?.isDirectory() === true,
  };
}

function isScriptPath(sitePath: string, site: SiteFiles): boolean {
  const name = SCRIPT_PATH.exec(sitePath)?.[1];
  return name !== undefined && site.scriptExists(name);
}

// Only plain names inside public/: a hidden file, "..", a backslash or NUL is never looked at.
function statOf(publicDir: string, sitePath: string) {
  const parts = sitePath.split('/').filter((part) => part !== '');
  if (parts.some((part) => part.startsWith('.') || part.includes('\\') || part.includes('\0'))) return null;
  return statSync(path.join(publicDir, ...parts), { throwIfNoEntry: false }) ?? null;
}
