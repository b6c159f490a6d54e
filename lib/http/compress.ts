// Compression of response bodies (RFC 9110 section 8.4): brotli or gzip, as the client's
// Accept-Encoding allows, for text types only and for bodies worth it. A compressed body is
// another representation, so it has its own ETag: the identity's with -br or -gz inside the quotes.
import { brotliCompress, brotliCompressSync, constants, gzip, gzipSync } from 'node:zlib';
import { promisify } from 'node:util';

export type Encoding = 'br' | 'gzip';

/** Below this, headers and framing eat what compression saves (one TCP segment holds it anyway). */
export const minCompressBytes = 1024;

/** Text: HTML, XML, JSON, CSS, JavaScript, SVG, plain text. Pictures, fonts and archives are compressed already. */
export function isCompressible(type: string): boolean {
  const mediaType = (type.split(';')[0] ?? '').trim().toLowerCase();
  return (
    mediaType.startsWith('text/') ||
    /^application\/(?:[\w.+-]*\+)?(?:json|xml|javascript)$/.test(mediaType) ||
    mediaType.endsWith('+xml') ||
    mediaType.endsWith('+json')
  );
}

/**
 * The encoding to send: brotli when the client accepts it, else gzip, else none (identity).
 * q=0 refuses a coding, `*` stands for those not named (RFC 9110 section 12.5.3).
 */
export function chooseEncoding(header: string | string[] | undefined): Encoding | null {
  if (typeof header !== 'string' || header === '') return null;
  const q = new Map<string, number>();
  for (const part of header.split(',', 32)) {
    const [name = '', ...parameters] = part.split(';');
    const weight = parameters.map((p) => /^\s*q\s*=\s*([01](?:\.\d{0,3})?)\s*$/i.exec(p)).find(Boolean);
    q.set(name.trim().toLowerCase(), weight ? Number(weight[1]) : 1);
  }
  const accepted = (coding: string) =>
    (q.get(coding) ?? (coding === 'gzip' ? q.get('x-gzip') : undefined) ?? q.get('*') ?? 0) > 0;
  return accepted('br') ? 'br' : accepted('gzip') ? 'gzip' : null;
}

/** "abc" → "abc-br"; a weak tag stays weak. */
export function encodedEtag(etag: string, encoding: Encoding): string {
  return etag.replace(/"$/, encoding === 'br' ? '-br"' : '-gz"');
}

// Brotli's quality 4 and gzip's level 6 give most of the size at a small part of the CPU of the
// maximum; a 256 KB window (not 4 MB) is plenty for pages of a few KB and allocated per call
// (docs/performance.md, Compression).
const brotliOptions = { params: { [constants.BROTLI_PARAM_QUALITY]: 4, [constants.BROTLI_PARAM_LGWIN]: 18 } };
const gzipOptions = { level: 6 };

/** On the calling thread: documents are a few KB, cheaper to compress than to hand to the thread pool. */
export function compressSync(body: Buffer, encoding: Encoding): Buffer {
  return exact(
    encoding === 'br'
      ? brotliCompressSync(body, {
          ...brotliOptions,
          params: { ...brotliOptions.params, [constants.BROTLI_PARAM_SIZE_HINT]: body.length },
        })
      : gzipSync(body, gzipOptions),
  );
}

/**
 * zlib returns a small result as a view of its 16 KB output chunk: a 2 KB page kept that way holds
 * 16 KB. What is kept is copied to its own size (docs/performance.md, Compression).
 */
function exact(compressed: Buffer): Buffer {
  if (compressed.buffer.byteLength === compressed.length) return compressed;
  // Not Buffer.from: under 4 KB it would copy into Node's shared 8 KB pool, and hold a slab of it.
  const copy = Buffer.allocUnsafeSlow(compressed.length);
  compressed.copy(copy);
  return copy;
}

const brotliAsync = promisify(brotliCompress);
const gzipAsync = promisify(gzip);

/** In the thread pool: files of up to a few MB, compressed once and kept. */
export function compressAsync(body: Buffer, encoding: Encoding): Promise<Buffer> {
  return (encoding === 'br' ? brotliAsync(body, brotliOptions) : gzipAsync(body, gzipOptions)).then(exact);
}

/** From this size a document is compressed in the thread pool: a sitemap part, not a page. */
const poolBytes = 256 * 1024;

/**
 * A document's body compressed: on the calling thread when it is a page of a few KB, in the
 * thread pool when it is large, where a sitemap part's tens of milliseconds would hold up every
 * other request (docs/performance.md, The sitemap).
 */
export function compressBody(body: Buffer, encoding: Encoding): Buffer | Promise<Buffer> {
  return body.length < poolBytes ? compressSync(body, encoding) : compressAsync(body, encoding);
}
