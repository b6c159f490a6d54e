// The word index written to a file beside the data (docs/operations.md, The search index), so
// that a restart takes it from there and reads only the changes since, as their notes name them,
// instead of every row from the database. The file is a header (which database, at which snapshot
// of its transactions) and the index's parts as frames (a length, then its bytes), written in the
// order they are read, then a SHA-256 of them all: a file that was changed or cut short is never
// used (a bitmap's bytes are trusted by the native code that reads it). A new file takes the old
// one's name only once it is complete.
import { createHash, type Hash } from 'node:crypto';
import { closeSync, fstatSync, openSync, readdirSync, readSync, rmSync } from 'node:fs';
import { mkdir, open, rename, rm } from 'node:fs/promises';
import os from 'node:os';
import { basename, dirname, join } from 'node:path';
import v8 from 'node:v8';
import { IdSet } from './id-set.ts';
import { nextTurn } from './turns.ts';

/** The file's first bytes, with the layout's number: a file of another layout is not read. */
const magic = Buffer.from('portfolio search index 2\n');
/** Bytes gathered before they are written, and read at once. */
const chunkBytes = 1 << 20;
/** A part at least this large is written on its own, without a copy. */
const largeBytes = 1 << 16;

/** What a snapshot belongs to: the database it was read from, and its state then (sync.ts). */
export interface SnapshotHeader {
  /** The cluster's system identifier and the database's name: another database's file is not read. */
  database: string;
  timeline: string;
  /** The transactions the index had seen (pg_current_snapshot() as text). */
  snapshot: string;
  version: string;
  /** The byte order of the numbers in the frames. */
  endianness: string;
}

/** Frames into a file, a megabyte at a time, with a turn of the event loop after each. */
export class SnapshotWriter {
  private chunks: Buffer[] = [];
  private gathered = 0;
  private written = 0;
  private readonly hash = createHash('sha256');

  private constructor(private readonly file: Awaited<ReturnType<typeof open>>) {}

  static async create(path: string): Promise<SnapshotWriter> {
    return new SnapshotWriter(await open(path, 'w', 0o600));
  }

  /** Bytes written so far. */
  get bytes(): number {
    return this.written + this.gathered;
  }

  async frame(bytes: ArrayBufferView): Promise<void> {
    const length = Buffer.alloc(4);
    length.writeUInt32LE(bytes.byteLength);
    const view = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    this.hash.update(length).update(view);
    this.chunks.push(length);
    this.gathered += 4;
    // A large part (a page of a column, a text buffer) is written as it is, the small ones gathered.
    if (view.length >= largeBytes) {
      await this.flush();
      await this.writeAll(view);
      this.written += view.length;
      return;
    }
    this.chunks.push(view);
    this.gathered += view.length;
    if (this.gathered >= chunkBytes) await this.flush();
  }

  /** A value v8 can serialize (strings, numbers, arrays, maps of them). */
  value(value: unknown): Promise<void> {
    return this.frame(v8.serialize(value));
  }

  async set(set: IdSet): Promise<void> {
    await this.frame(set.serialize('portable'));
  }

  /** Ends the file with the hash of every frame before it. */
  async close(): Promise<void> {
    const digest = this.hash.digest();
    const length = Buffer.alloc(4);
    length.writeUInt32LE(digest.length);
    this.chunks.push(length, digest);
    this.gathered += 4 + digest.length;
    await this.flush();
    await this.file.sync();
    await this.file.close();
  }

  async abandon(): Promise<void> {
    await this.file.close().catch(() => undefined);
  }

  private async flush(): Promise<void> {
    if (this.gathered === 0) return;
    const chunk = Buffer.concat(this.chunks, this.gathered);
    this.chunks = [];
    this.written += this.gathered;
    this.gathered = 0;
    await this.writeAll(chunk);
    await nextTurn();
  }

  private async writeAll(bytes: Buffer): Promise<void> {
    for (let at = 0; at < bytes.length; ) at += (await this.file.write(bytes, at, bytes.length - at)).bytesWritten;
  }
}

/** A file's frames in order, read a megabyte at a time; a frame cut short is an error. */
export class SnapshotReader {
  private window = Buffer.alloc(0);
  private at = 0;
  /** The file's bytes not yet read into the window. */
  private left: number;
  private closed = false;
  /** Of every byte taken, to be compared with the file's last frame. */
  private readonly hash: Hash = createHash('sha256');

  private constructor(private readonly fd: number) {
    this.left = fstatSync(fd).size;
  }

  static open(path: string): SnapshotReader {
    return new SnapshotReader(openSync(path, 'r'));
  }

  /** Whether the next frame is these bytes. */
  is(bytes: Buffer): boolean {
    return this.take(4).readUInt32LE(0) === bytes.length && this.take(bytes.length).equals(bytes);
  }

  /** The next frame's bytes, in a buffer of their own. */
  frame(): Buffer {
    return Buffer.from(this.take(this.take(4).readUInt32LE(0)));
  }

  /**
   * The next frame's bytes, which must be `expected` of them, at the start of a buffer of room
   * more bytes (a large one is read straight into it, not through the window).
   */
  frameWithRoom(expected: number, room: number): Buffer {
    const length = this.take(4).readUInt32LE(0);
    if (length !== expected) throw new Error('a part has the wrong size');
    this.ensure(length);
    const buffer = Buffer.alloc(length + room);
    const held = Math.min(length, this.window.length - this.at);
    this.window.copy(buffer, 0, this.at, this.at + held);
    this.at += held;
    for (let filled = held; filled < length; ) {
      const read = readSync(this.fd, buffer, filled, length - filled, null);
      if (read === 0) throw new Error('the file ends in the middle of a part');
      filled += read;
      this.left -= read;
    }
    this.hash.update(buffer.subarray(0, length));
    return buffer;
  }

  /** A page of numbers (columns.ts) of the length given. */
  numbers(length: number): Int32Array {
    const bytes = this.take(this.take(4).readUInt32LE(0));
    if (bytes.length !== length * 4) throw new Error('a page of numbers has the wrong size');
    const numbers = new Int32Array(length);
    new Uint8Array(numbers.buffer).set(bytes);
    return numbers;
  }

  value<T>(): T {
    return v8.deserialize(this.take(this.take(4).readUInt32LE(0))) as T;
  }

  set(): IdSet {
    return IdSet.deserialize(this.take(this.take(4).readUInt32LE(0)), 'portable');
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    closeSync(this.fd);
  }

  /** Whether the file's last frame is the hash of everything before it, and nothing follows. */
  verified(): boolean {
    const digest = this.hash.digest();
    const length = this.take(4, false).readUInt32LE(0);
    return (
      length === digest.length &&
      this.take(length, false).equals(digest) &&
      this.window.length - this.at + this.left === 0
    );
  }

  /** The next n bytes, valid until the next call; hashed unless it is the hash. */
  private take(n: number, hashed = true): Buffer {
    if (this.at + n > this.window.length) this.refill(n);
    const bytes = this.window.subarray(this.at, this.at + n);
    this.at += n;
    if (hashed) this.hash.update(bytes);
    return bytes;
  }

  /** A length read from the file is checked against what the file has left before it is allocated. */
  private ensure(n: number): void {
    if (n > this.window.length - this.at + this.left) throw new Error('the file ends in the middle of a part');
  }

  private refill(n: number): void {
    this.ensure(n);
    const held = this.window.length - this.at;
    const window = Buffer.allocUnsafe(Math.min(held + this.left, Math.max(chunkBytes, n)));
    this.window.copy(window, 0, this.at);
    for (let filled = held; filled < window.length; ) {
      const read = readSync(this.fd, window, filled, window.length - filled, null);
      if (read === 0) throw new Error('the file ends in the middle of a part');
      filled += read;
      this.left -= read;
    }
    this.window = window;
    this.at = 0;
  }
}

/** The parts of the index that write and read themselves (word-index.ts), with turns of the event loop in between. */
export interface Saved {
  save(writer: SnapshotWriter): Promise<void>;
  restore(reader: SnapshotReader): Promise<void>;
}

/**
 * Writes the index to path: to a file of its own first, which then takes path's name, so that a
 * reader sees the whole file before or the whole file after. Files of its own that writers which
 * are gone left behind (a process killed while it wrote) are removed first. Returns the bytes.
 */
export async function writeSnapshot(path: string, header: SnapshotHeader, index: Saved): Promise<number> {
  const own = `${path}.${process.pid}.new`;
  await mkdir(dirname(path), { recursive: true });
  removeLeftOver(path);
  const writer = await SnapshotWriter.create(own);
  try {
    await writer.frame(magic);
    await writer.value(header);
    await index.save(writer);
    await writer.frame(magic);
    await writer.close();
    await rename(own, path);
    return writer.bytes;
  } catch (err) {
    await writer.abandon();
    await rm(own, { force: true });
    throw err;
  }
}

/** Removes path.<pid>.new files of processes that no longer run. */
function removeLeftOver(path: string): void {
  const pattern = new RegExp(`^${basename(path).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\.(\\d+)\\.new$`);
  for (const name of readdirSync(dirname(path))) {
    const pid = Number(pattern.exec(name)?.[1] ?? 0);
    if (pid > 0 && pid !== process.pid && !running(pid)) rmSync(join(dirname(path), name), { force: true });
  }
}

function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** A snapshot file opened: its header read, its index not yet. */
export interface OpenSnapshot {
  header: SnapshotHeader;
  /** Reads the index into `into` and checks the file's hash; an error when it does not match. */
  restore(into: Saved): Promise<void>;
  close(): void;
}

/**
 * Opens the snapshot at path and reads its header; a file of another layout or byte order is an
 * error, as is one that is not there (ENOENT). The index is read by `restore`, once the header has
 * been found fit: a file refused costs no index read in vain.
 */
export function openSnapshot(path: string): OpenSnapshot {
  const reader = SnapshotReader.open(path);
  try {
    if (!reader.is(magic)) throw new Error('it is not a snapshot of this layout');
    const header = reader.value<SnapshotHeader>();
    const fields = ['database', 'timeline', 'snapshot', 'version', 'endianness'] as const;
    if (
      typeof header !== 'object' ||
      header === null ||
      !fields.every((f) => typeof header[f] === 'string') ||
      !/^\d+$/.test(header.version)
    ) {
      throw new Error("its header is not a snapshot's");
    }
    if (header.endianness !== os.endianness()) throw new Error('it was written on a machine of another byte order');
    return {
      header,
      restore: async (into) => {
        await into.restore(reader);
        if (!reader.is(magic)) throw new Error('its end is not where its parts end');
        if (!reader.verified()) throw new Error('its bytes are not the ones written (their SHA-256 differs)');
      },
      close: () => reader.close(),
    };
  } catch (err) {
    reader.close();
    throw err;
  }
}
