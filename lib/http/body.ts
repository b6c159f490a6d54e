// Reads a request body for a script: at most 1 MiB (413 beyond), of a media type the script
// accepts (415 otherwise), of a bounded number of parts counted as it arrives (body-shape.ts), in
// UTF-8, parsed. HTML forms send application/x-www-form-urlencoded; API clients JSON or XML in the
// shapes of the representations (malformed: 400).
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import type { ShapeCounter } from './body-shape.ts';
import { countForm, countJson, countXml } from './body-shape.ts';
import { HttpError } from './http-error.ts';
import { readQuery, readUtf8 } from './query.ts';
import type { XmlElement } from './xml-body.ts';
import { checkXmlEncoding, parseXmlBody } from './xml-body.ts';

const maxBodyBytes = 1024 * 1024;

export type BodyType = 'form' | 'json' | 'xml';

interface FormBody {
  type: 'form';
  fields: URLSearchParams;
}

interface JsonBody {
  type: 'json';
  value: unknown;
}

interface XmlBody {
  type: 'xml';
  /** The name of the root element, e.g. person. */
  root: string;
  value: XmlElement;
}

export type Body = FormBody | JsonBody | XmlBody;

/** Reads the body as one of the accepted types; the answer's type follows the list. */
export type BodyReader = <T extends BodyType>(accept: readonly T[]) => Promise<Extract<Body, { type: T }>>;

const mediaTypesOf: Record<BodyType, readonly string[]> = {
  form: ['application/x-www-form-urlencoded'],
  json: ['application/json'],
  // text/xml counts as XML, as it does for Accept.
  xml: ['application/xml', 'text/xml'],
};

const counters: Record<BodyType, () => ShapeCounter> = { form: countForm, json: countJson, xml: countXml };

/** The body type a request declares, or null when its Content-Type is none of ours. */
export function bodyTypeOf(headers: IncomingHttpHeaders): BodyType | null {
  const [mediaType] = parseContentType(headers['content-type']);
  return (Object.keys(mediaTypesOf) as BodyType[]).find((t) => mediaTypesOf[t].includes(mediaType)) ?? null;
}

/** Whether the request carries a body at all (RFC 9112 section 6.3). */
export function hasBody(headers: IncomingHttpHeaders): boolean {
  return headers['transfer-encoding'] !== undefined || Number(headers['content-length'] ?? 0) > 0;
}

/**
 * A reader for one request's body: the bytes are read and parsed once, and every call checks the
 * declared type against the types the caller accepts (the front may peek at a form for its
 * _method before the script asks for it again, or for JSON or XML). maxBytes is 1 MiB unless the
 * front allows less.
 */
/** The body of a GET or HEAD, which a script cannot read: asking for it is the script's mistake. */
export const noBody: BodyReader = async () => {
  throw new Error('GET and HEAD requests have no body to read; read it in POST, PUT or DELETE.');
};

export function createBodyReader(req: IncomingMessage, maxBytes = maxBodyBytes): BodyReader {
  let parsed: Promise<Body> | null = null;
  return async <T extends BodyType>(accept: readonly T[]) => {
    const [mediaType, charset] = parseContentType(req.headers['content-type']);
    const type = accept.find((t) => mediaTypesOf[t].includes(mediaType));
    if (type === undefined) {
      const wanted = accept
        .map((t) => mediaTypesOf[t][0])
        .join(', ')
        .replace(/, ([^,]*)$/, ' or $1');
      throw new HttpError(
        415,
        `Send the body as ${wanted}${mediaType ? `, not ${mediaType.slice(0, 100)}` : ' with a Content-Type header'}.`,
      );
    }
    if (charset !== null && charset !== 'utf-8')
      throw new HttpError(415, `Send the body in UTF-8, not ${charset.slice(0, 40)}.`);
    // The Content-Type decides the type, so every call that gets this far parses the same way.
    parsed ??= readBytes(req, maxBytes, counters[type]()).then((bytes) => {
      if (type === 'xml') checkXmlEncoding(bytes);
      return parseBody(type, readUtf8(bytes, 'The body'));
    });
    return (await parsed) as Extract<Body, { type: T }>;
  };
}

/**
 * A body declared larger than any script reads is refused before a byte of it is read; an upload
 * (multipart/form-data or a picture's bytes, lib/http/upload.ts) may take up to uploadMaxBytes.
 */
export function refuseLargeBody(req: IncomingMessage, uploadMaxBytes = 0): void {
  const [mediaType] = parseContentType(req.headers['content-type']);
  const upload = mediaType === 'multipart/form-data' || mediaType.startsWith('image/');
  const limit = upload ? Math.max(maxBodyBytes, uploadMaxBytes + 64 * 1024) : maxBodyBytes;
  if (Number(req.headers['content-length'] ?? 0) > limit)
    throw upload
      ? new HttpError(413, `The upload is larger than ${Math.round(uploadMaxBytes / 1024 / 1024)} MiB.`, {
          headers: { connection: 'close' },
        })
      : tooLarge(maxBodyBytes);
}

function parseBody(type: BodyType, text: string): Body {
  switch (type) {
    case 'form':
      return { type, fields: readQuery(text, 'The form') };
    case 'json':
      return { type, value: parseJson(text) };
    case 'xml':
      return { type, ...parseXmlBody(text) };
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new HttpError(
      400,
      `The JSON body is malformed: ${(err as Error).message.slice(0, 200)}. Send one JSON object in the shape of the representation.`,
    );
  }
}

/** The lower-cased media type and charset parameter of a Content-Type header (RFC 9110 section 8.3). */
function parseContentType(header: string | undefined): [string, string | null] {
  if (!header) return ['', null];
  const [type = '', ...parameters] = header.split(';');
  let charset: string | null = null;
  for (const parameter of parameters) {
    const match = /^\s*charset\s*=\s*"?([^";\s]*)"?\s*$/i.exec(parameter);
    if (match) charset = (match[1] as string).toLowerCase();
  }
  return [type.trim().toLowerCase(), charset === 'utf8' ? 'utf-8' : charset];
}

function tooLarge(limit: number): HttpError {
  const size = limit >= 1024 * 1024 ? `${limit / 1024 / 1024} MiB` : `${limit / 1024} KiB`;
  return new HttpError(413, `The request body is larger than ${size}.`, { headers: { connection: 'close' } });
}

/** The body's bytes; each chunk is counted as it comes, and the first that passes a bound ends the reading. */
function readBytes(req: IncomingMessage, limit: number, count: ShapeCounter): Promise<Buffer> {
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > limit) return Promise.reject(tooLarge(limit));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      try {
        if (size > limit) throw tooLarge(limit);
        count(chunk);
      } catch (err) {
        // Stop buffering; the refusal closes the connection instead of reading the rest.
        req.off('data', onData);
        req.pause();
        reject(err);
        return;
      }
      chunks.push(chunk);
    };
    req.on('data', onData);
    req.once('end', () => resolve(Buffer.concat(chunks)));
    req.once('error', reject);
    req.once('aborted', () => reject(new HttpError(400, 'The request body was cut off.')));
  });
}
