// A PostgreSQL server of the test's own (initdb and pg_ctl into a temporary folder, on a free
// port of 127.0.0.1), so a test can stop, crash, freeze and restart it under load.
// As root, the server runs as the postgres user, as PostgreSQL refuses to run as root.
import { execFile, execFileSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);

export interface PostgresCluster {
  /** postgres://postgres@127.0.0.1:<port>/postgres */
  url: string;
  port: number;
  /** The folder the cluster and its log live in. */
  dir: string;
  /** Resolves once the server accepts connections. */
  start: () => Promise<void>;
  /** `fast` ends the sessions cleanly; `immediate` is a crash: no checkpoint, sessions cut. */
  stop: (mode: 'fast' | 'immediate') => Promise<void>;
  /** SIGSTOP or SIGCONT to the postmaster and every backend: a server that hangs. */
  freeze: (frozen: boolean) => void;
  /** A standby in recovery becomes a primary (pg_ctl promote; waits until it accepts writes). */
  promote: () => Promise<void>;
  remove: () => Promise<void>;
}

/** The folder of initdb and pg_ctl: PG_BIN, else the newest /usr/lib/postgresql/<n>/bin. */
export function postgresBin(): string | null {
  if (process.env.PG_BIN) return process.env.PG_BIN;
  const base = '/usr/lib/postgresql';
  if (!existsSync(base)) return null;
  const versions = readdirSync(base)
    .filter((v) => existsSync(path.join(base, v, 'bin', 'initdb')))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] ? path.join(base, versions[0], 'bin') : null;
}

/**
 * A new cluster of its own, or with standbyOf a streaming standby of that one (pg_basebackup -R:
 * it follows the primary's WAL and answers reads in hot standby).
 */
export async function createCluster(
  options: { standbyOf?: PostgresCluster; settings?: string } = {},
): Promise<PostgresCluster> {
  const bin = postgresBin();
  if (!bin)
    throw new Error(
      'initdb was not found; install PostgreSQL (apt-get install postgresql) or set PG_BIN to its bin folder.',
    );
  const dir = mkdtempSync(path.join(os.tmpdir(), 'portfolio-pg-'));
  const data = path.join(dir, 'data');
  const owner = ownerOf();
  if (owner) chownSync(dir, owner.uid, owner.gid);
  // Asynchronous, so a server in the same process keeps answering while PostgreSQL starts and stops.
  const run = async (program: string, args: string[]) => {
    try {
      await execFileAsync(path.join(bin, program), args, { encoding: 'utf8', ...(owner ?? {}), timeout: 60_000 });
    } catch (err) {
      const { stdout = '', stderr = '' } = err as { stdout?: string; stderr?: string };
      throw new Error(`${program} ${args.join(' ')} failed:\n${stdout}${stderr}`);
    }
  };
  const primary = options.standbyOf;
  if (primary) {
    await run('pg_basebackup', [
      '-h',
      '127.0.0.1',
      '-p',
      String(primary.port),
      '-U',
      'postgres',
      '-D',
      data,
      '-R',
      '-X',
      'stream',
      '--no-sync',
    ]);
  } else {
    await run('initdb', ['-D', data, '-U', 'postgres', '-A', 'trust', '--no-sync', '-E', 'UTF8', '--locale=C']);
  }
  const port = await freePort();
  const settings = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c max_connections=60 -c shared_buffers=32MB ${options.settings ?? ''}`;
  const postmasterPid = () => Number(readFileSync(path.join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
  const cluster: PostgresCluster = {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    dir,
    start: () =>
      run('pg_ctl', ['-D', data, '-o', settings, '-l', path.join(dir, 'server.log'), '-w', '-t', '30', 'start']),
    stop: (mode) => run('pg_ctl', ['-D', data, '-m', mode, '-w', '-t', '30', 'stop']),
    freeze: (frozen) => {
      const pid = postmasterPid();
      for (const each of [pid, ...childrenOf(pid)]) {
        try {
          process.kill(each, frozen ? 'SIGSTOP' : 'SIGCONT');
        } catch (err) {
          // A backend that ended since the list was read (a thawed postmaster reaps at once).
          if ((err as { code?: string }).code !== 'ESRCH') throw err;
        }
      }
    },
    promote: () => run('pg_ctl', ['-D', data, '-w', '-t', '30', 'promote']),
    remove: async () => {
      try {
        cluster.freeze(false);
        await run('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']);
      } catch {
        // already stopped
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
  await cluster.start();
  return cluster;
}

export function ownerOf(): { uid: number; gid: number } | null {
  if (process.getuid?.() !== 0) return null;
  const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
  const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
  return { uid, gid };
}

function childrenOf(parent: number): number[] {
  const children: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // The command may hold spaces and parentheses; the fields after its closing one are fixed.
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === parent) children.push(Number(entry));
    } catch {
      // the process ended meanwhile
    }
  }
  return children;
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as net.AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}
