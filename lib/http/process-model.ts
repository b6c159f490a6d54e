// What the primary (primary.ts) and the serving processes (cluster.ts) share: the messages
// between them, the times of a graceful stop, the pid file and how an address is written.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type net from 'node:net';
import path from 'node:path';
import type { Config } from '../config.ts';

/** How long requests in flight may take to finish after SIGTERM before their connections are cut. */
export const graceMs = 10_000;
/**
 * How long the port stays open after SIGTERM: connections that were on their way when the signal
 * came (in the kernel's queue, which closing the port resets) are taken and answered.
 */
export const drainMs = 100;
/** A worker that does not answer a collect in this time is left out (busy, or stopping). */
export const collectTimeoutMs = 2000;

/** The messages between the primary and a worker. */
export type Message =
  | { portfolio: 'ready' }
  | { portfolio: 'connection' }
  | { portfolio: 'took' }
  | { portfolio: 'stop' }
  // A worker serves from 'ready' on, and says 'complete' just after (it keeps no index); the
  // search process says 'complete' once it has read the index.
  | { portfolio: 'complete' }
  // The primary tells a worker that serves the port's address, once it is open.
  | { portfolio: 'address'; address: string }
  // A worker asks the primary a question (the metrics of all workers); the primary answers.
  | { portfolio: 'ask'; id: number; question: string }
  | { portfolio: 'answer'; id: number; value?: unknown; error?: string }
  // The primary collects something from each ready worker (its metrics) to answer a question;
  // a worker that stops gives it one last time.
  | { portfolio: 'collect'; id: number }
  | { portfolio: 'collected'; id: number; value?: unknown }
  | { portfolio: 'final'; value?: unknown };

/** The primary's answer to a question; gather() brings what each worker's collector returns. */
export type Answer = (gather: () => Promise<unknown[]>) => Promise<unknown>;

/**
 * Writes this process's pid to the file, removed again at exit if it still names this process. A
 * file PID_FILE named that cannot be written stops the start; the default one (in LOG_DIR, which
 * may be read-only) is left out with a warning: only `npm run reload` needs it.
 */
export function writePidFile(config: Pick<Config, 'pidFile' | 'pidFileRequired'>): void {
  const file = config.pidFile;
  if (!file) return;
  try {
    mkdirSync(path.dirname(file), { recursive: true, mode: 0o750 });
    writeFileSync(file, `${process.pid}\n`, { mode: 0o644 });
  } catch (err) {
    const why = `the pid file ${file} cannot be written (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`;
    if (config.pidFileRequired)
      throw new Error(`${why}: set PID_FILE to a file the server may write, or PID_FILE= for none`);
    console.error(
      `portfolio: ${why}; running without one, so npm run reload cannot find the server. Set PID_FILE to a writable file, or PID_FILE= to say none.`,
    );
    return;
  }
  process.once('exit', () => {
    try {
      if (readFileSync(file, 'utf8').trim() === String(process.pid)) rmSync(file);
    } catch {
      // gone already
    }
  });
}

export function addressOf(server: net.Server): string {
  const address = server.address();
  if (typeof address !== 'object' || !address) return String(address);
  return `http://${address.address.includes(':') ? `[${address.address}]` : address.address}:${address.port}`;
}
