// Where log lines go: a file opened for appending, or stdout/stderr for '-'. Writing never
// blocks the event loop and never throws; reopen() on SIGHUP lets logrotate move the file away,
// as Apache does on a graceful restart (https://httpd.apache.org/docs/2.4/logs.html#rotation).

import { createWriteStream, mkdirSync } from 'node:fs';
import path from 'node:path';
import { finished } from 'node:stream';

// After a failed write (disk full, permissions) the next write tries the file again, at most this often.
const retryAfterMs = 5000;

export class LogFile {
  readonly #target: string;
  #out: NodeJS.WritableStream;
  /** Lines written while reopen() waits for the old file to be closed; null otherwise. */
  #queue: string[] | null = null;
  #reopened: Promise<void> = Promise.resolve();
  /** When the current file last failed; 0 while it works. */
  #failedAt = 0;
  /** Error codes already reported: each is told once, not once per line. */
  readonly #reported = new Set<string>();
  #closed = false;
  /** Writes that failed, or were dropped while the file failed, since the start (the metrics). */
  #failedWrites = 0;
  /**
   * Lines of this turn of the event loop, written together at its end: under load one write
   * carries the lines of many requests, where a write per line cost each request a stream write
   * and a file-system callback.
   */
  #pending = '';
  #flushTimer: NodeJS.Immediate | null = null;
  readonly #onStreamError = (err: Error) => {
    this.#failedWrites++;
    this.#report(err);
  };
  readonly #flushNow = () => this.#flush();

  constructor(target: string, stream: NodeJS.WritableStream) {
    this.#target = target;
    if (target === '-') {
      // Without a listener an EPIPE on stdout would crash the process.
      stream.on('error', this.#onStreamError);
      this.#out = stream;
    } else {
      this.#out = this.#openFile();
    }
  }

  /** Appends the line and a newline; buffered, so it returns at once. */
  write(line: string): void {
    if (this.#closed) return;
    if (this.#queue) {
      this.#queue.push(line);
      return;
    }
    this.#pending += `${line}\n`;
    this.#flushTimer ??= setImmediate(this.#flushNow);
  }

  /** Hands the pending lines to the file or stream. */
  #flush(): void {
    if (this.#flushTimer) clearImmediate(this.#flushTimer);
    this.#flushTimer = null;
    const text = this.#pending;
    this.#pending = '';
    if (text === '') return;
    if (this.#failedAt !== 0) {
      if (Date.now() - this.#failedAt < retryAfterMs) {
        this.#failedWrites++;
        return;
      }
      this.#out = this.#openFile();
    }
    this.#out.write(text);
  }

  /**
   * Closes the file once the lines already written have reached it, then opens the path again:
   * after a rename the old file keeps the old lines and a new file gets the new ones. Lines
   * written meanwhile wait in order, so the two files never interleave.
   */
  reopen(): void {
    if (this.#target === '-' || this.#queue || this.#closed) return;
    this.#flush();
    const old = this.#out;
    this.#queue = [];
    this.#reopened = new Promise((resolve) => {
      finished(old, () => {
        this.#out = this.#openFile();
        const waiting = this.#queue ?? [];
        this.#queue = null;
        if (waiting.length > 0) this.#out.write(`${waiting.join('\n')}\n`);
        resolve();
      });
      old.end();
    });
  }

  /** Writes that failed, or were dropped while the file failed; each carries the lines of one turn of the event loop. */
  get failedWrites(): number {
    return this.#failedWrites;
  }

  /** Resolves when every line written so far has been handed to the file or stream. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#flush();
    this.#closed = true;
    await this.#reopened;
    const out = this.#out;
    if (this.#target === '-') {
      await new Promise<void>((resolve) => out.write('', () => resolve()));
      out.removeListener('error', this.#onStreamError);
      return;
    }
    await new Promise<void>((resolve) => {
      finished(out, () => resolve());
      out.end();
    });
  }

  #openFile(): NodeJS.WritableStream {
    try {
      mkdirSync(path.dirname(this.#target), { recursive: true, mode: 0o750 });
    } catch {
      // Opening the file fails next and is reported, with the folder to check.
    }
    // Readable by the owner and the group (adm, for logrotate and log readers), never by everyone.
    const out = createWriteStream(this.#target, { flags: 'a', mode: 0o640 });
    out.on('error', (err) => {
      this.#failedWrites++;
      if (out === this.#out) this.#failedAt = Date.now();
      this.#report(err);
    });
    this.#failedAt = 0;
    return out;
  }

  #report(err: Error): void {
    const code = (err as NodeJS.ErrnoException).code ?? err.name;
    if (this.#reported.has(code)) return;
    this.#reported.add(code);
    const advice =
      this.#target === '-'
        ? 'further lines may be lost'
        : `lines are dropped until it works again; check the space and permissions of ${path.dirname(this.#target)}, or set LOG_DIR=- to log to stdout and stderr`;
    try {
      process.stderr.write(`portfolio: cannot write the log ${this.#target}: ${err.message}; ${advice}\n`);
    } catch {
      // stderr itself is gone: nothing left to tell
    }
  }
}
