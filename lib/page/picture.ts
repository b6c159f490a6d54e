// A person's picture as uploaded: checked to be a JPEG, PNG or WebP by its first bytes, by its
// structure (picture-bytes.ts) and by sharp reading its header, refused beyond the pixel limit
// before any pixel is decoded, then cut square and scaled with sharp into the sizes the pages
// show, as WebP under a name made of the upload's SHA-256, so the pictures never change and are
// served as immutable; conversions take turns (picture-queue.ts; docs/operations.md, Pictures).
// They are kept in the database (sql/013), which every instance reads; nothing is kept of a
// refused upload, nor of the original.
import { open, readFile } from 'node:fs/promises';
import type { Db, Queryable, Replicas } from '../db/index.ts';
import type { Upload, UploadedFile } from '../http/index.ts';
import { HttpError, picturesPath } from '../http/index.ts';
import { bytesToDecode } from './picture-bytes.ts';
import type { PictureQueue } from './picture-queue.ts';

export interface PictureOptions {
  /** Width times height, at most. */
  maxPixels: number;
  /** The largest upload, for the form's hint (lib/http/upload.ts refuses larger ones). */
  maxBytes: number;
  /** The process's conversions in turn (config pictureConcurrency and pictureQueue). */
  queue: PictureQueue;
}

/** The widths the pages use: the person list's small picture and the person page's portrait, both at twice their CSS size. */
export const pictureWidths = [160, 480] as const;

/** An uploaded picture's address in another of its widths; any other image address as it is. */
export function pictureIn(image: string, width: (typeof pictureWidths)[number]): string {
  const uploaded = new RegExp(`^(${picturesPath}[0-9a-f]{32})-[0-9]+\\.webp$`).exec(image);
  return uploaded ? `${uploaded[1]}-${width}.webp` : image;
}

type Sharp = typeof import('sharp')['default'];
let loading: Promise<Sharp> | null = null;

/**
 * sharp, loaded with the first upload: its libvips is about 6 MB resident, which every worker
 * would carry from its start for something most of them never do (docs/performance.md, Memory).
 * It keeps no decoded images between requests: each picture is read once. A conversion uses one
 * thread of libvips, on every platform, so that it takes at most one core from the requests.
 */
function loadSharp(): Promise<Sharp> {
  loading ??= import('sharp').then(
    ({ default: sharp }) => {
      sharp.cache(false);
      sharp.concurrency(1);
      return sharp;
    },
    (err: unknown) => {
      // Tried again with the next upload (a package being reinstalled, say), not refused until a restart.
      loading = null;
      throw err;
    },
  );
  return loading;
}

type Format = 'jpeg' | 'png' | 'webp';

/** The format the first bytes say (the magic numbers), whatever the client's Content-Type claims. */
function formatOf(head: Buffer): Format | null {
  if (head[0] === 0xff && head[1] === 0xd8 && head[2] === 0xff) return 'jpeg';
  if (head.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))) return 'png';
  if (head.toString('latin1', 0, 4) === 'RIFF' && head.toString('latin1', 8, 12) === 'WEBP') return 'webp';
  return null;
}

const notAPicture = 'The file is not a JPEG, PNG or WebP picture; choose one of those.';

/** A picture's name: its hash and width, as served under /bilder/ and kept in the table picture. */
export const pictureName = /^[0-9a-f]{32}-[0-9]+\.webp$/;

/** A stored picture's bytes and when it was stored; null when no picture has the name (one look-up of the primary key). */
async function readPicture(db: Queryable, name: string): Promise<{ bytes: Buffer; stored: Date } | null> {
  const [row] = await db.query<{ bytes: Uint8Array; stored: Date | string }>(
    'SELECT bytes, created_at AS stored FROM picture WHERE name = $1',
    [name],
    { name: 'picture-by-name' },
  );
  if (!row) return null;
  return {
    bytes: Buffer.from(row.bytes.buffer, row.bytes.byteOffset, row.bytes.byteLength),
    stored: new Date(row.stored),
  };
}

/**
 * Where /bilder/ finds a picture that is not in the folder yet: a replica when there are any,
 * else, or when the replica has not replayed it yet (it was uploaded a moment ago) or fails, the
 * primary. A name that is none is not looked up at all.
 */
export function pictureSource(primary: Db, replicas: Replicas | null) {
  return async (name: string): Promise<{ bytes: Buffer; stored: Date } | null> => {
    if (!pictureName.test(name)) return null;
    if (replicas) {
      const route = await replicas.route(0n);
      if (route.server !== primary) {
        const found = await readPicture(route.db, name).catch(() => null);
        if (found) return found;
      }
    }
    return readPicture(primary, name);
  };
}

/** Stores the uploaded picture in every width; returns the site path of the large one, for the person's image. */
export async function storePicture(db: Db, upload: Upload, options: PictureOptions): Promise<string> {
  const file = upload.file;
  if (!file || file.bytes === 0)
    throw new HttpError(422, 'No picture came with the request: choose a JPEG, PNG or WebP file.', {
      errors: [{ field: 'bild', message: 'Choose a file.' }],
    });
  const format = formatOf(await readHead(file.path));
  if (!format) throw new HttpError(415, notAPicture);
  const sharp = await loadSharp();
  return options.queue.run(() => convert(db, sharp, file, format, options));
}

async function convert(
  db: Db,
  sharp: Sharp,
  file: UploadedFile,
  format: Format,
  options: PictureOptions,
): Promise<string> {
  // Read whole (PICTURE_MAX_BYTES at most, by the few conversions that run at once), walked, and decoded from memory.
  const bytes = bytesToDecode(format, await readFile(file.path));
  const unreadable = () =>
    new HttpError(415, `${notAPicture} It starts like a ${format.toUpperCase()} but cannot be read as one.`);
  if (!bytes) throw unreadable();
  const input = () => sharp(bytes, { limitInputPixels: options.maxPixels, failOn: 'error' });
  // The header alone, which says the size without decoding a pixel; the decoding below keeps the limit too.
  const meta = await sharp(bytes, { limitInputPixels: false })
    .metadata()
    .catch(() => null);
  if (!meta || meta.format !== format || !meta.width || !meta.height) throw unreadable();
  const pixels = meta.width * meta.height;
  if (pixels > options.maxPixels) {
    throw new HttpError(
      422,
      `The picture has ${meta.width} × ${meta.height} pixels, more than the ${(options.maxPixels / 1e6).toFixed(0)} million accepted; scale it down first.`,
    );
  }
  const name = file.sha256.slice(0, 32);
  const names = pictureWidths.map((width) => `${name}-${width}.webp`);
  // The same bytes were uploaded before (by anyone): the pictures are there already.
  const stored = await db.query<{ name: string }>('SELECT name FROM picture WHERE name = ANY($1)', [names]);
  const have = new Set(stored.map((row) => row.name));
  const made: [string, Buffer][] = [];
  try {
    for (const width of pictureWidths) {
      const named = `${name}-${width}.webp`;
      if (have.has(named)) continue;
      made.push([
        named,
        await input().autoOrient().resize(width, width, { fit: 'cover' }).webp({ quality: 80 }).toBuffer(),
      ]);
    }
  } catch (err) {
    // sharp's errors (a truncated or corrupt picture, the pixel limit) carry no code.
    if (err instanceof Error && (err as NodeJS.ErrnoException).code === undefined) {
      throw new HttpError(422, `The picture cannot be decoded: ${err.message.slice(0, 200)}.`);
    }
    throw err;
  }
  if (made.length > 0) {
    // Two uploads of the same picture at once store it once.
    const rows = made.map((_, i) => `($${2 * i + 1}, $${2 * i + 2})`).join(', ');
    await db.transaction((tx) =>
      tx.query(`INSERT INTO picture (name, bytes) VALUES ${rows} ON CONFLICT (name) DO NOTHING`, made.flat()),
    );
  }
  return `${picturesPath}${name}-${pictureWidths[pictureWidths.length - 1]}.webp`;
}

async function readHead(file: string): Promise<Buffer> {
  const handle = await open(file, 'r');
  try {
    const head = Buffer.alloc(12);
    await handle.read(head, 0, 12, 0);
    return head;
  } finally {
    await handle.close();
  }
}
