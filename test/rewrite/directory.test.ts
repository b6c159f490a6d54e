// Specifies directory context, the semantics of an .htaccess file: patterns see the path below
// the folder, RewriteBase, rounds after an internal rewrite, PATH_INFO, and Apache's escaping.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { compileRules, rewriteUrl } from '../../lib/rewrite/index.ts';
import type { RewriteRequest, RewriteResult, RewriteRuleSource } from '../../lib/rewrite/index.ts';

const files = new Set(['/index.php', '/page.php', '/robots.txt']);
const folders = new Set(['/', '/img']);
const site = { fileExists: (p: string) => files.has(p), dirExists: (p: string) => folders.has(p) };

function rewrite(
  rules: RewriteRuleSource[],
  request: Partial<RewriteRequest> & { path: string },
  table: { directory?: string; base?: string } = {},
): RewriteResult {
  const compiled = compileRules(
    { directory: table.directory ?? '/', ...(table.base ? { base: table.base } : {}), rules },
    { scriptExists: () => true },
  );
  return rewriteUrl(compiled, { query: '', ...site, ...request });
}

describe('rewriteUrl in directory context', () => {
  test('matches patterns against the path without the folder and its slash', () => {
    assert.deepEqual(
      rewrite([{ pattern: '^article/([0-9]+)$', substitution: 'page.php?id=$1', flags: ['L'] }], {
        path: '/article/7',
      }),
      { kind: 'pass', path: '/page.php', query: 'id=7', rule: 0, vary: [] },
    );
  });

  test('matches the root as the empty string', () => {
    assert.deepEqual(rewrite([{ pattern: '^$', substitution: 'index.php', flags: ['L'] }], { path: '/' }), {
      kind: 'pass',
      path: '/index.php',
      query: '',
      rule: 0,
      vary: [],
    });
  });

  test('takes a relative substitution against RewriteBase', () => {
    assert.deepEqual(
      rewrite(
        [{ pattern: '^x$', substitution: 'y', flags: ['R=301'] }],
        { path: '/shop/x' },
        { directory: '/shop/', base: '/store' },
      ),
      { kind: 'redirect', status: 301, location: '/store/y', rule: 0, vary: [] },
    );
  });

  test('leaves requests outside the folder alone', () => {
    assert.deepEqual(
      rewrite([{ pattern: '.*', substitution: '-', flags: ['F'] }], { path: '/blog/x' }, { directory: '/shop/' }),
      { kind: 'pass', path: '/blog/x', query: '', rule: null, vary: [] },
    );
  });

  test('runs the rules again after an internal rewrite, as the next round sees the new path', () => {
    const rules = [
      { pattern: '^([a-z]{2})/(.*)$', substitution: '$2?lang=$1', flags: ['QSA'] },
      { pattern: '^about$', substitution: 'page.php?name=about', flags: ['QSA', 'L'] },
    ];
    assert.deepEqual(rewrite(rules, { path: '/de/about', query: 'x=1' }), {
      kind: 'pass',
      path: '/page.php',
      query: 'name=about&lang=de&x=1',
      rule: 1,
      vary: [],
    });
  });

  test('keeps the new query but stops when a rule rewrites a file to itself', () => {
    assert.deepEqual(
      rewrite([{ pattern: '^(.*)$', substitution: 'page.php?name=$1', flags: ['L'] }], { path: '/hello' }),
      { kind: 'pass', path: '/page.php', query: 'name=page.php', rule: 0, vary: [] },
    );
  });

  test('stops the rounds at END', () => {
    assert.deepEqual(
      rewrite([{ pattern: '^(.*)$', substitution: '/page.php?name=$1', flags: ['END'] }], { path: '/hello' }),
      { kind: 'pass', path: '/page.php', query: 'name=hello', rule: 0, vary: [] },
    );
  });

  test('reports a loop after ten internal redirects, which the front answers with 500', () => {
    assert.deepEqual(
      rewrite([{ pattern: '^(.*)$', substitution: '/page.php?name=$1', flags: ['L'] }], { path: '/hello' }),
      { kind: 'loop', rule: 0, vary: [] },
    );
  });

  test('adds PATH_INFO to what the next rule sees, unless DPI', () => {
    const chain = (flags: string[]) => [
      { pattern: '^shop/(.*)$', substitution: 'store/$1', flags },
      { pattern: '^store/(.*)$', substitution: 'page.php?item=$1', flags: ['L'] },
    ];
    assert.deepEqual(rewrite(chain(['C']), { path: '/shop/x' }), {
      kind: 'pass',
      path: '/page.php',
      query: 'item=x/x',
      rule: 1,
      vary: [],
    });
    assert.deepEqual(rewrite(chain(['C', 'DPI']), { path: '/shop/x' }), {
      kind: 'pass',
      path: '/page.php',
      query: 'item=x',
      rule: 1,
      vary: [],
    });
  });

  test('inserts back references unescaped and refuses a query with a space, as Apache 2.4.56 does', () => {
    const rules = [{ pattern: '^t/(.*)$', substitution: 'page.php?tag=$1', flags: ['L'] }];
    assert.deepEqual(rewrite(rules, { path: '/t/a&b=c' }), {
      kind: 'pass',
      path: '/page.php',
      query: 'tag=a&b=c',
      rule: 0,
      vary: [],
    });
    assert.deepEqual(rewrite(rules, { path: '/t/a b' }), { kind: 'forbidden', rule: 0, vary: [] });
  });

  test('escapes a redirect as Apache does: the path, and the query only when a rule changed it', () => {
    const rules = [
      { pattern: '^m/(.*)$', substitution: '/n/$1', flags: ['R=302', 'L'] },
      { pattern: '^q/(.*)$', substitution: '/n?v=$1', flags: ['R=302', 'L'] },
    ];
    assert.deepEqual(rewrite(rules, { path: '/m/a b', query: 'x=%41' }), {
      kind: 'redirect',
      status: 302,
      location: '/n/a%20b?x=%41',
      rule: 0,
      vary: [],
    });
    assert.deepEqual(rewrite(rules, { path: '/q/ä%' }), {
      kind: 'redirect',
      status: 302,
      location: '/n?v=%C3%A4%25',
      rule: 1,
      vary: [],
    });
  });

  test('redirects to an absolute URL without R, with 302', () => {
    assert.deepEqual(
      rewrite([{ pattern: '^(.*)$', substitution: 'https://www.example.org/$1', flags: ['L'] }], { path: '/a' }),
      { kind: 'redirect', status: 302, location: 'https://www.example.org/a', rule: 0, vary: [] },
    );
  });
});

describe('compileRules: the table options', () => {
  const cases: [string, unknown, string][] = [
    [
      'rejects a directory that does not end in "/"',
      { directory: '/shop', rules: [] },
      '"directory" must be a site path that starts and ends with "/", such as "/" or "/shop/", got "/shop".',
    ],
    [
      'rejects a base without a directory',
      { base: '/', rules: [] },
      '"base" (RewriteBase) must be a site path starting with "/" and goes with "directory", got "/".',
    ],
    [
      'rejects representationSuffixes that is not a boolean',
      { representationSuffixes: 'no', rules: [] },
      '"representationSuffixes" must be true or false, got "no".',
    ],
  ];
  for (const [name, table, message] of cases) {
    test(name, () =>
      assert.throws(() => compileRules(table, { scriptExists: () => true }), { name: 'RewriteConfigError', message }),
    );
  }

  test('reads directory, base with its slash added, and representationSuffixes', () => {
    const table = compileRules(
      { directory: '/shop/', base: '/store', representationSuffixes: false, rules: [] },
      { scriptExists: () => true },
    );
    assert.deepEqual(table, { rules: [], directory: '/shop/', base: '/store/', representationSuffixes: false });
  });
});
