// Reads a request body for a script: at most 1 MiB (413 beyond), of a media type the script
// accepts (415 otherwise), parsed. HTML forms send application/x-www-form-urlencoded.
import type { IncomingMessage } from 'node:http';
import { HttpError } from './http-error.ts';

export const maxBodyBytes = 1024 * 1024;

/** The body types a script can ask for; JSON and XML join them with the data-changing forms. */
export type BodyType = 'form';

export interface FormBody {
  type: 'form';
  fields: URLSearchParams;
}

export type Body = FormBody;

const mediaTypeOf: Record<BodyType, string> = {
  form: 'application/x-www-form-urlencoded',
};

export async function readBody(req: IncomingMessage, accept: readonly BodyType[]): Promise<Body> {
  const [mediaType, charset] = parseContentType(req.headers['content-type']);
  const type = accept.find((t) => mediaTypeOf[t] === mediaType);
  if (type === undefined) {
    const wanted = accept.map((t) => mediaTypeOf[t]).join(' or ');
    throw new HttpError(415, `Send the body as ${wanted}${mediaType ? `, not ${mediaType.slice(0, 100)}` : ' with a Content-Type header'}.`);
  }
  if (charset !== null && charset !== 'utf-8') throw new HttpError(415, `Send the body in UTF-8, not ${charset.slice(0, 40)}.`);
  const bytes = await readBytes(req, maxBodyBytes);
  return { type, fields: new URLSearchParams(bytes.toString('utf8')) };
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

function readBytes(req: IncomingMessage, limit: number): Promise<Buffer> {
  const tooLarge = () => new HttpError(413, `The request body is larger than ${limit / 1024 / 1024} MiB.`, { headers: { connection: 'close' } });
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > limit) return Promise.reject(tooLarge());
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        // Stop buffering; the 413 closes the connection instead of reading the rest.
        req.off('data', onData);
        req.pause();
        reject(tooLarge());
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
