// Accounts in the database: look-up, checking credentials the same way for an unknown user
// and a wrong password, and the changes bin/accounts.ts makes.
import type { Queryable } from '../db/index.ts';
import { dummyHash, hashPassword, verifyPassword } from './password.ts';

export type Role = 'user' | 'librarian';
export const roles: readonly Role[] = ['user', 'librarian'];
export const usernamePattern = /^[a-z0-9][a-z0-9._-]{0,63}$/;

/** An account as the application sees a requester. */
export interface Account {
  id: number;
  username: string;
  role: Role;
  /** The person this account is, with what a link to them needs. */
  person: { slug: string; vorname: string; nachname: string } | null;
}

interface AccountRow extends Account {
  personUsername: string | null;
  createdAt: string;
}

type CredentialCheck = { ok: true; account: Account } | { ok: false; reason: 'user not found' | 'Password Mismatch' };

const accountColumns = `a.id, a.username, a.role,
  CASE WHEN p.id IS NULL THEN NULL
       ELSE json_build_object('slug', p.slug, 'vorname', p.vorname, 'nachname', p.nachname) END AS person`;

export async function findAccount(db: Queryable, id: number): Promise<Account | null> {
  const [account] = await db.query<Account>(
    `SELECT ${accountColumns} FROM account a LEFT JOIN person p ON p.username = a.person_username WHERE a.id = $1`,
    [id],
  );
  return account ?? null;
}

/**
 * Checks a user name and password. An unknown name costs one database look-up and one scrypt,
 * exactly like a wrong password, so the time taken does not tell which names exist.
 */
export async function checkCredentials(db: Queryable, username: string, password: string): Promise<CredentialCheck> {
  const [row] = await db.query<Account & { passwordHash: string }>(
    `SELECT ${accountColumns}, a.password_hash AS "passwordHash"
       FROM account a LEFT JOIN person p ON p.username = a.person_username
      WHERE a.username = $1`,
    [normalizeUsername(username).slice(0, 100)],
  );
  const matches = await verifyPassword(password, row?.passwordHash ?? dummyHash);
  if (!row) return { ok: false, reason: 'user not found' };
  if (!matches) return { ok: false, reason: 'Password Mismatch' };
  const { passwordHash: _hash, ...account } = row;
  return { ok: true, account };
}

/** User names are stored in lower case; a login may type them in any case. */
export function normalizeUsername(username: string): string {
  return username.trim().toLowerCase();
}

export interface NewAccount {
  username: string;
  password: string;
  role: Role;
  personUsername: string | null;
}

export async function createAccount(db: Queryable, account: NewAccount): Promise<number> {
  const hash = await hashPassword(account.password);
  const [row] = await db.query<{ id: number }>(
    `INSERT INTO account (username, password_hash, role, person_username) VALUES ($1, $2, $3, $4) RETURNING id`,
    [account.username, hash, account.role, account.personUsername],
  );
  return (row as { id: number }).id;
}

/** Sets a new password and ends the account's sessions; false when there is no such account. */
export async function setPassword(db: Queryable, username: string, password: string): Promise<boolean> {
  const hash = await hashPassword(password);
  const rows = await db.query('UPDATE account SET password_hash = $2 WHERE username = $1 RETURNING id', [
    username,
    hash,
  ]);
  if (rows.length === 0) return false;
  await db.query('DELETE FROM session WHERE account_id = (SELECT id FROM account WHERE username = $1)', [username]);
  return true;
}

/** Sets the role; false when there is no such account. */
export async function setRole(db: Queryable, username: string, role: Role): Promise<boolean> {
  const rows = await db.query('UPDATE account SET role = $2 WHERE username = $1 RETURNING id', [username, role]);
  return rows.length > 0;
}

export async function listAccounts(db: Queryable): Promise<AccountRow[]> {
  return db.query<AccountRow>(
    `SELECT ${accountColumns}, a.person_username AS "personUsername",
            to_char(a.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI') AS "createdAt"
       FROM account a LEFT JOIN person p ON p.username = a.person_username
      ORDER BY a.id`,
  );
}

export async function personExists(db: Queryable, username: string): Promise<boolean> {
  return (await db.query('SELECT 1 FROM person WHERE username = $1', [username])).length > 0;
}
