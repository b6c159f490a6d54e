// One access-log line per request in Apache's combined format, so GoAccess, AWStats and the
// like read our logs as they read Apache's.
// https://httpd.apache.org/docs/2.4/logs.html#combined, https://httpd.apache.org/docs/2.4/mod/mod_log_config.html

export interface AccessEntry {
  remoteAddr: string;
  /** The authenticated user (`%u`), or null. */
  user: string | null;
  time: Date;
  method: string;
  /** The request target as received (`req.url`). */
  target: string;
  /** '1.1', as in `req.httpVersion`. */
  httpVersion: string;
  /** The request line as received, for a request the parser refused; replaces method, target and version. */
  requestLine?: string;
  status: number;
  /** Body bytes sent; 0 is written as `-`, like `%b`. */
  bytes: number;
  referer: string | undefined;
  userAgent: string | undefined;
}

export const monthNames = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** `%h %l %u %t "%r" %>s %b "%{Referer}i" "%{User-Agent}i"`, without the newline. */
export function formatAccessLine(entry: AccessEntry): string {
  const user = entry.user ? escapeLogItem(encodeUtf8(entry.user)) : '-';
  const requestLine = entry.requestLine ?? `${entry.method} ${entry.target} HTTP/${entry.httpVersion}`;
  return (
    `${escapeLogItem(entry.remoteAddr)} - ${user} [${formatAccessTime(entry.time)}] ` +
    `"${escapeLogItem(requestLine)}" ${entry.status} ${entry.bytes > 0 ? entry.bytes : '-'} ` +
    `"${formatHeader(entry.referer)}" "${formatHeader(entry.userAgent)}"`
  );
}

function formatHeader(value: string | undefined): string {
  return value ? escapeLogItem(value) : '-';
}

// Formatting the time is the costliest part of a line; requests within one second share it.
// The offset is part of the key because a change of TZ at run time changes the local time.
let cachedSecond = NaN;
let cachedOffset = NaN;
let cachedTime = '';

/** `%t` without brackets: `21/Nov/2026:10:15:42 +0100`, in the server's local time zone. */
function formatAccessTime(time: Date): string {
  const second = Math.floor(time.getTime() / 1000);
  const offset = time.getTimezoneOffset();
  if (second !== cachedSecond || offset !== cachedOffset) {
    cachedTime =
      `${pad2(time.getDate())}/${monthNames[time.getMonth()]}/${time.getFullYear()}:` +
      `${pad2(time.getHours())}:${pad2(time.getMinutes())}:${pad2(time.getSeconds())} ${formatUtcOffset(time)}`;
    cachedSecond = second;
    cachedOffset = offset;
  }
  return cachedTime;
}

/** `+0100`, `-0330`: the local offset from UTC at that moment (it changes with daylight saving time). */
function formatUtcOffset(time: Date): string {
  const east = -time.getTimezoneOffset();
  const abs = Math.abs(east);
  return `${east < 0 ? '-' : '+'}${pad2(Math.floor(abs / 60))}${pad2(abs % 60)}`;
}

export function pad2(n: number): string {
  return n < 10 ? `0${n}` : String(n);
}

// Everything but printable ASCII, the quote and the backslash: the characters Apache escapes
// (T_ESCAPE_LOGITEM in httpd's server/gen_test_char.c).
const needsEscape = /[^\x20\x21\x23-\x5b\x5d-\x7e]/;
const shortEscapes: Record<number, string> = {
  8: '\\b',
  9: '\\t',
  10: '\\n',
  11: '\\v',
  13: '\\r',
  34: '\\"',
  92: '\\\\',
};

/**
 * Escapes one field as Apache's ap_escape_logitem does, so a field can neither end the line nor
 * its quotes: `"` and `\` get a backslash, \b \n \r \t \v their C short forms, every other
 * control character and every byte from 0x7f up is written `\xhh`.
 * The string is read as bytes, one character per byte, which is how Node's HTTP parser hands
 * over header values (latin1); use encodeUtf8() first for text such as a user name. A character
 * above U+00FF, which no parser delivers, is written as its UTF-8 bytes.
 * With `escapeQuotes: false` it is ap_escape_errorlog_item, which leaves quotes alone.
 */
export function escapeLogItem(value: string, { escapeQuotes = true } = {}): string {
  if (!needsEscape.test(value)) return value;
  let out = '';
  for (let i = 0; i < value.length; i++) {
    const code = value.charCodeAt(i);
    if (code === 34 && !escapeQuotes) out += '"';
    else if (shortEscapes[code] !== undefined) out += shortEscapes[code];
    else if (code >= 0x20 && code < 0x7f) out += value[i];
    else if (code <= 0xff) out += formatHexByte(code);
    else {
      const codePoint = value.codePointAt(i) ?? code;
      if (codePoint > 0xffff) i++;
      for (const byte of Buffer.from(String.fromCodePoint(codePoint), 'utf8')) out += formatHexByte(byte);
    }
  }
  return out;
}

/** Text as a string of its UTF-8 bytes, one character per byte, for escapeLogItem(). */
export function encodeUtf8(text: string): string {
  return needsEscape.test(text) ? Buffer.from(text, 'utf8').toString('latin1') : text;
}

function formatHexByte(byte: number): string {
  return `\\x${byte < 16 ? '0' : ''}${byte.toString(16)}`;
}
