// The embedded database's folder belongs to one process and to the server's user alone: a lock
// file names the process that holds it, and the folder is 0700 with its files 0600.
import { chmodSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';

const lockName = 'portfolio.lock';
// Folders this process holds: a second open in the same process is refused as well.
const held = new Set<string>();

/**
 * Takes the folder for this process, or refuses with a message that names the process holding
 * it. A lock left by a process that is gone (a crash) is taken over; the process is told apart
 * from a later one with the same id by its start time.
 */
export function lockDataDir(dir: string): () => void {
  const folder = path.resolve(dir);
  if (held.has(folder)) throw new Error(`The embedded database in ${folder} is already open in this process.`);
  mkdirSync(folder, { recursive: true, mode: 0o700 });
  chmodSync(folder, 0o700);
  const file = path.join(folder, lockName);
  const me = `${process.pid} ${startTimeOf(process.pid) ?? ''}`.trim();
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      writeFileSync(file, `${me}\n`, { flag: 'wx', mode: 0o600 });
      held.add(folder);
      return () => {
        held.delete(folder);
        rmSync(file, { force: true });
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const holder = readHolder(file);
    if (holder && isRunning(holder)) {
      throw new Error(
        `The embedded database in ${folder} is in use by process ${holder.pid}; stop that server (or tool) first, or set DATA_DIR to another folder. PGlite serves one process only.`,
      );
    }
    // Left behind by a process that is gone: take it over (another taker loses the race above).
    rmSync(file, { force: true });
  }
  throw new Error(`Could not take the lock ${file}; another process keeps taking it.`);
}

/** Makes the folder the owner's alone: 0700 for folders, 0600 for files (PGlite writes files 0666). */
export function restrictDataDir(dir: string): void {
  const walk = (folder: string) => {
    chmodSync(folder, 0o700);
    for (const entry of readdirSync(folder, { withFileTypes: true })) {
      const child = path.join(folder, entry.name);
      if (entry.isDirectory()) walk(child);
      else if (entry.isFile()) chmodSync(child, 0o600);
    }
  };
  walk(path.resolve(dir));
}

interface Holder {
  pid: number;
  started: string | null;
}

function readHolder(file: string): Holder | null {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return null;
  }
  const [pid, started] = text.trim().split(' ');
  return Number.isInteger(Number(pid)) && Number(pid) > 0 ? { pid: Number(pid), started: started ?? null } : null;
}

function isRunning(holder: Holder): boolean {
  if (holder.pid === process.pid) return false; // not in `held`: a lock of an earlier life with our id
  try {
    process.kill(holder.pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  // Running: the same process only when its start time is the one written (where /proc tells).
  const started = startTimeOf(holder.pid);
  return holder.started === null || started === null || started === holder.started;
}

/** The start time of a process in clock ticks since boot (/proc/<pid>/stat, field 22), where Linux tells it. */
function startTimeOf(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null;
  } catch {
    return null;
  }
}
