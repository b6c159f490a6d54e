// Error-log lines in Apache 2.4's format, so fail2ban's stock apache filters and anyone used to
// reading Apache's error_log can read ours.
// https://httpd.apache.org/docs/2.4/logs.html#errorlog, https://httpd.apache.org/docs/2.4/mod/core.html#errorlogformat

import { encodeUtf8, escapeLogItem, monthNames, pad2 } from './access-log.ts';

export type LogLevel = 'emerg' | 'alert' | 'crit' | 'error' | 'warn' | 'notice' | 'info' | 'debug';

interface ErrorEntry {
  time: Date;
  /** Apache names the module that logs; ours is 'app' unless a line imitates a specific one. */
  module?: string;
  level: LogLevel;
  pid: number;
  /** 'ip:port' */
  client?: string;
  message: string;
  /** The request's Referer header, as Node delivers it. */
  referer?: string;
}

export interface AuthFailure {
  time: Date;
  pid: number;
  /** 'ip:port', the address fail2ban bans. */
  client: string;
  user: string;
  /** The path the login was posted to. */
  uri: string;
  reason: 'Password Mismatch' | 'user not found';
  referer?: string;
}

const dayNames = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];

/** `[time] [module:level] [pid N] [client ip:port] message, referer: …`, without the newline. */
export function formatErrorLine(entry: ErrorEntry): string {
  const client = entry.client ? ` [client ${entry.client}]` : '';
  const referer = entry.referer ? `, referer: ${escapeLogItem(entry.referer, { escapeQuotes: false })}` : '';
  return (
    `[${formatErrorTime(entry.time)}] [${entry.module ?? 'app'}:${entry.level}] [pid ${entry.pid}]${client} ` +
    `${escapeMessage(entry.message)}${referer}`
  );
}

/**
 * A failed login worded as mod_auth_basic words it (AH01617, AH01618), so fail2ban's stock
 * apache-auth filter counts it without a custom filter. The module is auth_basic because
 * those message numbers are its own.
 */
export function formatAuthFailure(failure: AuthFailure): string {
  const message =
    failure.reason === 'Password Mismatch'
      ? `AH01617: user ${failure.user}: authentication failure for "${failure.uri}": Password Mismatch`
      : `AH01618: user ${failure.user} not found: ${failure.uri}`;
  return formatErrorLine({
    time: failure.time,
    module: 'auth_basic',
    level: 'error',
    pid: failure.pid,
    client: failure.client,
    message,
    ...(failure.referer ? { referer: failure.referer } : {}),
  });
}

/**
 * A request for a file that is not there, in the words of Apache's core (AH00128), so that
 * fail2ban's stock apache-noscript filter sees scanners probing for .php and other scripts.
 */
export function formatMissingFile(missing: { time: Date; pid: number; client: string; file: string }): string {
  return formatErrorLine({
    time: missing.time,
    module: 'core',
    level: 'info',
    pid: missing.pid,
    client: missing.client,
    message: `AH00128: File does not exist: ${missing.file}`,
  });
}

/** `Sat Nov 21 10:15:42.123456 2026`: ctime with microseconds, local time, as ErrorLogFormat's %t. */
function formatErrorTime(time: Date): string {
  const micros = String(time.getMilliseconds() * 1000).padStart(6, '0');
  return (
    `${dayNames[time.getDay()]} ${monthNames[time.getMonth()]} ${pad2(time.getDate())} ` +
    `${pad2(time.getHours())}:${pad2(time.getMinutes())}:${pad2(time.getSeconds())}.${micros} ${time.getFullYear()}`
  );
}

// Apache escapes the whole message with ap_escape_errorlog_item (unless built with
// AP_UNSAFE_ERROR_LOG_UNESCAPED), so one entry is always one line: a newline becomes `\n`.
function escapeMessage(message: string): string {
  return escapeLogItem(encodeUtf8(message), { escapeQuotes: false });
}
