// bin/accounts.ts, run as a real child process against the run's backend: the password comes
// from stdin and never from the arguments; add, set-password, set-role and list.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { checkCredentials } from '../../lib/auth/account-store.ts';
import type { Db } from '../../lib/db/index.ts';
import { root } from '../helpers.ts';
import type { ToolDb } from './tool-db.ts';
import { openToolDb } from './tool-db.ts';

let tool: ToolDb;
let env: NodeJS.ProcessEnv;

before(async () => {
  tool = await openToolDb('accounts');
  env = tool.env;
  // The first run migrates the empty database; a person to link accounts to.
  assert.equal(accounts(['list']).status, 0);
  await withDb((db) =>
    db.query(
      `INSERT INTO person (slug, vorname, nachname, username, image) VALUES ('kim-lee', 'Kim', 'Lee', 'klee', '/img/x.svg')`,
    ),
  );
});
after(() => tool?.drop());

function accounts(args: string[], stdin = '') {
  const run = spawnSync(process.execPath, ['--import', 'tsx', 'bin/accounts.ts', ...args], {
    cwd: root,
    env,
    input: stdin,
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { status: run.status, stdout: run.stdout, stderr: run.stderr };
}

const withDb = <T>(fn: (db: Db) => Promise<T>) => tool.withDb(fn);

/** Runs the tool on a pseudo-terminal (util-linux script), answering each prompt as it appears. */
function accountsOnTerminal(
  args: string[],
  answers: [prompt: string, reply: string][],
): Promise<{ status: number | null; output: string }> {
  const command = [process.execPath, '--import', 'tsx', 'bin/accounts.ts', ...args].join(' ');
  const child = spawn('script', ['-qfec', command, '/dev/null'], { cwd: root, env, stdio: ['pipe', 'pipe', 'pipe'] });
  let output = '';
  const pending = [...answers];
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (text: string) => {
    output += text;
    const next = pending[0];
    if (next && output.includes(next[0])) {
      pending.shift();
      child.stdin.write(next[1]);
    }
  });
  const timer = setTimeout(() => child.kill(), 60_000);
  return new Promise((resolve) =>
    child.on('close', (status) => {
      clearTimeout(timer);
      resolve({ status, output });
    }),
  );
}

const listing = (text: string) => text.replace(/\d{4}-\d\d-\d\d \d\d:\d\d/g, 'YYYY-MM-DD hh:mm');

describe('npm run accounts', () => {
  test('add reads the password from stdin and stores its scrypt hash', async () => {
    const run = accounts(['add', 'Bib', '--role', 'librarian'], 'first-password\n');
    assert.deepEqual(run, {
      status: 0,
      stdout: 'Added account 1: bib (librarian); its loan list is /entlehnte/1.\n',
      stderr: '',
    });
    const [row] = await withDb((db) =>
      db.query<{ hash: string }>(`SELECT password_hash AS hash FROM account WHERE username = 'bib'`),
    );
    assert.match(row?.hash ?? '', /^scrypt\$N=131072,r=8,p=1\$[A-Za-z0-9_-]{22}\$[A-Za-z0-9_-]{86}$/);
    const check = await withDb((db) => checkCredentials(db, 'bib', 'first-password'));
    assert.equal(check.ok, true);
  });

  test("add links an account to a person by the person's user name", () => {
    assert.deepEqual(accounts(['add', 'kim', '--person', 'klee'], 'kims-password'), {
      status: 0,
      stdout: 'Added account 2: kim (user), the person klee; its loan list is /entlehnte/2.\n',
      stderr: '',
    });
  });

  test('list shows every account', () => {
    const run = accounts(['list']);
    assert.equal(run.status, 0);
    assert.equal(
      listing(run.stdout),
      [
        'id  username  role       person  created (UTC)',
        '1   bib       librarian  -       YYYY-MM-DD hh:mm',
        '2   kim       user       klee    YYYY-MM-DD hh:mm',
        '',
      ].join('\n'),
    );
  });

  test('never takes a password from the arguments', () => {
    const run = accounts(['add', 'sam', '--password', 'in-the-process-list'], 'from-stdin-pw');
    assert.equal(run.status, 2);
    assert.match(run.stderr, /^accounts: Unknown option '--password'/);
    assert.equal(accounts(['list']).stdout.includes('sam'), false);
  });

  test('refuses a short password, an empty stdin, a taken name, an unknown person or role', () => {
    const cases: [string[], string, number, string][] = [
      [['add', 'sam'], 'short', 1, 'accounts: The password must have at least 8 characters. Nothing was changed.\n'],
      [
        ['add', 'sam'],
        '',
        1,
        'accounts: No password on stdin: pipe it in (printf %s "$PASSWORD" | npm run accounts -- …) or run in a terminal to be asked.\n',
      ],
      [
        ['add', 'kim'],
        'another-password',
        1,
        'accounts: An account named kim exists already; see "npm run accounts -- list".\n',
      ],
      [
        ['add', 'sam', '--person', 'nobody'],
        'sams-password',
        1,
        'accounts: There is no person with the user name "nobody"; the person list (/personen.xml) shows each one\'s <username>.\n',
      ],
      [
        ['add', 'sam', '--person', 'klee'],
        'sams-password',
        1,
        'accounts: The person klee has an account already; see "npm run accounts -- list".\n',
      ],
    ];
    for (const [args, stdin, status, stderr] of cases) {
      assert.deepEqual(accounts(args, stdin), { status, stdout: '', stderr }, args.join(' '));
    }
    const role = accounts(['set-role', 'kim', 'admin']);
    assert.equal(role.status, 2);
    assert.match(
      role.stderr,
      /^accounts: The role must be user or librarian, not "admin"\.\n\nUsage: npm run accounts -- <command>/,
    );
  });

  test("set-password changes the password and ends the account's sessions", async () => {
    await withDb((db) =>
      db.query(
        `INSERT INTO session (id, account_id, csrf_token, expires_at) VALUES (repeat('a', 64), 2, 'x', now() + interval '1 hour')`,
      ),
    );
    assert.deepEqual(accounts(['set-password', 'kim'], 'kims-new-password\n'), {
      status: 0,
      stdout: 'Set a new password for kim and ended its sessions.\n',
      stderr: '',
    });
    const [oldCheck, newCheck, sessions] = await withDb(
      async (db) =>
        [
          await checkCredentials(db, 'kim', 'kims-password'),
          await checkCredentials(db, 'kim', 'kims-new-password'),
          await db.query('SELECT id FROM session WHERE account_id = 2'),
        ] as const,
    );
    assert.deepEqual(oldCheck, { ok: false, reason: 'Password Mismatch' });
    assert.equal(newCheck.ok, true);
    assert.deepEqual(sessions, []);
  });

  test('set-role makes a user a librarian', () => {
    assert.deepEqual(accounts(['set-role', 'kim', 'librarian']), {
      status: 0,
      stdout: 'kim is now a librarian.\n',
      stderr: '',
    });
    assert.match(accounts(['list']).stdout, /^2 {3}kim {7}librarian {2}klee /m);
  });

  test('on a terminal, asks twice for the password without echoing it', async () => {
    const run = await accountsOnTerminal(
      ['set-password', 'bib'],
      [
        ['New password: ', 'typed-secret-1\r'],
        ['Repeat it: ', 'typed-secret-1\r'],
      ],
    );
    assert.equal(run.status, 0, run.output);
    assert.equal(
      run.output.replace(/\r/g, ''),
      'New password: \nRepeat it: \nSet a new password for bib and ended its sessions.\n',
    );
    assert.equal((await withDb((db) => checkCredentials(db, 'bib', 'typed-secret-1'))).ok, true);
  });

  test('names the next step when an account does not exist', () => {
    assert.deepEqual(accounts(['set-role', 'nobody', 'user']), {
      status: 1,
      stdout: '',
      stderr: 'accounts: There is no account named nobody; see "npm run accounts -- list".\n',
    });
  });
});
