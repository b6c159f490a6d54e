// Password hashes: scrypt at the OWASP parameters, stored with them, checked in constant time;
// the demo hashes are those of the passwords docs/operations.md names.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { checkNewPassword, dummyHash, hashPassword, verifyPassword } from '../../lib/auth/password.ts';
import { root } from '../helpers.ts';
import { demo } from '../login-helpers.ts';

const storedFormat = /^scrypt\$N=131072,r=8,p=1\$[A-Za-z0-9_-]{22}\$[A-Za-z0-9_-]{86}$/;

describe('hashPassword and verifyPassword', () => {
  test('store N=2^17, r=8, p=1, a 16-byte salt and a 64-byte key', async () => {
    const hash = await hashPassword('correct horse battery staple');
    assert.match(hash, storedFormat);
    assert.equal(await verifyPassword('correct horse battery staple', hash), true);
    assert.equal(await verifyPassword('correct horse battery stapler', hash), false);
  });

  test('salt every hash: the same password hashes differently each time', async () => {
    assert.notEqual(await hashPassword('same-password'), await hashPassword('same-password'));
  });

  test('verify with the parameters stored in the hash, so they can be raised later', async () => {
    const light = await hashPassword('older-password', { N: 2 ** 14, r: 8, p: 1 });
    assert.match(light, /^scrypt\$N=16384,r=8,p=1\$/);
    assert.equal(await verifyPassword('older-password', light), true);
  });

  test('treat the same text in composed and decomposed Unicode as one password', async () => {
    const hash = await hashPassword('Müller-Passwort');
    assert.equal(await verifyPassword('Mu\u0308ller-Passwort', hash), true);
  });

  test('never match a malformed hash or one with parameters beyond the limits', async () => {
    for (const stored of [
      '',
      'plain-text',
      'scrypt$N=131072,r=8,p=1$c2FsdA$a2V5',
      `scrypt$N=${2 ** 24},r=8,p=1$${'A'.repeat(22)}$${'A'.repeat(86)}`,
      `scrypt$N=1000,r=8,p=1$${'A'.repeat(22)}$${'A'.repeat(86)}`,
    ]) {
      assert.equal(await verifyPassword('anything', stored), false, stored);
    }
  });

  test('the dummy hash for unknown users is a well-formed hash at the same parameters', async () => {
    assert.match(dummyHash, storedFormat);
    assert.equal(await verifyPassword('bibliothek-demo', dummyHash), false);
  });
});

describe('checkNewPassword', () => {
  test('asks for 8 to 1024 characters', () => {
    assert.equal(checkNewPassword('short'), 'The password must have at least 8 characters.');
    assert.equal(checkNewPassword('x'.repeat(1025)), 'The password must have at most 1024 characters.');
    assert.equal(checkNewPassword('eight ch'), null);
  });
});

describe('the demo accounts', () => {
  test('have the hashes of the passwords docs/operations.md names', async () => {
    const sql = readFileSync(path.join(root, 'sql', 'demo-accounts.sql'), 'utf8');
    const manual = readFileSync(path.join(root, 'docs/operations.md'), 'utf8');
    const rows = [...sql.matchAll(/^ {2}\('([a-z]+)', '(scrypt\$[^']+)'/gm)].map(
      (m) => [m[1] as string, m[2] as string] as const,
    );
    assert.deepEqual(
      rows.map(([name]) => name),
      Object.keys(demo),
    );
    for (const [name, hash] of rows) {
      const password = demo[name as keyof typeof demo].password;
      assert.match(hash, storedFormat, name);
      assert.equal(await verifyPassword(password, hash), true, name);
      assert.ok(
        manual.includes(`| \`${name}\` | \`${password}\` |`),
        `docs/operations.md names the demo password of ${name}`,
      );
    }
  });
});
