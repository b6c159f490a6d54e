// The error log line: Apache 2.4's format, one entry per line, and failed logins that
// fail2ban's stock apache-auth filter counts.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, test } from 'node:test';
import { formatAuthFailure, formatErrorLine } from '../../lib/log/index.ts';

const time = new Date(2026, 10, 21, 10, 15, 42, 123);
const stamp = '[Sat Nov 21 10:15:42.123000 2026]';

describe('formatErrorLine', () => {
  test('writes time, module and level, pid, client, message and referer', () => {
    assert.equal(
      formatErrorLine({
        time,
        level: 'error',
        pid: 4242,
        client: '127.0.0.1:50432',
        referer: 'http://localhost:8080/personen',
        message: 'TypeError: Cannot read properties of undefined in scripts/person.ts on line 42',
      }),
      `${stamp} [app:error] [pid 4242] [client 127.0.0.1:50432] TypeError: Cannot read properties of undefined in scripts/person.ts on line 42, referer: http://localhost:8080/personen`,
    );
  });

  test('omits [client …] without a client and ", referer:" without a referer', () => {
    assert.equal(
      formatErrorLine({ time, level: 'notice', pid: 7, message: 'portfolio: listening on http://127.0.0.1:8080/' }),
      `${stamp} [app:notice] [pid 7] portfolio: listening on http://127.0.0.1:8080/`,
    );
    assert.equal(
      formatErrorLine({ time, level: 'warn', pid: 7, client: '::1:50432', message: 'x', referer: '' }),
      `${stamp} [app:warn] [pid 7] [client ::1:50432] x`,
    );
  });

  test('names the module app unless another is given', () => {
    assert.match(
      formatErrorLine({ time, module: 'core', level: 'crit', pid: 1, message: 'x' }),
      /^\[[^\]]+\] \[core:crit\] \[pid 1\] x$/,
    );
  });

  test('writes the local time as ctime with microseconds, the day of the month padded with a zero', () => {
    assert.match(
      formatErrorLine({ time: new Date(2026, 1, 1, 3, 4, 5, 6), level: 'info', pid: 1, message: 'x' }),
      /^\[Sun Feb 01 03:04:05\.006000 2026\] /,
    );
    assert.match(
      formatErrorLine({ time: new Date(2027, 11, 31, 23, 59, 59, 999), level: 'info', pid: 1, message: 'x' }),
      /^\[Fri Dec 31 23:59:59\.999000 2027\] /,
    );
  });

  test('keeps one entry on one line: \\n \\r \\t \\b \\v in short form, other control characters as \\xhh', () => {
    const line = formatErrorLine({
      time,
      level: 'error',
      pid: 1,
      message: 'Error: boom\n    at f (scripts/x.ts:1:2)\r\t\b\v\x00\x1b\x7f',
    });
    assert.equal(
      line,
      `${stamp} [app:error] [pid 1] Error: boom\\n    at f (scripts/x.ts:1:2)\\r\\t\\b\\v\\x00\\x1b\\x7f`,
    );
  });

  test('doubles backslashes and leaves quotes alone, as ap_escape_errorlog_item does', () => {
    assert.equal(
      formatErrorLine({ time, level: 'error', pid: 1, message: 'Parse error: "\\u" is not valid' }),
      `${stamp} [app:error] [pid 1] Parse error: "\\\\u" is not valid`,
    );
  });

  test('writes non-ASCII text in the message as its UTF-8 bytes, \\xhh each', () => {
    assert.equal(
      formatErrorLine({ time, level: 'warn', pid: 1, message: 'Warning: Müller €' }),
      `${stamp} [app:warn] [pid 1] Warning: M\\xc3\\xbcller \\xe2\\x82\\xac`,
    );
  });

  test('escapes a referer that carries a newline, so it cannot forge a second entry', () => {
    const line = formatErrorLine({
      time,
      level: 'error',
      pid: 1,
      client: '127.0.0.1:1',
      message: 'x',
      referer: 'http://a/\n[Sat Nov 21 10:15:42 2026] [core:error] y',
    });
    assert.equal(
      line,
      `${stamp} [app:error] [pid 1] [client 127.0.0.1:1] x, referer: http://a/\\n[Sat Nov 21 10:15:42 2026] [core:error] y`,
    );
  });
});

describe('formatAuthFailure', () => {
  test('words a wrong password as mod_auth_basic does (AH01617)', () => {
    assert.equal(
      formatAuthFailure({
        time,
        pid: 4242,
        client: '203.0.113.9:51234',
        user: 'bob',
        uri: '/login',
        reason: 'Password Mismatch',
      }),
      `${stamp} [auth_basic:error] [pid 4242] [client 203.0.113.9:51234] AH01617: user bob: authentication failure for "/login": Password Mismatch`,
    );
  });

  test('words an unknown user as mod_auth_basic does (AH01618), with the referer when there is one', () => {
    assert.equal(
      formatAuthFailure({
        time,
        pid: 4242,
        client: '203.0.113.9:51234',
        user: 'mallory',
        uri: '/login',
        reason: 'user not found',
        referer: 'http://localhost:8080/login',
      }),
      `${stamp} [auth_basic:error] [pid 4242] [client 203.0.113.9:51234] AH01618: user mallory not found: /login, referer: http://localhost:8080/login`,
    );
  });

  test('escapes a user name that carries a newline', () => {
    const line = formatAuthFailure({
      time,
      pid: 1,
      client: '127.0.0.1:1',
      user: 'a\nb',
      uri: '/login',
      reason: 'user not found',
    });
    assert.ok(line.endsWith('AH01618: user a\\nb not found: /login'), line);
  });
});

describe('fail2ban', () => {
  const filter = '/etc/fail2ban/filter.d/apache-auth.conf';
  const fail2banMissing =
    spawnSync('fail2ban-regex', ['--version'], { timeout: 30_000 }).error !== undefined || !existsSync(filter);
  const skip =
    fail2banMissing && !process.env.CI ? 'fail2ban is not installed (apt-get install fail2ban; CI installs it)' : false;

  test('its stock apache-auth filter matches every failed login line', { skip }, () => {
    assert.ok(
      !fail2banMissing,
      `fail2ban-regex or ${filter} is missing, but CI is set: install it with apt-get install fail2ban`,
    );
    const now = new Date();
    const lines = [
      formatAuthFailure({
        time: now,
        pid: 4242,
        client: '203.0.113.9:51234',
        user: 'bob',
        uri: '/login',
        reason: 'Password Mismatch',
      }),
      formatAuthFailure({
        time: now,
        pid: 4242,
        client: '203.0.113.9:51235',
        user: 'mallory',
        uri: '/login',
        reason: 'user not found',
      }),
      formatAuthFailure({
        time: now,
        pid: 4242,
        client: '127.0.0.1:50432',
        user: 'Jürgen',
        uri: '/login',
        reason: 'Password Mismatch',
        referer: 'http://localhost:8080/login',
      }),
      formatAuthFailure({
        time: now,
        pid: 4242,
        client: '::1:50432',
        user: 'max muster',
        uri: '/login',
        reason: 'user not found',
      }),
    ];
    const dir = mkdtempSync(path.join(os.tmpdir(), 'error-log-'));
    try {
      const log = path.join(dir, 'error.log');
      writeFileSync(log, `${lines.join('\n')}\n`);
      const run = spawnSync('fail2ban-regex', [log, filter], { encoding: 'utf8', timeout: 60_000 });
      assert.equal(run.status, 0, `fail2ban-regex failed: ${run.stderr}`);
      const summary = /^Lines: (\d+) lines, (\d+) ignored, (\d+) matched, (\d+) missed/m.exec(run.stdout);
      assert.ok(summary, `no "Lines:" summary in the output of fail2ban-regex:\n${run.stdout}`);
      assert.deepEqual(
        { lines: Number(summary[1]), matched: Number(summary[3]), missed: Number(summary[4]) },
        { lines: lines.length, matched: lines.length, missed: 0 },
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
