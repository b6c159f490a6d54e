// The two logs of a running server, as Apache keeps them: one access-log line per exchange, and
// error-log lines for requests that end in an error, warnings, failed logins and start-up problems.
import type { AccessEntry } from './access-log.ts';
import { formatAccessLine } from './access-log.ts';
import type { AuthFailure, LogLevel } from './error-log.ts';
import { formatAuthFailure, formatErrorLine, formatMissingFile } from './error-log.ts';
import { LogFile } from './log-file.ts';

interface ErrorDetails {
  level?: LogLevel;
  /** 'ip:port' of the client whose request it was. */
  client?: string;
  referer?: string | undefined;
  /**
   * One of many alike (an outage fails every request the same way): the first is written, the
   * rest of an interval become one line that says how many there were.
   */
  collapse?: boolean;
}

interface Repeats {
  level: LogLevel;
  count: number;
  since: number;
}

// The script names of fail2ban's apache-noscript filter.
const scriptProbe = /(?:php(?:[45]|[.-]cgi)?|\.asp|\.exe|\.pl)$|\/cgi-bin\//i;

export class Logs {
  private readonly accessLog: LogFile | null;
  private readonly errorLog: LogFile;
  /** Collapsed lines by message, since their last line. */
  private readonly repeats = new Map<string, Repeats>();
  private summing: NodeJS.Timeout | null = null;

  private readonly collapseEveryMs: number;

  /**
   * A file path each, or '-' for stdout and stderr; without `access`, the error log alone (the
   * primary of a cluster). Collapsed lines are summed up every `collapseEveryMs` (10 s).
   */
  constructor(targets: { access?: string; error: string; collapseEveryMs?: number }) {
    this.accessLog = targets.access === undefined ? null : new LogFile(targets.access, process.stdout);
    this.errorLog = new LogFile(targets.error, process.stderr);
    this.collapseEveryMs = targets.collapseEveryMs ?? 10_000;
  }

  /** Writes to either log that failed since the start (LogFile.failedWrites). */
  failedWrites(): number {
    return (this.accessLog?.failedWrites ?? 0) + this.errorLog.failedWrites;
  }

  access(entry: AccessEntry): void {
    this.accessLog?.write(formatAccessLine(entry));
  }

  error(message: string, details: ErrorDetails = {}): void {
    const { level = 'error', client, referer, collapse } = details;
    if (collapse) {
      const repeats = this.repeats.get(message);
      if (repeats) {
        repeats.count++;
        return;
      }
      this.repeats.set(message, { level, count: 0, since: Date.now() });
      this.summing ??= setInterval(() => this.sumUp(), this.collapseEveryMs).unref();
    }
    this.errorLog.write(
      formatErrorLine({
        time: new Date(),
        level,
        pid: process.pid,
        message,
        ...(client ? { client } : {}),
        ...(referer ? { referer } : {}),
      }),
    );
  }

  /** One line per kind that came again since its last line; a kind that did not is forgotten. */
  private sumUp(): void {
    const now = Date.now();
    for (const [message, repeats] of this.repeats) {
      if (repeats.count === 0) {
        this.repeats.delete(message);
        continue;
      }
      const seconds = Math.max(1, Math.round((now - repeats.since) / 1000));
      this.errorLog.write(
        formatErrorLine({
          time: new Date(now),
          level: repeats.level,
          pid: process.pid,
          message: `${message} (repeated ${repeats.count.toLocaleString('en')} times in the last ${seconds} s)`,
        }),
      );
      repeats.count = 0;
      repeats.since = now;
    }
    if (this.repeats.size === 0 && this.summing) {
      clearInterval(this.summing);
      this.summing = null;
    }
  }

  /** A failed login in mod_auth_basic's words, for fail2ban's apache-auth filter. */
  authFailure(failure: Omit<AuthFailure, 'time' | 'pid'>): void {
    this.errorLog.write(formatAuthFailure({ ...failure, time: new Date(), pid: process.pid }));
  }

  /**
   * A 404 for a file: written when its name looks like a script (.php, .asp, .exe, .pl, cgi-bin),
   * which is what scanners probe for and what fail2ban's apache-noscript filter counts.
   */
  missingFile(file: string, client: string): void {
    if (scriptProbe.test(file))
      this.errorLog.write(formatMissingFile({ time: new Date(), pid: process.pid, client, file }));
  }

  /** SIGHUP: logrotate has moved the files. */
  reopen(): void {
    this.accessLog?.reopen();
    this.errorLog.reopen();
  }

  async close(): Promise<void> {
    this.sumUp();
    if (this.summing) clearInterval(this.summing);
    await Promise.all([this.accessLog?.close(), this.errorLog.close()]);
  }
}
