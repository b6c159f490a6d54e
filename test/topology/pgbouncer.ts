// PgBouncer (Debian's package) in transaction pooling in front of a test's PostgreSQL, on a free
// port of 127.0.0.1, with a config written here: the settings docs/operations.md recommends.
// As root it runs as the postgres user, as PgBouncer refuses to run as root.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chownSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort, ownerOf } from '../robustness/postgres-cluster.ts';
import { canConnect } from './front.ts';

export interface Bouncer {
  /** postgres://postgres@127.0.0.1:<port>/postgres */
  url: string;
  port: number;
  log: () => string;
  stop: () => Promise<void>;
}

/** Whether Debian's pgbouncer is installed. */
export function hasPgbouncer(): boolean {
  try {
    execFileSync('pgbouncer', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** PgBouncer in transaction mode for every database on 127.0.0.1:serverPort. */
export async function startPgbouncer(serverPort: number, options: { poolSize?: number } = {}): Promise<Bouncer> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'portfolio-pgbouncer-'));
  const owner = ownerOf();
  if (owner) chownSync(dir, owner.uid, owner.gid);
  const port = await freePort();
  const ini = path.join(dir, 'pgbouncer.ini');
  const logFile = path.join(dir, 'pgbouncer.log');
  writeFileSync(path.join(dir, 'users.txt'), '"postgres" ""\n');
  writeFileSync(
    ini,
    `[databases]
* = host=127.0.0.1 port=${serverPort}

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = ${port}
unix_socket_dir =
auth_type = trust
auth_file = ${path.join(dir, 'users.txt')}
pool_mode = transaction
max_client_conn = 500
default_pool_size = ${options.poolSize ?? 20}
server_login_retry = 1
server_connect_timeout = 2
query_wait_timeout = 10
logfile = ${logFile}
pidfile = ${path.join(dir, 'pgbouncer.pid')}
`,
  );
  const args = owner ? ['-u', 'postgres', ini] : [ini];
  const child: ChildProcess = spawn('pgbouncer', args, { stdio: 'ignore' });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await waitForPort(port, 10_000);
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    log: () => {
      try {
        return readFileSync(logFile, 'utf8');
      } catch {
        return '';
      }
    },
    stop: async () => {
      child.kill('SIGINT');
      await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 5000))]);
      child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function waitForPort(port: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline && !(await canConnect(port))) await new Promise((resolve) => setTimeout(resolve, 50));
  if (!(await canConnect(port)))
    throw new Error(`pgbouncer did not listen on 127.0.0.1:${port} within ${timeoutMs} ms`);
}
