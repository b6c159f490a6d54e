// `npm run reload`: tells the running server to replace its worker processes one after another
// (SIGUSR2 to the pid in PID_FILE, by default logs/portfolio.pid), as `apachectl graceful` does.
// Requests in flight finish on the old workers; none is refused (docs/operations.md, Processes and signals).
import { readFileSync } from 'node:fs';
import { readConfig } from '../lib/config.ts';

function main(): number {
  const { pidFile } = readConfig();
  if (!pidFile) {
    console.error(
      'portfolio reload: there is no pid file (PID_FILE is empty, or LOG_DIR=- without PID_FILE); send SIGUSR2 to the primary yourself.',
    );
    return 2;
  }
  let pid: number;
  try {
    pid = Number(readFileSync(pidFile, 'utf8').trim());
  } catch {
    console.error(
      `portfolio reload: ${pidFile} does not exist; is the server running, with this PID_FILE and LOG_DIR?`,
    );
    return 1;
  }
  if (!Number.isInteger(pid) || pid <= 1) {
    console.error(`portfolio reload: ${pidFile} does not hold a process id.`);
    return 1;
  }
  // A pid file left by a server that was killed may name another program by now, which
  // SIGUSR2 would end: only a running portfolio server is signalled.
  let command = '';
  try {
    command = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ');
  } catch {
    command = '';
  }
  if (command !== '' && !/\bserver\.(js|ts)\b/.test(command)) {
    console.error(
      `portfolio reload: process ${pid} from ${pidFile} is not the server (${command.slice(0, 100)}); a stale pid file, left alone.`,
    );
    return 1;
  }
  try {
    process.kill(pid, 'SIGUSR2');
  } catch (err) {
    console.error(
      `portfolio reload: process ${pid} from ${pidFile}: ${(err as NodeJS.ErrnoException).code === 'ESRCH' ? 'not running (a stale pid file)' : (err as Error).message}`,
    );
    return 1;
  }
  console.log(`portfolio reload: asked process ${pid} to replace its workers; the error log says when they serve.`);
  return 0;
}

process.exitCode = main();
