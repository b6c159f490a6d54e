// Password hashes with node:crypto's scrypt at the OWASP Password Storage Cheat Sheet's
// parameters (N=2^17, r=8, p=1), stored with their parameters so they can be raised later.
// https://cheatsheetseries.owasp.org/cheatsheets/Password_Storage_Cheat_Sheet.html#scrypt
import { randomBytes, scrypt, timingSafeEqual } from 'node:crypto';

interface ScryptParameters {
  N: number;
  r: number;
  p: number;
}

const owaspParameters: ScryptParameters = { N: 2 ** 17, r: 8, p: 1 };
const keyLength = 64;
const saltLength = 16;
// Hashes stored in the database are trusted only this far, so a bad row cannot exhaust memory.
const maxN = 2 ** 20;
const storedFormat = /^scrypt\$N=(\d+),r=(\d+),p=(\d+)\$([A-Za-z0-9_-]{16,})\$([A-Za-z0-9_-]{16,})$/;

const minPasswordLength = 8;
const maxPasswordLength = 1024;

/**
 * Verified instead when a user name is unknown, so the answer takes as long as for a wrong
 * password (no user enumeration by timing). Its password is random and was thrown away.
 */
export const dummyHash =
  'scrypt$N=131072,r=8,p=1$zu9o3shtM4sNa2UVhcc78g$3JeeLY3eo2NmF1zxKpjvtzbMYTRW5WNHtlLBBKltWG8c6W9ZiKEPWPW-aLz91LXZWj4IlBpGAnvOMIglnwla4w';

/** `scrypt$N=131072,r=8,p=1$<salt>$<key>`, salt and key in base64url. */
export async function hashPassword(password: string, parameters: ScryptParameters = owaspParameters): Promise<string> {
  const salt = randomBytes(saltLength);
  const key = await deriveKey(password, salt, parameters, keyLength);
  return `scrypt$N=${parameters.N},r=${parameters.r},p=${parameters.p}$${salt.toString('base64url')}$${key.toString('base64url')}`;
}

/** Whether password matches the stored hash; a malformed hash never matches. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const parsed = parseHash(stored);
  if (!parsed) return false;
  const key = await deriveKey(password, parsed.salt, parsed.parameters, parsed.key.length);
  return timingSafeEqual(key, parsed.key);
}

/** A reason the password cannot be set, or null when it can. */
export function checkNewPassword(password: string): string | null {
  if (password.length < minPasswordLength) return `The password must have at least ${minPasswordLength} characters.`;
  if (password.length > maxPasswordLength) return `The password must have at most ${maxPasswordLength} characters.`;
  return null;
}

function parseHash(stored: string): { parameters: ScryptParameters; salt: Buffer; key: Buffer } | null {
  const match = storedFormat.exec(stored);
  if (!match) return null;
  const [N, r, p] = [Number(match[1]), Number(match[2]), Number(match[3])];
  if (N < 2 || N > maxN || (N & (N - 1)) !== 0 || r < 1 || r > 32 || p < 1 || p > 16) return null;
  return {
    parameters: { N, r, p },
    salt: Buffer.from(match[4] as string, 'base64url'),
    key: Buffer.from(match[5] as string, 'base64url'),
  };
}

// One scrypt at N=2^17, r=8 holds 128 MiB for about a third of a second; at most two run at
// once, so a burst of logins waits its turn instead of exhausting memory and the thread pool.
const maxConcurrent = 2;
let running = 0;
const waiting: (() => void)[] = [];

async function deriveKey(
  password: string,
  salt: Buffer,
  parameters: ScryptParameters,
  length: number,
): Promise<Buffer> {
  await acquireSlot();
  try {
    return await new Promise<Buffer>((resolve, reject) => {
      // maxmem must exceed 128 * N * r bytes, or node refuses (its default is 32 MiB).
      const maxmem = 128 * parameters.N * parameters.r * parameters.p + 32 * 1024 * 1024;
      scrypt(password.normalize('NFC'), salt, length, { ...parameters, maxmem }, (err, key) =>
        err ? reject(err) : resolve(key),
      );
    });
  } finally {
    releaseSlot();
  }
}

async function acquireSlot(): Promise<void> {
  if (running < maxConcurrent) {
    running += 1;
    return;
  }
  await new Promise<void>((resolve) => waiting.push(resolve));
}

/** Hands the slot straight to the next waiter, so no newcomer can slip in between. */
function releaseSlot(): void {
  const next = waiting.shift();
  if (next) next();
  else running -= 1;
}
