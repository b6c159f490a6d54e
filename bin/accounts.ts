// Manages accounts from the command line: npm run accounts -- add|set-password|set-role|list.
// Passwords come from stdin or a hidden prompt, never from the arguments, which other users
// of the machine can read in the process list and which shells keep in their history.
import { parseArgs } from 'node:util';
import type { NewAccount, Role } from '../lib/auth/index.ts';
import {
  checkNewPassword,
  createAccount,
  listAccounts,
  normalizeUsername,
  personExists,
  roles,
  setPassword,
  setRole,
  usernamePattern,
} from '../lib/auth/index.ts';
import { readConfig } from '../lib/config.ts';
import type { Db } from '../lib/db/index.ts';
import { migrate, openDatabase as openConfigured } from '../lib/db/index.ts';

const usage = `Usage: npm run accounts -- <command>

  add <name> [--role user|librarian] [--person <person user name>]
                           create an account; the password is read from stdin or a prompt
  set-password <name>      set a new password (ends the account's sessions)
  set-role <name> <role>   make the account a user or a librarian
  list                     show all accounts

The database is DATABASE_URL, or the embedded one in DATA_DIR (stop the server first:
the embedded database serves one process at a time).`;

/** A mistake of the caller: printed with the usage, exit code 2. */
class UsageError extends Error {}

async function main(argv: string[]): Promise<void> {
  const { positionals, values } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { role: { type: 'string' }, person: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
  });
  const [command, ...rest] = positionals;
  if (values.help || command === undefined) {
    console.log(usage);
    return;
  }
  // Arguments and password are checked before the database is opened: a typo costs nothing.
  const task = await prepareTask(command, rest, values);
  const db = await openDatabase();
  try {
    await task(db);
  } finally {
    await db.close();
  }
}

type Task = (db: Db) => Promise<void>;

async function prepareTask(command: string, rest: string[], values: { role?: string; person?: string }): Promise<Task> {
  switch (command) {
    case 'add': {
      const [username, role] = [requireName(rest[0]), readRole(values.role ?? 'user')];
      const password = await readNewPassword();
      return (db) => addAccount(db, { username, password, role, personUsername: values.person ?? null });
    }
    case 'set-password': {
      const username = requireName(rest[0]);
      const password = await readNewPassword();
      return (db) => changePassword(db, username, password);
    }
    case 'set-role': {
      const [username, role] = [requireName(rest[0]), readRole(rest[1])];
      return (db) => changeRole(db, username, role);
    }
    case 'list':
      return printAccounts;
    default:
      throw new UsageError(`Unknown command "${command}".`);
  }
}

async function addAccount(db: Db, account: NewAccount): Promise<void> {
  const { username, role, personUsername: person } = account;
  if (person !== null && !(await personExists(db, person))) {
    throw new Error(
      `There is no person with the user name "${person}"; the person list (/personen.xml) shows each one's <username>.`,
    );
  }
  try {
    const id = await createAccount(db, account);
    console.log(
      `Added account ${id}: ${username} (${role})${person ? `, the person ${person}` : ''}; its loan list is /entlehnte/${id}.`,
    );
  } catch (err) {
    if ((err as { code?: string }).code !== '23505') throw err;
    const which = /person_username/.test((err as Error).message)
      ? `The person ${person} has an account already`
      : `An account named ${username} exists already`;
    throw new Error(`${which}; see "npm run accounts -- list".`);
  }
}

async function changePassword(db: Db, username: string, password: string): Promise<void> {
  if (!(await setPassword(db, username, password)))
    throw new Error(`There is no account named ${username}; see "npm run accounts -- list".`);
  console.log(`Set a new password for ${username} and ended its sessions.`);
}

async function changeRole(db: Db, username: string, role: Role): Promise<void> {
  if (!(await setRole(db, username, role)))
    throw new Error(`There is no account named ${username}; see "npm run accounts -- list".`);
  console.log(`${username} is now a ${role}.`);
}

async function printAccounts(db: Db): Promise<void> {
  const rows = (await listAccounts(db)).map((a) => [
    String(a.id),
    a.username,
    a.role,
    a.personUsername ?? '-',
    a.createdAt,
  ]);
  const table = [['id', 'username', 'role', 'person', 'created (UTC)'], ...rows];
  const widths = table[0]!.map((_, i) => Math.max(...table.map((row) => row[i]!.length)));
  for (const row of table)
    console.log(
      row
        .map((cell, i) => cell.padEnd(widths[i]!))
        .join('  ')
        .trimEnd(),
    );
}

function requireName(raw: string | undefined): string {
  if (raw === undefined) throw new UsageError('Name the account.');
  const username = normalizeUsername(raw);
  if (!usernamePattern.test(username)) {
    throw new UsageError(
      `"${raw}" is not a valid user name: 1 to 64 of a-z, 0-9, ".", "_" and "-", beginning with a letter or digit.`,
    );
  }
  return username;
}

function readRole(raw: string | undefined): Role {
  if (!roles.includes(raw as Role)) throw new UsageError(`The role must be ${roles.join(' or ')}, not "${raw ?? ''}".`);
  return raw as Role;
}

/** The new password: typed twice at a hidden prompt, or the first line of piped stdin. */
async function readNewPassword(): Promise<string> {
  let password: string;
  if (process.stdin.isTTY) {
    password = await promptHidden('New password: ');
    if ((await promptHidden('Repeat it: ')) !== password)
      throw new Error('The two passwords differ; nothing was changed.');
  } else {
    password = (await readStdin()).split(/\r?\n/)[0] ?? '';
    if (password === '')
      throw new Error(
        'No password on stdin: pipe it in (printf %s "$PASSWORD" | npm run accounts -- …) or run in a terminal to be asked.',
      );
  }
  const problem = checkNewPassword(password);
  if (problem) throw new Error(`${problem} Nothing was changed.`);
  return password;
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** Reads a line from the terminal without echoing it. */
function promptHidden(question: string): Promise<string> {
  const { stdin, stdout } = process;
  // Echo goes off before the prompt shows, so even a fast typist's password stays hidden.
  stdin.setRawMode(true);
  stdout.write(question);
  stdin.setEncoding('utf8');
  stdin.resume();
  return new Promise((resolve, reject) => {
    let value = '';
    const finish = (error: Error | null) => {
      stdin.off('data', onData);
      stdin.setRawMode(false);
      stdin.pause();
      stdout.write('\n');
      if (error) reject(error);
      else resolve(value);
    };
    const onData = (text: string) => {
      for (const ch of text) {
        if (ch === '\r' || ch === '\n') return finish(null);
        if (ch === '\u0003' || ch === '\u0004') return finish(new Error('Cancelled; nothing was changed.'));
        value = ch === '\u007f' || ch === '\b' ? value.slice(0, -1) : value + ch;
      }
    };
    stdin.on('data', onData);
  });
}

async function openDatabase(): Promise<Db> {
  const config = readConfig();
  // As the server opens it: several hosts, a standby refused, the pool settings.
  const db = await openConfigured(config);
  try {
    await migrate(db, config.sqlDir);
  } catch (err) {
    await db.close();
    throw err;
  }
  return db;
}

main(process.argv.slice(2)).catch((err: unknown) => {
  const usageError = err instanceof UsageError || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS');
  console.error(`accounts: ${err instanceof Error ? err.message : String(err)}`);
  if (usageError) console.error(`\n${usage}`);
  process.exitCode = usageError ? 2 : 1;
});
