// The log destination: appends lines, survives logrotate's rename and a failing disk, and
// writes to stdout or stderr for '-'.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { afterEach, beforeEach, describe, test } from 'node:test';
import { LogFile } from '../../lib/log/index.ts';

let dir = '';
beforeEach(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'log-file-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

function numberedLines(prefix: string, count: number): string[] {
  return Array.from({ length: count }, (_, i) => `${prefix} ${i + 1}`);
}

/** Waits until the file has been opened (created); writes may still be pending. */
async function waitForFile(file: string): Promise<void> {
  while (!existsSync(file)) await new Promise((resolve) => setImmediate(resolve));
}

function readLines(file: string): string[] {
  return readFileSync(file, 'utf8').split('\n').slice(0, -1);
}

/** A stream that keeps what is written to it, or fails every write with the given code. */
function collectingStream(failWith?: string): Writable & { text: string } {
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      if (!failWith) {
        stream.text += chunk.toString();
        return done();
      }
      done(Object.assign(new Error(`write ${failWith}`), { code: failWith }));
    },
  }) as Writable & { text: string };
  stream.text = '';
  return stream;
}

/** Runs fn with process.stderr.write recorded instead of written; returns what it received. */
async function captureStderr(fn: () => Promise<void>): Promise<string[]> {
  const received: string[] = [];
  const write = process.stderr.write;
  process.stderr.write = ((chunk: string | Uint8Array) => {
    received.push(String(chunk));
    return true;
  }) as typeof process.stderr.write;
  try {
    await fn();
  } finally {
    process.stderr.write = write;
  }
  return received;
}

describe('LogFile', () => {
  test('appends each line and a newline after what the file already holds; close() resolves once they are written', async () => {
    const file = path.join(dir, 'access.log');
    writeFileSync(file, 'earlier line\n');
    const log = new LogFile(file, process.stdout);
    log.write('first');
    log.write('second');
    await log.close();
    assert.equal(readFileSync(file, 'utf8'), 'earlier line\nfirst\nsecond\n');
  });

  test('creates a missing directory', async () => {
    const file = path.join(dir, 'logs', 'nested', 'error.log');
    const log = new LogFile(file, process.stderr);
    assert.ok(existsSync(path.dirname(file)));
    log.write('line');
    await log.close();
    assert.equal(readFileSync(file, 'utf8'), 'line\n');
  });

  test('after logrotate renames the file, reopen() leaves the old lines in it and sends the new ones to a new file, none lost', async () => {
    const file = path.join(dir, 'access.log');
    const rotated = `${file}.1`;
    const log = new LogFile(file, process.stdout);
    const before = numberedLines('before', 500);
    const after = numberedLines('after', 500);
    for (const line of before) log.write(line);
    await waitForFile(file);
    renameSync(file, rotated);
    log.reopen();
    for (const line of after) log.write(line);
    await log.close();
    assert.deepEqual(readLines(rotated), before);
    assert.deepEqual(readLines(file), after);
  });

  test('keeps every line in order when reopen() is called again and again without a rename', async () => {
    const file = path.join(dir, 'access.log');
    const log = new LogFile(file, process.stdout);
    const lines = numberedLines('line', 2000);
    lines.forEach((line, i) => {
      log.write(line);
      if (i % 150 === 0) log.reopen();
    });
    await log.close();
    assert.deepEqual(readLines(file), lines);
  });

  test('writes to the given stream for - and leaves it open on close()', async () => {
    const stream = collectingStream();
    const log = new LogFile('-', stream);
    log.write('one');
    log.reopen();
    log.write('two');
    await log.close();
    assert.equal(stream.text, 'one\ntwo\n');
    assert.equal(stream.writableEnded, false);
    assert.equal(stream.listenerCount('error'), 0);
  });

  test('ignores lines written after close()', async () => {
    const file = path.join(dir, 'access.log');
    const log = new LogFile(file, process.stdout);
    log.write('kept');
    await log.close();
    log.write('dropped');
    log.reopen();
    await log.close();
    assert.equal(readFileSync(file, 'utf8'), 'kept\n');
  });

  test('reports a failing disk once on stderr and neither throws nor crashes', {
    skip: !existsSync('/dev/full') && 'needs /dev/full (Linux)',
  }, async () => {
    const reports = await captureStderr(async () => {
      const log = new LogFile('/dev/full', process.stdout);
      log.write('one');
      await new Promise((resolve) => setTimeout(resolve, 50));
      log.write('two');
      log.write('three');
      await log.close();
    });
    assert.equal(reports.length, 1, reports.join(''));
    assert.match(
      reports[0] ?? '',
      /^portfolio: cannot write the log \/dev\/full: ENOSPC: no space left on device, write; lines are dropped until it works again/,
    );
  });

  test('reports a failing stream for - once and keeps going', async () => {
    const stream = collectingStream('EPIPE');
    const reports = await captureStderr(async () => {
      const log = new LogFile('-', stream);
      log.write('one');
      await new Promise((resolve) => setImmediate(resolve));
      log.write('two');
      await log.close();
    });
    assert.deepEqual(reports, ['portfolio: cannot write the log -: write EPIPE; further lines may be lost\n']);
  });

  test('reports once a folder it cannot create, and keeps going', async () => {
    const blocker = path.join(dir, 'not-a-directory');
    writeFileSync(blocker, '');
    const reports = await captureStderr(async () => {
      const log = new LogFile(path.join(blocker, 'access.log'), process.stdout);
      log.write('line');
      await log.close();
    });
    assert.equal(reports.length, 1, reports.join(''));
    assert.match(
      reports[0] ?? '',
      /: ENOTDIR: not a directory, open '.*'; lines are dropped until it works again; check the space and permissions of /,
    );
  });
});
