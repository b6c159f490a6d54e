// Specifies the .htaccess import: what it carries over, what it lists as not carried over
// (with line numbers), the command, and that the server accepts and serves what it writes.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { importHtaccess, splitArguments } from '../../bin/lib/htaccess.ts';
import type { TestServer } from '../helpers.ts';
import { rawRequest, root, startTestServer } from '../helpers.ts';

const fixtures = path.join(root, 'test/fixtures/htaccess');
const scriptsDir = path.join(fixtures, 'scripts');
const realWorld = path.join(fixtures, 'rules/real-world.htaccess');
const scripts = new Set(['index', 'article', 'page', 'product', 'search']);
const options = {
  directory: '/',
  upstream: null,
  source: '.htaccess',
  scriptExists: (name: string) => scripts.has(name),
};

describe('importHtaccess', () => {
  test('lists every line of the real-world file it does not carry over, with its number and why', () => {
    const { table, findings } = importHtaccess(readFileSync(realWorld, 'utf8'), options);
    assert.equal(table.rules.length, 11);
    assert.deepEqual(
      findings.map((f) => [f.line, f.text]),
      [
        [2, 'Options -Indexes +FollowSymLinks'],
        [3, 'AddDefaultCharset UTF-8'],
        [4, 'ErrorDocument 403 "Forbidden"'],
        [7, 'Header set X-Content-Type-Options "nosniff"'],
        [40, 'RewriteRule ^(.*)$ index.php?route=$1 [L,QSA,NS]'],
        [43, '<Files ".ht*">'],
        [44, 'Require all denied'],
        [45, '</Files>'],
      ],
    );
    assert.equal(findings[4]?.reason, 'flag NS left out: there are no subrequests here.');
    assert.equal(
      findings[0]?.reason,
      "Options is not a mod_rewrite directive; the server has its own setting for it, or none (docs/migrating.md, Apache's .htaccess).",
    );
  });

  test('writes directory context, RewriteBase, no representation suffixes, and the source line of each rule', () => {
    const { table } = importHtaccess(readFileSync(realWorld, 'utf8'), options);
    assert.deepEqual(
      { ...table, rules: table.rules.slice(0, 2) },
      {
        comment:
          "Imported from .htaccess by npm run import-htaccess: mod_rewrite's directory context, as in the .htaccess file.",
        directory: '/',
        base: '/',
        representationSuffixes: false,
        rules: [
          {
            pattern: '^(.*)$',
            substitution: 'http://www.example.test/$1',
            flags: ['R=301', 'L'],
            conditions: [{ test: '%{HTTP_HOST}', pattern: '^example\\.test$', flags: ['NC'] }],
            comment: 'line 16: RewriteRule ^(.*)$ http://www.example.test/$1 [R=301,L]',
          },
          {
            pattern: '\\.(bak|sql|ini|log)$',
            substitution: '-',
            flags: ['F', 'NC'],
            comment: 'line 19: RewriteRule \\.(bak|sql|ini|log)$ - [F,NC]',
          },
        ],
      },
    );
  });

  test('turns R=403 into F and R=410 into G', () => {
    const { table } = importHtaccess(
      'RewriteEngine On\nRewriteRule ^a$ - [R=403]\nRewriteRule ^b$ - [R=410,L]\n',
      options,
    );
    assert.deepEqual(
      table.rules.map((r) => r.flags),
      [['F'], ['G', 'L']],
    );
  });

  test('proxies a .php target without a script to --upstream, and lists it without one', () => {
    const text =
      'RewriteEngine On\nRewriteBase /old/\nRewriteCond %{QUERY_STRING} ^id=([0-9]+)$\nRewriteRule ^shop$ cart.php?item=%1 [L,QSA]\n';
    const proxied = importHtaccess(text, { ...options, upstream: 'http://127.0.0.1:8000/' });
    assert.deepEqual(proxied.table.rules[0]?.substitution, 'http://127.0.0.1:8000/old/cart.php?item=%1');
    assert.deepEqual(proxied.table.rules[0]?.flags, ['QSA', 'P']);
    assert.deepEqual(proxied.findings, []);
    const missing = importHtaccess(text, options);
    assert.deepEqual(missing.table.rules, []);
    assert.deepEqual(missing.findings, [
      {
        line: 3,
        text: 'RewriteCond %{QUERY_STRING} ^id=([0-9]+)$',
        reason: 'belongs to the rule on line 4, which is not imported.',
      },
      {
        line: 4,
        text: 'RewriteRule ^shop$ cart.php?item=%1 [L,QSA]',
        reason:
          "cart.php has no script scripts/cart.ts; create the script, or give --upstream with the legacy server's URL to proxy it there.",
      },
    ]);
  });

  test('lists a rule the table cannot hold, with the reason the table gives', () => {
    const { table, findings } = importHtaccess(
      'RewriteEngine On\nRewriteRule ^a$ b [E=FOO:1]\nRewriteCond %{HTTP_X_TOKEN} x\nRewriteRule ^c$ d\nRewriteCond %{HTTPS} on\n',
      options,
    );
    assert.deepEqual(table.rules, []);
    assert.deepEqual(
      findings.map((f) => [f.line, f.reason]),
      [
        [
          2,
          'unknown flag "E=FOO:1"; use L, END, QSA, QSD, NC, NE, B, C, S=N, DPI, R, R=301|302|303|307|308, F, G or P (or their long names).',
        ],
        [3, 'belongs to the rule on line 4, which is not imported.'],
        [
          4,
          '%{HTTP_X_TOKEN} is empty in Apache, which names only a few headers this way; write %{HTTP:X-Token} to read that header.',
        ],
        [5, 'a RewriteCond belongs to the RewriteRule after it, and none follows; Apache ignores it too.'],
      ],
    );
  });

  test('says so when the file never switches the engine on', () => {
    const { findings } = importHtaccess('RewriteRule ^a$ page.php\n', options);
    assert.deepEqual(findings, [
      { line: 0, text: '', reason: 'the file never says "RewriteEngine On", so Apache would run none of these rules.' },
    ]);
  });

  test('joins lines that end in a backslash and reports them by their first line', () => {
    const { table } = importHtaccess('RewriteEngine On\nRewriteRule ^a$ \\\n  page.php [L]\n', options);
    assert.deepEqual(table.rules, [
      { pattern: '^a$', substitution: 'page.php', flags: ['L'], comment: 'line 2: RewriteRule ^a$   page.php [L]' },
    ]);
  });

  test('splits arguments as mod_rewrite does: quotes, and a backslash before a space stays in the word', () => {
    assert.deepEqual(splitArguments('RewriteCond %{HTTP_USER_AGENT} "^Mozilla 5" [NC]'), [
      'RewriteCond',
      '%{HTTP_USER_AGENT}',
      '^Mozilla 5',
      '[NC]',
    ]);
    assert.deepEqual(splitArguments('RewriteRule ^a\\ b$ c'), ['RewriteRule', '^a\\ b$', 'c']);
  });
});

describe('npm run import-htaccess', () => {
  const folder = mkdtempSync(path.join(os.tmpdir(), 'portfolio-import-'));
  const out = path.join(folder, 'rewrite-rules.json');
  let server: TestServer;

  before(() => {
    const run = spawnSync(
      process.execPath,
      ['--import', 'tsx', 'bin/import-htaccess.ts', realWorld, '--scripts', scriptsDir, '--out', out],
      { cwd: root, encoding: 'utf8' },
    );
    assert.equal(run.status, 0, run.stderr);
    assert.equal(run.stdout, '');
    const lines = run.stderr.trim().split('\n');
    assert.equal(
      lines[0],
      `${realWorld}:2: not carried over: Options is not a mod_rewrite directive; the server has its own setting for it, or none (docs/migrating.md, Apache's .htaccess).`,
    );
    assert.equal(lines.at(-1), `${realWorld}: 11 rules imported, 8 lines not carried over.`);
  });

  after(async () => {
    await server?.close();
    rmSync(folder, { recursive: true, force: true });
  });

  test('writes the same table as importHtaccess', () => {
    const expected = importHtaccess(readFileSync(realWorld, 'utf8'), {
      ...options,
      source: 'real-world.htaccess',
    }).table;
    assert.deepEqual(JSON.parse(readFileSync(out, 'utf8')), expected);
  });

  test('answers a wrong call with its usage and exit status 2', () => {
    const run = spawnSync(process.execPath, ['--import', 'tsx', 'bin/import-htaccess.ts'], {
      cwd: root,
      encoding: 'utf8',
    });
    assert.equal(run.status, 2);
    assert.equal(
      run.stderr,
      'usage: npm run import-htaccess -- path/to/.htaccess [--out rewrite-rules.json] [--upstream http://127.0.0.1:8000] [--directory /] [--scripts scripts]\n',
    );
  });

  test('produces a table the server starts with and serves', async () => {
    server = await startTestServer({
      REWRITE_RULES: out,
      SCRIPTS_DIR: scriptsDir,
      PUBLIC_DIR: path.join(fixtures, 'public'),
      DEMO_DATA: '0',
      ALLOWED_HOSTS: '127.0.0.1,example.test',
    });
    const article = await rawRequest(server.origin, '/article/12-some-title?ref=x', {
      headers: { accept: 'application/json' },
    });
    assert.equal(article.status, 200);
    assert.deepEqual(JSON.parse(article.body), {
      script: 'article',
      query: [
        ['id', '12'],
        ['slug', 'some-title'],
        ['ref', 'x'],
      ],
      method: 'GET',
    });
    const canonical = await rawRequest(server.origin, '/page/x', { headers: { host: 'example.test' } });
    assert.equal(canonical.status, 301);
    assert.equal(canonical.headers.location, 'http://www.example.test/page/x');
    assert.equal((await rawRequest(server.origin, '/dump.SQL')).status, 403);
    assert.equal((await rawRequest(server.origin, '/shop/old')).status, 410);
    assert.equal((await rawRequest(server.origin, '/robots.txt')).body, 'User-agent: *\nDisallow:\n');
  });

  test('adds the headers that conditions read to Vary, and answers a rewrite loop with 500', async () => {
    const table = importHtaccess(
      [
        'RewriteEngine On',
        'RewriteCond %{HTTP_USER_AGENT} bot [NC]',
        'RewriteRule ^ - [F]',
        'RewriteCond %{HTTP:X-Variant} ^b$',
        'RewriteRule ^x$ page.php?variant=b [L]',
        'RewriteRule ^loop/(.*)$ /loop/$1 [L]',
      ].join('\n'),
      options,
    ).table;
    const file = path.join(folder, 'vary.json');
    writeFileSync(file, JSON.stringify(table));
    const site = await startTestServer({
      REWRITE_RULES: file,
      SCRIPTS_DIR: scriptsDir,
      PUBLIC_DIR: path.join(fixtures, 'public'),
      DEMO_DATA: '0',
      DISPLAY_ERRORS: '0',
    });
    try {
      const robot = await rawRequest(site.origin, '/x', { headers: { 'user-agent': 'Googlebot' } });
      assert.deepEqual([robot.status, robot.headers.vary], [403, 'User-Agent']);
      const variant = await rawRequest(site.origin, '/x', {
        headers: { 'x-variant': 'b', accept: 'application/json' },
      });
      assert.deepEqual(
        [variant.status, variant.headers.vary, JSON.parse(variant.body).query],
        [200, 'Accept, X-Variant', [['variant', 'b']]],
      );
      const loop = await rawRequest(site.origin, '/loop/a');
      assert.deepEqual([loop.status, loop.headers['content-length'], loop.body], [500, '0', '']);
    } finally {
      await site.close();
    }
  });
});
