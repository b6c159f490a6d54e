// The access log line: Apache's combined format, escaped as ap_escape_logitem escapes, and
// readable by GoAccess's COMBINED preset.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, test } from 'node:test';
import type { AccessEntry } from '../../lib/log/index.ts';
import { escapeLogItem, formatAccessLine } from '../../lib/log/index.ts';

const time = new Date(2026, 10, 21, 10, 15, 42, 123);

const entry: AccessEntry = {
  remoteAddr: '127.0.0.1',
  user: null,
  time,
  method: 'GET',
  target: '/person/max-muster',
  httpVersion: '1.1',
  status: 200,
  bytes: 1234,
  referer: undefined,
  userAgent: 'curl/8.5.0',
};

/** The offset as %z writes it, worked out independently of the module under test. */
function expectedOffset(date: Date): string {
  const minutes = -date.getTimezoneOffset();
  const sign = minutes < 0 ? '-' : '+';
  const hours = String(Math.trunc(Math.abs(minutes) / 60)).padStart(2, '0');
  return `${sign}${hours}${String(Math.abs(minutes) % 60).padStart(2, '0')}`;
}

/** Runs fn with TZ set; Node applies a change of process.env.TZ at once. */
function withTimeZone<T>(zone: string, fn: () => T): T {
  const saved = process.env.TZ;
  process.env.TZ = zone;
  try {
    return fn();
  } finally {
    if (saved === undefined) delete process.env.TZ;
    else process.env.TZ = saved;
  }
}

/** The part of a line between the time and the status: `"%r"`. */
function requestLineOf(line: string): string | undefined {
  return /\] (".*") \d{3} (?:\d+|-) "/.exec(line)?.[1];
}

describe('formatAccessLine', () => {
  test('writes host, identity, user, local time, request line, status, bytes, referer and user agent', () => {
    assert.equal(
      formatAccessLine(entry),
      `127.0.0.1 - - [21/Nov/2026:10:15:42 ${expectedOffset(time)}] "GET /person/max-muster HTTP/1.1" 200 1234 "-" "curl/8.5.0"`,
    );
  });

  test('writes the time in the server time zone with the offset in force at that moment', () => {
    const summer = new Date(2026, 6, 1, 9, 5, 3);
    const line = (date: Date) =>
      formatAccessLine({ ...entry, time: date })
        .split(' [')[1]
        ?.split(']')[0];
    assert.equal(line(summer), `01/Jul/2026:09:05:03 ${expectedOffset(summer)}`);
    assert.deepEqual(
      withTimeZone('Europe/Berlin', () => [
        line(new Date(2026, 10, 21, 10, 15, 42)),
        line(new Date(2026, 6, 1, 9, 5, 3)),
      ]),
      ['21/Nov/2026:10:15:42 +0100', '01/Jul/2026:09:05:03 +0200'],
    );
    assert.equal(
      withTimeZone('America/St_Johns', () => line(new Date(2026, 0, 2, 23, 59, 59))),
      '02/Jan/2026:23:59:59 -0330',
    );
    assert.equal(
      withTimeZone('UTC', () => line(new Date(Date.UTC(2026, 10, 21, 10, 15, 42)))),
      '21/Nov/2026:10:15:42 +0000',
    );
  });

  test('gives the same instant in another time zone its own local time', () => {
    const instant = new Date(Date.UTC(2026, 10, 21, 9, 15, 42));
    const line = () =>
      formatAccessLine({ ...entry, time: instant })
        .split(' [')[1]
        ?.split(']')[0];
    assert.equal(withTimeZone('UTC', line), '21/Nov/2026:09:15:42 +0000');
    assert.equal(withTimeZone('Europe/Berlin', line), '21/Nov/2026:10:15:42 +0100');
  });

  test('writes - for a response without a body, and for a missing or empty referer and user agent', () => {
    const line = formatAccessLine({ ...entry, status: 304, bytes: 0, referer: '', userAgent: undefined });
    assert.match(line, / 304 - "-" "-"$/);
  });

  test('writes the referer and user agent in quotes', () => {
    const line = formatAccessLine({
      ...entry,
      referer: 'http://localhost:8080/personen',
      userAgent: 'Mozilla/5.0 (X11; Linux x86_64)',
    });
    assert.match(line, / 200 1234 "http:\/\/localhost:8080\/personen" "Mozilla\/5\.0 \(X11; Linux x86_64\)"$/);
  });

  test('writes the authenticated user name as %u, its non-ASCII characters as UTF-8 bytes', () => {
    assert.match(formatAccessLine({ ...entry, user: 'bob' }), /^127\.0\.0\.1 - bob \[/);
    assert.match(formatAccessLine({ ...entry, user: 'Jürgen' }), /^127\.0\.0\.1 - J\\xc3\\xbcrgen \[/);
  });

  test('writes other methods and HTTP versions as received', () => {
    const line = formatAccessLine({
      ...entry,
      method: 'PUT',
      target: '/person/7?x=1&y=%20',
      httpVersion: '1.0',
      status: 201,
    });
    assert.equal(requestLineOf(line), '"PUT /person/7?x=1&y=%20 HTTP/1.0"');
  });

  test('escapes quotes and backslashes so that no field can end its quotes early', () => {
    const line = formatAccessLine({ ...entry, target: '/search?q="a\\b"', userAgent: 'x" "y' });
    assert.equal(requestLineOf(line), '"GET /search?q=\\"a\\\\b\\" HTTP/1.1"');
    assert.ok(line.endsWith('"x\\" \\"y"'));
  });

  test('escapes control characters as Apache does: \\b \\n \\r \\t \\v in short form, the others as \\xhh', () => {
    const line = formatAccessLine({ ...entry, userAgent: 'a\bb\nc\rd\te\vf\x00g\x1bh\x7fi' });
    assert.ok(line.endsWith('"a\\bb\\nc\\rd\\te\\vf\\x00g\\x1bh\\x7fi"'), line);
    assert.ok(!line.includes('\n'));
  });

  test('writes header bytes from 0x80 up as \\xhh, one per byte as Node delivers header values (latin1)', () => {
    // A client sent "ü" in UTF-8 (C3 BC); Node's parser gives each byte as one character.
    const line = formatAccessLine({ ...entry, referer: 'http://localhost/m\u00c3\u00bcller', userAgent: '\u00ff' });
    assert.ok(line.endsWith('"http://localhost/m\\xc3\\xbcller" "\\xff"'), line);
  });

  test('writes characters above U+00FF, which no parser delivers, as their UTF-8 bytes', () => {
    assert.equal(escapeLogItem('€ 😀'), '\\xe2\\x82\\xac \\xf0\\x9f\\x98\\x80');
  });

  test('returns a string that needs no escaping unchanged', () => {
    const value = "Mozilla/5.0 (compatible; ~!@#$%^&*()_+{}|:<>?`-=[];',./)";
    assert.equal(escapeLogItem(value), value);
  });
});

describe('GoAccess', () => {
  const goaccessMissing = spawnSync('goaccess', ['--version'], { timeout: 10_000 }).error !== undefined;
  const skip =
    goaccessMissing && !process.env.CI ? 'goaccess is not installed (apt-get install goaccess; CI installs it)' : false;

  test('parses every line as a valid request with its COMBINED preset', { skip }, () => {
    assert.ok(!goaccessMissing, 'goaccess is not installed, but CI is set: install it with apt-get install goaccess');
    const lines = [
      formatAccessLine(entry),
      formatAccessLine({
        ...entry,
        user: 'bob',
        method: 'POST',
        target: '/login',
        status: 303,
        bytes: 0,
        referer: 'http://localhost:8080/login',
      }),
      formatAccessLine({
        ...entry,
        target: '/search?q="a\\b"',
        status: 404,
        bytes: 512,
        userAgent: 'x" \t\u00c3\u00bc "y',
      }),
      formatAccessLine({
        ...entry,
        remoteAddr: '::1',
        method: 'HEAD',
        status: 200,
        bytes: 0,
        referer: undefined,
        userAgent: undefined,
      }),
      formatAccessLine({ ...entry, time: new Date(2026, 6, 1, 0, 0, 0), user: 'Jürgen', status: 500 }),
    ];
    const dir = mkdtempSync(path.join(os.tmpdir(), 'access-log-'));
    try {
      const log = path.join(dir, 'access.log');
      const report = path.join(dir, 'report.json');
      writeFileSync(log, `${lines.join('\n')}\n`);
      const run = spawnSync(
        'goaccess',
        [log, '--log-format=COMBINED', '--no-global-config', '--no-progress', '--no-parsing-spinner', '-o', report],
        { encoding: 'utf8', timeout: 30_000 },
      );
      assert.equal(run.status, 0, `goaccess failed: ${run.stderr}`);
      const general = JSON.parse(readFileSync(report, 'utf8')).general;
      assert.deepEqual(
        { total: general.total_requests, valid: general.valid_requests, failed: general.failed_requests },
        { total: lines.length, valid: lines.length, failed: 0 },
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
