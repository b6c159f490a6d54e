// Serves the files in public/ (pictures, stylesheet) the way Apache serves a document
// root: only regular files inside the folder, never a path that climbs out of it.
import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import type { Exchange } from './respond.ts';
import { etagOf, matchesEtag, sendBody, sendEmpty } from './respond.ts';

interface StaticFile {
  body: Buffer;
  type: string;
  etag: string;
  mtime: Date;
}

const types: Record<string, string> = {
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.webp': 'image/webp',
  '.ico': 'image/x-icon',
  '.txt': 'text/plain; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.xsd': 'application/xml; charset=utf-8',
};

// JSON is served only from public/schema/, as JSON Schema (docs/interface.md, Schemas).
const schemaTypes: Record<string, string> = {
  '.json': 'application/schema+json',
};

// Plain names only: no hidden files, no "..", no backslashes or NUL.
const safePath = /^(?:\/[A-Za-z0-9_-][A-Za-z0-9._-]*)+$/;

export class StaticFiles {
  private readonly dir: string;
  private readonly reload: boolean;
  private readonly cache = new Map<string, StaticFile | null>();

  constructor(dir: string, options: { reload: boolean }) {
    this.dir = dir;
    this.reload = options.reload;
  }

  /** The file at a decoded URL path, or null when there is none to serve. */
  find(urlPath: string): StaticFile | null {
    if (!safePath.test(urlPath) || urlPath.includes('..')) return null;
    if (!this.reload && this.cache.has(urlPath)) return this.cache.get(urlPath) ?? null;
    const file = this.read(urlPath);
    // Remember misses too, bounded, so probing for files costs no disk access.
    if (!this.reload && (file || this.cache.size < 10_000)) this.cache.set(urlPath, file);
    return file;
  }

  private read(urlPath: string): StaticFile | null {
    const extension = path.extname(urlPath).toLowerCase();
    const type = (urlPath.startsWith('/schema/') ? schemaTypes[extension] : undefined) ?? types[extension];
    if (!type) return null;
    const file = path.join(this.dir, urlPath);
    if (!file.startsWith(this.dir + path.sep)) return null;
    const stat = statSync(file, { throwIfNoEntry: false });
    if (!stat?.isFile()) return null;
    const body = readFileSync(file);
    return { body, type, etag: etagOf(body), mtime: stat.mtime };
  }
}

/** A file for GET and HEAD, kept an hour by caches and revalidated by its ETag. */
export function serveFile(ex: Exchange, file: StaticFile): void {
  const headers = { 'content-type': file.type, etag: file.etag, 'cache-control': 'public, max-age=3600', 'last-modified': file.mtime.toUTCString() };
  if (matchesEtag(ex.req.headers['if-none-match'], file.etag)) return sendEmpty(ex, 304, headers);
  sendBody(ex, 200, headers, file.body);
}
