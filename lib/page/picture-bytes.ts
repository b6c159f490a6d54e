// What of an uploaded picture sharp is given to decode, found by walking its structure first,
// where a few kilobytes can cost minutes (docs/robustness.md, Pictures): a PNG keeps only the
// chunks that decide its pixels, so text chunks libpng would unpack whole never reach it, and its
// colour profile may unpack to 1 MiB; a JPEG may have at most 100 scans. WebP has no such parts.
import { inflateSync } from 'node:zlib';
import { HttpError } from '../http/index.ts';

/** A PNG colour profile (iCCP) unpacked, at most; libvips would take one of 50 MiB. */
const maxProfileBytes = 1024 * 1024;
/** Scans of a JPEG, at most: cameras and editors write 1 (baseline) to about a dozen (progressive). */
const maxJpegScans = 100;

/** The bytes to decode; null when the structure is broken (the file is cut off, say). */
export function bytesToDecode(format: 'jpeg' | 'png' | 'webp', bytes: Buffer): Buffer | null {
  if (format === 'png') return pngToDecode(bytes);
  if (format === 'jpeg') checkJpegScans(bytes);
  return bytes;
}

/** A chunk's name, its four bytes read as one number. */
const nameOf = (name: string) => Buffer.from(name, 'latin1').readUInt32BE(0);
const [IHDR, IEND, iCCP] = ['IHDR', 'IEND', 'iCCP'].map(nameOf);
// Every critical chunk (its name starts upper-case) is kept, so libpng still refuses one it does
// not know; of the ancillary ones, those that change the pixels: transparency, the colour space
// (gamma, chromaticities, sRGB, the profile, cICP), and eXIf for the orientation.
const keptAncillary = new Set(['tRNS', 'gAMA', 'cHRM', 'sRGB', 'iCCP', 'cICP', 'eXIf'].map(nameOf));

/**
 * The PNG with only the chunks kept, up to IEND (https://www.w3.org/TR/png-3/#5Chunk-layout).
 * The text chunks go (tEXt, zTXt, iTXt: libpng unpacks each whole, up to 50 MiB, and the WebP
 * keeps no metadata anyway), and so does every colour profile after the first, which libpng
 * ignores too. A few operations a chunk, and the kept ones are copied as runs, so that a file of
 * nearly a million empty chunks is walked in milliseconds.
 */
function pngToDecode(bytes: Buffer): Buffer | null {
  // [start, end) of each run of kept chunks: a picture's IDAT chunks are one run.
  const runs = [0, 8];
  let profile = false;
  for (let at = 8; at < bytes.length; ) {
    if (at + 12 > bytes.length) return null;
    const start = at;
    const name = bytes.readUInt32BE(at + 4);
    at += 12 + bytes.readUInt32BE(at);
    if (at > bytes.length || !isChunkName(bytes, start + 4) || (start === 8 && name !== IHDR)) return null;
    if (name === iCCP) {
      // Only the first profile is looked at, whatever it held, as libpng does: a file of many
      // malformed ones would otherwise be unpacked again for each.
      const first = !profile;
      profile = true;
      if (!first || !profileFits(bytes.subarray(start + 8, at - 4))) continue;
    } else if ((bytes[start + 4] as number) & 0x20 && !keptAncillary.has(name)) {
      continue;
    }
    if (runs[runs.length - 1] === start) runs[runs.length - 1] = at;
    else runs.push(start, at);
    if (name === IEND) break;
  }
  const kept: Buffer[] = [];
  for (let i = 0; i < runs.length; i += 2) kept.push(bytes.subarray(runs[i], runs[i + 1]));
  return Buffer.concat(kept);
}

/** Whether the four bytes at `at` are letters, as a chunk's name must be. */
function isChunkName(bytes: Buffer, at: number): boolean {
  for (let i = at; i < at + 4; i++) {
    const lower = (bytes[i] as number) | 0x20;
    if (lower < 0x61 || lower > 0x7a) return false;
  }
  return true;
}

/**
 * Whether an iCCP chunk's profile is kept: one that unpacks to more than maxProfileBytes is
 * refused (422), unpacked no further than that; a malformed one is dropped, as libpng drops it.
 */
function profileFits(data: Buffer): boolean {
  // A name of 1 to 79 bytes, its NUL, the compression method 0, then the zlib stream.
  const nul = data.indexOf(0);
  if (nul < 1 || nul > 79 || data[nul + 1] !== 0) return false;
  try {
    inflateSync(data.subarray(nul + 2), { maxOutputLength: maxProfileBytes });
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ERR_BUFFER_TOO_LARGE') return false;
    throw new HttpError(
      422,
      `The picture's colour profile (iCCP) unpacks to more than ${maxProfileBytes / 1024 / 1024} MiB; save the picture with a smaller one, such as sRGB, or none.`,
    );
  }
}

/**
 * Refuses (422) a JPEG of more than maxJpegScans scans: the decoder walks every block of the
 * picture again for each, and one that changes nothing takes a few dozen bytes, so a small file
 * of a large picture could cost minutes (https://libjpeg-turbo.org/pmwiki/uploads/About/TwoIssueswiththeJPEGStandard.pdf).
 * A segment is skipped by its length, and what is between segments (a scan's coded data, or
 * garbage) up to the next marker, as the decoder reads them (ITU T.81, B.1.1): a SOS marker
 * inside an APP segment (an Exif thumbnail) is no scan. Coded data is searched for 0xFF natively
 * and a run of stuffed zeros stepped over in pairs, so a 10 MB file takes milliseconds.
 */
function checkJpegScans(bytes: Buffer): void {
  let scans = 0;
  for (let at = 2; at + 3 < bytes.length; ) {
    if (bytes[at] !== 0xff) {
      at = bytes.indexOf(0xff, at + 1);
      if (at < 0) return;
      continue;
    }
    const code = bytes[at + 1] as number;
    // A fill byte; a stuffed zero, a restart or another marker without a length.
    if (code === 0xff) at += 1;
    else if (code === 0x00 || code === 0x01 || (code >= 0xd0 && code <= 0xd8)) at += 2;
    else if (code === 0xd9) return;
    else {
      if (code === 0xda && ++scans > maxJpegScans) {
        throw new HttpError(
          422,
          `The JPEG has more than ${maxJpegScans} scans; save it again as an ordinary (baseline or progressive) JPEG.`,
        );
      }
      at += 2 + bytes.readUInt16BE(at + 2);
    }
  }
}
