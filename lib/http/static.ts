// Serves the files in public/ (pictures, stylesheets, schemas) and the uploaded pictures the way
// Apache serves a document root: only regular files inside the folder, never a path that climbs
// out of it. The `send` library streams them from disk with their type, Range (206, 416),
// Last-Modified, ETag and conditional requests; text files are sent compressed when the client
// accepts it, their compressed bytes kept beside the file's size and time.
import { createReadStream } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, rename, rm, stat, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import mime from 'mime-types';
import send from 'send';
import type { Encoding } from './compress.ts';
import { chooseEncoding, compressAsync, encodedEtag, isCompressible, minCompressBytes } from './compress.ts';
import { HttpError } from './http-error.ts';
import type { Exchange } from './respond.ts';
import { matchesEtag, securityHeaders, sendBody, sendEmpty } from './respond.ts';

/** A folder served at a path prefix: /bilder/ from the data folder's pictures. */
export interface Mount {
  prefix: string;
  dir: string;
  /** Every name in it is a content hash: cached for a year, never revalidated. */
  immutable: boolean;
  /**
   * Where a file missing from the folder comes from (the pictures in the database): its bytes
   * and when they were stored, or null for none. The folder then keeps a copy, with that time.
   */
  fetch?: (name: string) => Promise<Fetched | null>;
}

interface Fetched {
  bytes: Buffer;
  stored: Date;
}

/** Where the uploaded pictures are served (lib/page/picture.ts). */
export const picturesPath = '/bilder/';

// Plain names only: no hidden files, no "..", no backslashes or NUL.
const safePath = /^(?:\/[A-Za-z0-9_-][A-Za-z0-9._-]*)+$/;

// A name with a content hash in it (site.3f2a9c1b7e4d5a60.css, <sha256>-480.webp) never changes its bytes.
const fingerprinted = /(?:^|[.-])[0-9a-f]{16,}(?:[.-]|$)/;

const revalidated = 'public, max-age=3600';
const immutable = 'public, max-age=31536000, immutable';

// Text files up to this size are compressed once and kept (at most keptBytes of them in all); larger ones are streamed as they are.
const maxCompressedFile = 4 * 1024 * 1024;
const keptBytes = 32 * 1024 * 1024;

export class StaticFiles {
  private readonly mounts: Mount[];
  private readonly compressed = new Map<string, Promise<Buffer>>();
  private compressedBytes = 0;

  constructor(dir: string, options: { mounts?: Mount[] } = {}) {
    this.mounts = [...(options.mounts ?? []), { prefix: '/', dir: path.resolve(dir), immutable: false }];
  }

  /**
   * Sends the file at a decoded URL path for GET or HEAD; false when there is none to serve (the
   * caller answers 404). A Range the file cannot satisfy is 416, a failed If-Match 412.
   */
  async serve(ex: Exchange, urlPath: string): Promise<boolean> {
    if (!safePath.test(urlPath) || urlPath.includes('..')) return false;
    const mount = this.mounts.find((m) => urlPath.startsWith(m.prefix)) as Mount;
    const relative = urlPath.slice(mount.prefix.length - 1);
    const type = typeOf(urlPath);
    if (!type) return false;
    const file = path.join(mount.dir, relative);
    if (!file.startsWith(mount.dir + path.sep)) return false;
    let info = await stat(file).catch(() => null);
    if (!info && mount.fetch) {
      const fetched = await mount.fetch(path.basename(relative));
      if (!fetched) return false;
      if (!(await keepCopy(file, fetched))) return (sendFetched(ex, type, fetched), true);
      info = await stat(file).catch(() => null);
    }
    if (!info?.isFile()) return false;
    const compressible = isCompressible(type) && info.size >= minCompressBytes;
    const etag = fileEtag(info.size, info.mtimeMs);
    const headers: Record<string, string> = {
      'content-type': type,
      etag,
      'last-modified': info.mtime.toUTCString(),
      'cache-control': mount.immutable || fingerprinted.test(path.basename(relative)) ? immutable : revalidated,
    };
    if (compressible) headers.vary = 'Accept-Encoding';
    const encoding =
      compressible && info.size <= maxCompressedFile && ex.req.headers.range === undefined
        ? chooseEncoding(ex.req.headers['accept-encoding'])
        : null;
    if (encoding) {
      headers.etag = encodedEtag(etag, encoding);
      headers['content-encoding'] = encoding;
      if (matchesEtag(ex.req.headers['if-none-match'], headers.etag))
        return (sendEmpty(ex, 304, pick(headers, ['etag', 'cache-control', 'vary', 'last-modified'])), true);
      sendBody(ex, 200, headers, await this.compressedOf(file, `${etag}\u0000${encoding}`, encoding));
      return true;
    }
    await stream(ex, mount.dir, relative, headers);
    return true;
  }

  /** A file's compressed bytes, made once per size and time of the file (the key) and encoding. */
  private compressedOf(file: string, version: string, encoding: Encoding): Promise<Buffer> {
    const key = `${file}\u0000${version}`;
    let body = this.compressed.get(key);
    if (!body) {
      body = readFile(file).then((bytes) => compressAsync(bytes, encoding));
      this.compressed.set(key, body);
      body.then(
        (bytes) => {
          this.compressedBytes += bytes.length;
          // The oldest go first once the kept bytes pass the bound.
          for (const [oldest, kept] of this.compressed) {
            if (this.compressedBytes <= keptBytes) break;
            this.compressed.delete(oldest);
            kept.then(
              (b) => (this.compressedBytes -= b.length),
              () => {},
            );
          }
        },
        () => this.compressed.delete(key),
      );
    }
    return body;
  }
}

/** The ETag send would make from a file's size and time, strong so that If-Range can use it. */
function fileEtag(size: number, mtimeMs: number): string {
  return `"${size.toString(16)}-${Math.floor(mtimeMs).toString(16)}"`;
}

/**
 * Writes a fetched file into its folder under a temporary name and renames it, so that a request
 * never streams half a file; its time is when it was stored, so that every instance's copy has
 * the same ETag. False when the folder cannot be written (the file is then sent from memory).
 */
async function keepCopy(file: string, fetched: Fetched): Promise<boolean> {
  const temporary = `${path.dirname(file)}/.fetch-${randomBytes(6).toString('hex')}`;
  try {
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(temporary, fetched.bytes);
    await utimes(temporary, fetched.stored, fetched.stored);
    await rename(temporary, file);
    return true;
  } catch {
    await rm(temporary, { force: true });
    return false;
  }
}

/** A fetched file that could not be kept, sent from memory with the headers it would have had. */
function sendFetched(ex: Exchange, type: string, fetched: Fetched): void {
  const etag = fileEtag(fetched.bytes.length, fetched.stored.getTime());
  const headers = {
    'content-type': type,
    etag,
    'last-modified': fetched.stored.toUTCString(),
    'cache-control': immutable,
  };
  if (matchesEtag(ex.req.headers['if-none-match'], etag))
    return sendEmpty(ex, 304, pick(headers, ['etag', 'cache-control', 'last-modified']));
  sendBody(ex, 200, headers, fetched.bytes);
}

/** The media type of a name: the mime-types table, JSON only as a schema of /schema/, XML in UTF-8. */
function typeOf(urlPath: string): string | null {
  const extension = path.extname(urlPath).toLowerCase();
  if (extension === '.json') return urlPath.startsWith('/schema/') ? 'application/schema+json' : null;
  if (extension === '.xml' || extension === '.xsd') return 'application/xml; charset=utf-8';
  return mime.contentType(extension) || null;
}

/** Streams the file with send, which answers Range, If-Range, If-Modified-Since and If-None-Match itself. */
function stream(ex: Exchange, root: string, relative: string, headers: Record<string, string>): Promise<void> {
  const { req, res } = ex;
  for (const [name, value] of Object.entries({ ...securityHeaders, ...headers })) res.setHeader(name, value);
  return new Promise((resolve, reject) => {
    send(req, relative, { root, index: false, dotfiles: 'deny', etag: false, lastModified: false, cacheControl: false })
      .on('stream', (file: ReturnType<typeof createReadStream>) =>
        file.on('data', (chunk: Buffer | string) => (ex.bytes += chunk.length)),
      )
      .on('directory', () => reject(new HttpError(404, 'There is no document here.')))
      .on('error', (err: { status?: number; headers?: Record<string, string> }) => {
        // Only the answer send chose stays: the file's own headers do not describe a 412 or 416.
        for (const name of Object.keys(headers)) res.removeHeader(name);
        const status = err.status ?? 500;
        if (status === 416)
          reject(
            new HttpError(416, 'The range asked for lies outside the file.', {
              headers: { 'content-range': err.headers?.['Content-Range'] ?? `bytes */*` },
            }),
          );
        else if (status === 412)
          reject(
            new HttpError(412, 'The file has changed since the version named in If-Match or If-Unmodified-Since.'),
          );
        else if (status < 500) reject(new HttpError(404, 'There is no document here.'));
        else reject(new Error(`A file of ${root} could not be read: ${String((err as Error).message)}`));
      })
      .on('end', () => resolve())
      .pipe(res);
    res.once('close', () => resolve());
  });
}

function pick(headers: Record<string, string>, names: string[]): Record<string, string> {
  return Object.fromEntries(names.filter((n) => headers[n] !== undefined).map((n) => [n, headers[n] as string]));
}
