// Test support for what a picture upload may cost: PNG chunks and JPEG scans written by hand, so
// a test can add text chunks and colour profiles that unpack to far more than they weigh, or a
// progressive JPEG's thousands of scans that each walk every block of the picture again.
import { crc32, deflateSync } from 'node:zlib';

/** A PNG chunk: length, type, data and the CRC of type and data. */
export function pngChunk(type: string, data: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(data.length, 0);
  head.write(type, 4, 'latin1');
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), data])), 0);
  return Buffer.concat([head, data, crc]);
}

/** The PNG with the chunks put right after its IHDR (the signature's 8 bytes and IHDR's 25). */
export function withPngChunks(png: Buffer, chunks: Buffer[]): Buffer {
  return Buffer.concat([png.subarray(0, 33), ...chunks, png.subarray(33)]);
}

const deflated = new Map<number, Buffer>();

/** A zlib stream of `bytes` bytes of the letter A: about a thousandth of that in the file; made once for each size. */
function deflatedText(bytes: number): Buffer {
  const made = deflated.get(bytes) ?? deflateSync(Buffer.alloc(bytes, 'A'), { level: 9 });
  deflated.set(bytes, made);
  return made;
}

/** Text chunks: tEXt as it is, zTXt and iTXt compressed. */
export function textChunk(kind: 'tEXt' | 'zTXt' | 'iTXt', keyword: string, bytes: number): Buffer {
  const key = Buffer.from(`${keyword}\0`, 'latin1');
  if (kind === 'tEXt') return pngChunk(kind, Buffer.concat([key, Buffer.alloc(bytes, 'A')]));
  if (kind === 'zTXt') return pngChunk(kind, Buffer.concat([key, Buffer.from([0]), deflatedText(bytes)]));
  // Compressed, method 0, no language tag, no translated keyword.
  return pngChunk(kind, Buffer.concat([key, Buffer.from([1, 0, 0, 0]), deflatedText(bytes)]));
}

/** An iCCP chunk holding the profile given, padded with zeros to `bytes` (its header says so). */
export function iccpChunk(profile: Buffer, bytes = profile.length): Buffer {
  const padded = Buffer.concat([profile, Buffer.alloc(Math.max(0, bytes - profile.length))]);
  padded.writeUInt32BE(padded.length, 0);
  return pngChunk(
    'iCCP',
    Buffer.concat([Buffer.from('ICC Profile\0', 'latin1'), Buffer.from([0]), deflateSync(padded, { level: 9 })]),
  );
}

/** An iCCP chunk whose zlib stream breaks off just before its end, after unpacking nearly `bytes` bytes. */
export function brokenIccpChunk(profile: Buffer, bytes: number): Buffer {
  const whole = iccpChunk(profile, bytes);
  // Data: the name, its NUL and the method (13 bytes), then the stream without its last 16 bytes.
  const data = whole.subarray(8, whole.length - 4);
  return pngChunk('iCCP', data.subarray(0, data.length - 16));
}

/**
 * The progressive JPEG with `count` more scans before its end, each over the first component's
 * AC coefficients and all of them end-of-band runs: a few dozen bytes a scan, and each makes the
 * decoder walk every block of that component again.
 */
export function withJpegScans(jpeg: Buffer, count: number, blocks: number): Buffer {
  const frame = jpeg.indexOf(Buffer.from([0xff, 0xc2]));
  if (frame < 0) throw new Error('withJpegScans needs a progressive JPEG (SOF2)');
  const component = jpeg[frame + 10] as number;
  // One Huffman code, "0", for EOB14: a run of 2^14 plus the 14 bits that follow, 32,767 blocks at most.
  const table = Buffer.from([0xff, 0xc4, 0, 20, 0x10, 1, ...new Array<number>(15).fill(0), 0xe0]);
  let bits = '';
  for (let run = 0; run < Math.ceil(blocks / 32767); run++) bits += `0${'1'.repeat(14)}`;
  bits = bits.padEnd(Math.ceil(bits.length / 8) * 8, '1');
  const data: number[] = [];
  for (let i = 0; i < bits.length; i += 8) {
    const byte = parseInt(bits.slice(i, i + 8), 2);
    data.push(byte);
    if (byte === 0xff) data.push(0);
  }
  const scan = Buffer.from([0xff, 0xda, 0, 8, 1, component, 0x00, 1, 63, 0, ...data]);
  const end = jpeg.length - 2;
  return Buffer.concat([jpeg.subarray(0, end), table, ...new Array<Buffer>(count).fill(scan), jpeg.subarray(end)]);
}
