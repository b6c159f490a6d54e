// Reads an uploaded file to disk as it arrives, never whole in memory: an HTML form's
// multipart/form-data (through busboy: its one file and its text fields), or the bytes of a body
// sent as image/jpeg, image/png or image/webp by an API client. The file goes to a hidden
// temporary name in the folder it will be kept in; one too large (413), cut off or malformed (400)
// is removed at once, and the caller discards the rest when it is done.
import { createHash, randomBytes } from 'node:crypto';
import { createWriteStream, mkdirSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import type { IncomingMessage } from 'node:http';
import path from 'node:path';
import type { Readable } from 'node:stream';
import busboy from 'busboy';
import { HttpError } from './http-error.ts';

export interface UploadedFile {
  /** The temporary file, in the folder given. */
  path: string;
  bytes: number;
  /** SHA-256 of the bytes, hex. */
  sha256: string;
}

export interface Upload {
  /** The form's text fields (csrf_token …); none for a raw body. */
  fields: URLSearchParams;
  file: UploadedFile | null;
  /** Whether it came as a form (multipart/form-data) rather than as the raw bytes. */
  form: boolean;
  /** Removes the temporary file; call it when done, whatever happened. */
  discard: () => Promise<void>;
}

export interface UploadOptions {
  dir: string;
  maxBytes: number;
}

export const rawUploadTypes = ['image/jpeg', 'image/png', 'image/webp'];

/** Reads the upload of a request; 415 for a body that is neither a form with a file nor a picture. */
export function readUpload(req: IncomingMessage, options: UploadOptions): Promise<Upload> {
  const type = (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
  if (Number(req.headers['content-length'] ?? 0) > options.maxBytes + formOverhead)
    return Promise.reject(tooLarge(options.maxBytes));
  mkdirSync(options.dir, { recursive: true, mode: 0o700 });
  if (type === 'multipart/form-data') return readForm(req, options);
  if (rawUploadTypes.includes(type)) {
    return new Promise((resolve, reject) => {
      const file = receive(req, options, (err, received) =>
        err ? reject(err) : resolve(uploadOf(new URLSearchParams(), received, false)),
      );
      req.once('aborted', () => file.fail(cutOff()));
    });
  }
  return Promise.reject(
    new HttpError(
      415,
      `Send the picture as multipart/form-data (an HTML form with a file field) or as ${rawUploadTypes.join(', ').replace(/, ([^,]*)$/, ' or $1')}${type ? `, not ${type.slice(0, 100)}` : ''}.`,
    ),
  );
}

// The fields and boundaries of a form besides its file: the token, the method, a few lines of headers.
const formOverhead = 64 * 1024;

function readForm(req: IncomingMessage, options: UploadOptions): Promise<Upload> {
  return new Promise((resolve, reject) => {
    const fields = new URLSearchParams();
    let file: ReturnType<typeof receive> | null = null;
    let settled = false;
    const fail = (err: HttpError) => {
      if (settled) return;
      settled = true;
      req.unpipe(parser);
      req.resume();
      if (file) file.fail(err);
      else reject(err);
    };
    let parser: busboy.Busboy;
    try {
      parser = busboy({
        headers: req.headers,
        limits: { files: 1, fields: 20, fieldSize: 4096, parts: 30, fileSize: options.maxBytes, headerPairs: 100 },
      });
    } catch (err) {
      reject(new HttpError(400, `The form is malformed: ${(err as Error).message.slice(0, 200)}.`));
      return;
    }
    parser.on('field', (name, value) => fields.append(name, value));
    parser.on('file', (_name, stream) => {
      // One file is read; a second one is drained unread (busboy's files limit).
      if (file) return void stream.resume();
      file = receive(stream, options, (err, received) => {
        if (err) {
          settled = true;
          return reject(err);
        }
        fileDone = received;
        if (formDone) finish();
      });
      stream.once('limit', () => file?.fail(tooLarge(options.maxBytes)));
    });
    let fileDone: UploadedFile | null = null;
    let formDone = false;
    const finish = () => {
      if (settled) return;
      settled = true;
      resolve(uploadOf(fields, fileDone, true));
    };
    parser.once('close', () => {
      formDone = true;
      if (!file || fileDone) finish();
    });
    parser.once('error', (err: Error) =>
      fail(new HttpError(400, `The form is malformed: ${err.message.slice(0, 200)}.`)),
    );
    req.once('aborted', () => fail(cutOff()));
    req.once('error', () => fail(cutOff()));
    req.pipe(parser);
  });
}

/** Writes a stream to a new temporary file, hashing it; fail() stops and removes it. */
function receive(
  source: Readable,
  options: UploadOptions,
  done: (err: HttpError | null, file: UploadedFile | null) => void,
) {
  const file = path.join(options.dir, `.upload-${randomBytes(12).toString('hex')}`);
  const out = createWriteStream(file, { flags: 'wx', mode: 0o600 });
  const sha = createHash('sha256');
  let bytes = 0;
  let finished = false;
  const fail = (err: HttpError) => {
    if (finished) return;
    finished = true;
    source.unpipe(out);
    source.resume();
    out.destroy();
    // The file is gone before the caller hears of the failure.
    out.once('close', () => void rm(file, { force: true }).then(() => done(err, null)));
  };
  source.on('data', (chunk: Buffer) => {
    bytes += chunk.length;
    sha.update(chunk);
    if (bytes > options.maxBytes) fail(tooLarge(options.maxBytes));
  });
  source.once('error', () => fail(cutOff()));
  out.once('error', () => fail(new HttpError(500, 'The upload could not be stored.')));
  out.once('finish', () => {
    if (finished) return;
    finished = true;
    done(null, { path: file, bytes, sha256: sha.digest('hex') });
  });
  source.pipe(out);
  return { fail };
}

function uploadOf(fields: URLSearchParams, file: UploadedFile | null, form: boolean): Upload {
  return { fields, file, form, discard: async () => void (file && (await rm(file.path, { force: true }))) };
}

function tooLarge(maxBytes: number): HttpError {
  return new HttpError(
    413,
    `The picture is larger than ${Math.round(maxBytes / 1024 / 1024)} MiB; send a smaller one.`,
    { headers: { connection: 'close' } },
  );
}

function cutOff(): HttpError {
  return new HttpError(400, 'The upload was cut off before its end.');
}
