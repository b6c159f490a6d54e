// The two logs of a running server, as Apache keeps them: one access-log line per exchange, and
// error-log lines for requests that end in an error, warnings, failed logins and start-up problems.
import type { AccessEntry } from './access-log.ts';
import { formatAccessLine } from './access-log.ts';
import type { AuthFailure, LogLevel } from './error-log.ts';
import { formatAuthFailure, formatErrorLine } from './error-log.ts';
import { LogFile } from './log-file.ts';

interface ErrorDetails {
  level?: LogLevel;
  /** 'ip:port' of the client whose request it was. */
  client?: string;
  referer?: string | undefined;
}

export class Logs {
  private readonly accessLog: LogFile | null;
  private readonly errorLog: LogFile;

  /** A file path each, or '-' for stdout and stderr; without `access`, the error log alone (the primary of a cluster). */
  constructor(targets: { access?: string; error: string }) {
    this.accessLog = targets.access === undefined ? null : new LogFile(targets.access, process.stdout);
    this.errorLog = new LogFile(targets.error, process.stderr);
  }

  access(entry: AccessEntry): void {
    this.accessLog?.write(formatAccessLine(entry));
  }

  error(message: string, details: ErrorDetails = {}): void {
    const { level = 'error', client, referer } = details;
    this.errorLog.write(formatErrorLine({
      time: new Date(), level, pid: process.pid, message, ...(client ? { client } : {}), ...(referer ? { referer } : {}),
    }));
  }

  /** A failed login in mod_auth_basic's words, for fail2ban's apache-auth filter. */
  authFailure(failure: Omit<AuthFailure, 'time' | 'pid'>): void {
    this.errorLog.write(formatAuthFailure({ ...failure, time: new Date(), pid: process.pid }));
  }

  /** SIGHUP: logrotate has moved the files. */
  reopen(): void {
    this.accessLog?.reopen();
    this.errorLog.reopen();
  }

  async close(): Promise<void> {
    await Promise.all([this.accessLog?.close(), this.errorLog.close()]);
  }
}
