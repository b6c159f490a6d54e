// The logs of a running server (lib/log/logs.ts): lines of one kind that come in a flood, as an
// outage makes them, are written once and then summed up, so the error log stays readable;
// failed logins and probes, which fail2ban counts, are never summed up.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { test } from 'node:test';
import { Logs } from '../../lib/log/index.ts';

test('a flood of one failure is its first line and then one line per interval with the count', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'logs-'));
  const file = path.join(dir, 'error.log');
  const logs = new Logs({ error: file, collapseEveryMs: 200 });
  try {
    const outage =
      'DbUnavailableError: database unavailable: connect ECONNREFUSED 127.0.0.1:5432 in lib/db/db.ts on line 81';
    for (let i = 0; i < 12_000; i++) logs.error(outage, { client: `127.0.0.1:${40_000 + (i % 1000)}`, collapse: true });
    logs.error('TypeError: something else in scripts/x.ts on line 3', { client: '127.0.0.1:1', collapse: true });
    for (let i = 0; i < 3; i++)
      logs.authFailure({ client: '203.0.113.9:5', user: 'bob', uri: '/login', reason: 'Password Mismatch' });
    await sleep(450);
    logs.error(outage, { client: '127.0.0.1:2', collapse: true });
    await logs.close();
    const lines = readFileSync(file, 'utf8').split('\n').filter(Boolean);
    assert.equal(lines.length, 7, lines.join('\n'));
    assert.match(
      lines[0] as string,
      /\[app:error\] \[pid \d+\] \[client 127\.0\.0\.1:40000\] DbUnavailableError: .* on line 81$/,
    );
    assert.match(lines[1] as string, /TypeError: something else/);
    assert.equal(lines.filter((l) => l.includes('AH01617')).length, 3);
    // Summed up: 11,999 more in the first interval; the interval after had none, so the kind
    // was forgotten and its next line is written whole.
    assert.match(
      lines[5] as string,
      /\[app:error\] \[pid \d+\] DbUnavailableError: .* on line 81 \(repeated 11,999 times in the last [01] s\)$/,
    );
    assert.match(lines[6] as string, /\[client 127\.0\.0\.1:2\] DbUnavailableError: .* on line 81$/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
