// What of an uploaded picture sharp is given to decode, found by walking its structure first,
// where a few kilobytes can cost minutes (docs/robustness.md, Pictures): a PNG keeps only the
// chunks that decide its pixels, so text chunks libpng would unpack whole never reach it, and its
// colour profile may unpack to 1 MiB; a JPEG may have at most 100 scans. WebP has no such parts.
import { inflateSync } from 'node:zlib';
import { HttpError } from '../http/index.ts';

/** A PNG colour profile (iCCP) unpacked, at most; libvips would take one of 50 MiB. */
export const maxProfileBytes = 1024 * 1024;
/** Scans of a JPEG, at most: cameras and editors write 1 (baseline) to about a dozen (progressive). */
export const maxJpegScans = 100;

/** The bytes to decode; null when the structure is broken (the file is cut off, say). */
export function bytesToDecode(format: 'jpeg' | 'png' | 'webp', bytes: Buffer): Buffer | null {
  if (format === 'png') return pngToDecode(bytes);
  if (format === 'jpeg') checkJpegScans(bytes);
  return bytes;
}

// Every critical chunk (its name starts upper-case) is kept, so libpng still refuses one it does
// not know; of the ancillary ones, those that change the pixels: transparency, the colour space
// (gamma, chromaticities, sRGB, the profile, cICP), and eXIf for the orientation.
const keptAncillary = new Set(['tRNS', 'gAMA', 'cHRM', 'sRGB', 'iCCP', 'cICP', 'eXIf']);
const chunkName = /^[A-Za-z]{4}$/;

/**
 * The PNG with only the chunks kept, up to IEND (https://www.w3.org/TR/png-3/#5Chunk-layout).
 * The text chunks go (tEXt, zTXt, iTXt: libpng unpacks each whole, up to 50 MiB, and the WebP
 * keeps no metadata anyway), and so does every colour profile after the first, which libpng
 * ignores too.
 */
function pngToDecode(bytes: Buffer): Buffer | null {
  const kept: Buffer[] = [bytes.subarray(0, 8)];
  let profile = false;
  for (let at = 8; at < bytes.length;) {
    if (at + 12 > bytes.length) return null;
    const length = bytes.readUInt32BE(at);
    const end = at + 12 + length;
    const name = bytes.toString('latin1', at + 4, at + 8);
    if (end > bytes.length || !chunkName.test(name) || (at === 8 && name !== 'IHDR')) return null;
    const chunk = bytes.subarray(at, end);
    at = end;
    if (name === 'iCCP') {
      if (profile || !profileFits(chunk.subarray(8, 8 + length))) continue;
      profile = true;
    } else if (name.charCodeAt(0) >= 0x61 && !keptAncillary.has(name)) {
      continue;
    }
    kept.push(chunk);
    if (name === 'IEND') break;
  }
  return Buffer.concat(kept);
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
    throw new HttpError(422, `The picture's colour profile (iCCP) unpacks to more than ${maxProfileBytes / 1024 / 1024} MiB; save the picture with a smaller one, such as sRGB, or none.`);
  }
}

/**
 * Refuses (422) a JPEG of more than maxJpegScans scans: the decoder walks every block of the
 * picture again for each, and one that changes nothing takes a few dozen bytes, so a small file
 * of a large picture could cost minutes (https://libjpeg-turbo.org/pmwiki/uploads/About/TwoIssueswiththeJPEGStandard.pdf).
 * The segments are skipped by their length and a scan's coded data up to the next marker, as the
 * decoder reads them (ITU T.81, B.1.1): a SOS marker inside an APP segment (an Exif thumbnail) is no scan.
 */
function checkJpegScans(bytes: Buffer): void {
  let scans = 0;
  for (let at = 2; at < bytes.length;) {
    const marker = bytes.indexOf(0xff, at);
    if (marker < 0) return;
    at = marker + 1;
    while (bytes[at] === 0xff) at++;
    const code = bytes[at++];
    // A stuffed zero or a restart inside coded data, or a marker without a length.
    if (code === undefined || code === 0x00 || code === 0x01 || (code >= 0xd0 && code <= 0xd8)) continue;
    if (code === 0xd9 || at + 2 > bytes.length) return;
    at += bytes.readUInt16BE(at);
    if (code === 0xda && ++scans > maxJpegScans) {
      throw new HttpError(422, `The JPEG has more than ${maxJpegScans} scans; save it again as an ordinary (baseline or progressive) JPEG.`);
    }
  }
}
