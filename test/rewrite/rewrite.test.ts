// Specifies the rewrite engine: mod_rewrite semantics rule by rule, the checks made when a
// table loads, and the production table's URL mappings (docs/interface.md, URLs).

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { compileRules, loadRules, RewriteConfigError, rewriteUrl } from '../../lib/rewrite/index.ts';
import type { RewriteResult, RewriteRuleSource } from '../../lib/rewrite/index.ts';

const anyScript = { scriptExists: () => true };

// A decision without its Vary list, which is empty unless a condition read a header.
type Decision = RewriteResult extends infer R
  ? R extends unknown
    ? Omit<R, 'vary'> & { vary?: string[] }
    : never
  : never;

// As rewriteUrl receives them: the path percent-decoded, the query raw and without "?".
interface RewriteCase {
  name: string;
  rules: RewriteRuleSource[];
  path: string;
  query?: string;
  expected: Decision;
}

const matchingCases: RewriteCase[] = [
  {
    name: 'passes the path unchanged with rule null when no rule matches',
    rules: [{ pattern: '^/a$', substitution: '/b' }],
    path: '/other',
    query: 'x=1',
    expected: { kind: 'pass', path: '/other', query: 'x=1', rule: null },
  },
  {
    name: 'stops after a matching rule with L',
    rules: [
      { pattern: '^/a$', substitution: '/b', flags: ['L'] },
      { pattern: '^/b$', substitution: '/c' },
    ],
    path: '/a',
    expected: { kind: 'pass', path: '/b', query: '', rule: 0 },
  },
  {
    name: 'lets the first matching rule win when it has L',
    rules: [
      { pattern: '^/a$', substitution: '/x', flags: ['L'] },
      { pattern: '^/a$', substitution: '/y', flags: ['L'] },
    ],
    path: '/a',
    expected: { kind: 'pass', path: '/x', query: '', rule: 0 },
  },
  {
    name: 'lets a later rule see the rewritten path when L is absent',
    rules: [
      { pattern: '^/a$', substitution: '/b' },
      { pattern: '^/b$', substitution: '/c' },
    ],
    path: '/a',
    expected: { kind: 'pass', path: '/c', query: '', rule: 1 },
  },
  {
    name: 'makes one pass and never restarts from the top',
    rules: [
      { pattern: '^/b$', substitution: '/c' },
      { pattern: '^/a$', substitution: '/b' },
    ],
    path: '/a',
    expected: { kind: 'pass', path: '/b', query: '', rule: 1 },
  },
  {
    name: 'reports the last rule that matched, not the last rule tried',
    rules: [
      { pattern: '^/a$', substitution: '/b' },
      { pattern: '^/zzz$', substitution: '/q' },
    ],
    path: '/a',
    expected: { kind: 'pass', path: '/b', query: '', rule: 0 },
  },
  {
    name: 'matches case-sensitively without NC',
    rules: [{ pattern: '^/abc$', substitution: '/x' }],
    path: '/ABC',
    expected: { kind: 'pass', path: '/ABC', query: '', rule: null },
  },
  {
    name: 'matches case-insensitively with NC',
    rules: [{ pattern: '^/abc$', substitution: '/x', flags: ['NC'] }],
    path: '/ABC',
    expected: { kind: 'pass', path: '/x', query: '', rule: 0 },
  },
  {
    name: 'accepts flags in any case and by their long names',
    rules: [
      { pattern: '^/abc$', substitution: '/x?n=1', flags: ['nocase', 'QSAppend', 'last'] },
      { pattern: '^/x$', substitution: '/y' },
    ],
    path: '/Abc',
    query: 'o=2',
    expected: { kind: 'pass', path: '/x', query: 'n=1&o=2', rule: 0 },
  },
  {
    name: 'leaves path and query alone with the substitution "-" but still applies its flags',
    rules: [
      { pattern: '^/a$', substitution: '-', flags: ['L'] },
      { pattern: '^/a$', substitution: '/b' },
    ],
    path: '/a',
    query: 'x=1',
    expected: { kind: 'pass', path: '/a', query: 'x=1', rule: 0 },
  },
  {
    name: 'applies a negated pattern when its regex does not match',
    rules: [{ pattern: '!^/keep/', substitution: '/other', flags: ['L'] }],
    path: '/x',
    expected: { kind: 'pass', path: '/other', query: '', rule: 0 },
  },
  {
    name: 'skips a negated pattern when its regex matches',
    rules: [{ pattern: '!^/keep/', substitution: '/other', flags: ['L'] }],
    path: '/keep/1',
    expected: { kind: 'pass', path: '/keep/1', query: '', rule: null },
  },
  {
    name: 'expands every back reference of a negated pattern to the empty string',
    rules: [{ pattern: '!^/(keep)$', substitution: '/x$0$1y?v=$1' }],
    path: '/z',
    expected: { kind: 'pass', path: '/xy', query: 'v=', rule: 0 },
  },
];

const substitutionCases: RewriteCase[] = [
  {
    name: 'expands $1 and $2 to the pattern groups',
    rules: [{ pattern: '^/a/([0-9]+)/([a-z]+)$', substitution: '/b/$2/$1' }],
    path: '/a/7/x',
    expected: { kind: 'pass', path: '/b/x/7', query: '', rule: 0 },
  },
  {
    name: 'expands $0 to the whole match',
    rules: [{ pattern: '^/legacy/.*', substitution: '/archive$0' }],
    path: '/legacy/page',
    expected: { kind: 'pass', path: '/archive/legacy/page', query: '', rule: 0 },
  },
  {
    name: 'expands a group that did not take part in the match to the empty string',
    rules: [{ pattern: '^/a(/b)?$', substitution: '/c$1' }],
    path: '/a',
    expected: { kind: 'pass', path: '/c', query: '', rule: 0 },
  },
  {
    name: 'reads \\$ as a literal dollar sign',
    rules: [{ pattern: '^/a$', substitution: '/price\\$1' }],
    path: '/a',
    expected: { kind: 'pass', path: '/price$1', query: '', rule: 0 },
  },
  {
    name: 'takes a relative substitution against /',
    rules: [{ pattern: '^/a/([0-9]+)$', substitution: 'b.php?id=$1' }],
    path: '/a/3',
    expected: { kind: 'pass', path: '/b.php', query: 'id=3', rule: 0 },
  },
  {
    name: 'takes a substitution that starts with a back reference against /',
    rules: [{ pattern: '^/x/(.*)$', substitution: '$1' }],
    path: '/x/y',
    expected: { kind: 'pass', path: '/y', query: '', rule: 0 },
  },
  {
    name: 'keeps a question mark that comes from a back reference in the path',
    rules: [{ pattern: '^/x/(.*)$', substitution: '/y/$1' }],
    path: '/x/what?',
    expected: { kind: 'pass', path: '/y/what?', query: '', rule: 0 },
  },
];

const queryCases: RewriteCase[] = [
  {
    name: 'passes the query string through unchanged when the substitution has none',
    rules: [{ pattern: '^/a$', substitution: '/b' }],
    path: '/a',
    query: 'x=1&y=2',
    expected: { kind: 'pass', path: '/b', query: 'x=1&y=2', rule: 0 },
  },
  {
    name: 'replaces the query string when the substitution has its own',
    rules: [{ pattern: '^/a$', substitution: '/b?y=2' }],
    path: '/a',
    query: 'x=1',
    expected: { kind: 'pass', path: '/b', query: 'y=2', rule: 0 },
  },
  {
    name: 'discards the query string when the substitution ends in a lone ?',
    rules: [{ pattern: '^/a$', substitution: '/b?' }],
    path: '/a',
    query: 'x=1',
    expected: { kind: 'pass', path: '/b', query: '', rule: 0 },
  },
  {
    name: 'keeps the query string with a lone ? and QSA',
    rules: [{ pattern: '^/a$', substitution: '/b?', flags: ['QSA'] }],
    path: '/a',
    query: 'x=1',
    expected: { kind: 'pass', path: '/b', query: 'x=1', rule: 0 },
  },
  {
    name: 'merges the new query first and the original after it with QSA',
    rules: [{ pattern: '^/a$', substitution: '/b?y=2', flags: ['QSA'] }],
    path: '/a',
    query: 'x=1',
    expected: { kind: 'pass', path: '/b', query: 'y=2&x=1', rule: 0 },
  },
  {
    name: 'adds no & with QSA when the original query is empty',
    rules: [{ pattern: '^/a$', substitution: '/b?y=2', flags: ['QSA'] }],
    path: '/a',
    expected: { kind: 'pass', path: '/b', query: 'y=2', rule: 0 },
  },
  {
    name: 'percent-encodes back references in the query so a decoded path cannot add parameters',
    rules: [{ pattern: '^/p/(.*)$', substitution: '/p.php?slug=$1' }],
    path: '/p/a&b=c d%',
    expected: { kind: 'pass', path: '/p.php', query: 'slug=a%26b%3Dc%20d%25', rule: 0 },
  },
];

const outcomeCases: RewriteCase[] = [
  {
    name: 'redirects with 302 for R and keeps the query string',
    rules: [{ pattern: '^/a$', substitution: '/b', flags: ['R'] }],
    path: '/a',
    query: 'x=1',
    expected: { kind: 'redirect', status: 302, location: '/b?x=1', rule: 0 },
  },
  ...[301, 303, 307, 308].map(
    (status): RewriteCase => ({
      name: `redirects with ${status} for R=${status}`,
      rules: [{ pattern: '^/a$', substitution: '/b', flags: [`R=${status}`] }],
      path: '/a',
      expected: { kind: 'redirect', status, location: '/b', rule: 0 },
    }),
  ),
  {
    name: 'accepts redirect=permanent as the long name of R=301',
    rules: [{ pattern: '^/a$', substitution: '/b', flags: ['redirect=permanent'] }],
    path: '/a',
    expected: { kind: 'redirect', status: 301, location: '/b', rule: 0 },
  },
  {
    name: 'carries on after R without L and redirects to the final URL',
    rules: [
      { pattern: '^/a$', substitution: '/b', flags: ['R=301'] },
      { pattern: '^/b$', substitution: '/c?z=1' },
    ],
    path: '/a',
    query: 'x=1',
    expected: { kind: 'redirect', status: 301, location: '/c?z=1', rule: 1 },
  },
  {
    name: 'stops after R with L',
    rules: [
      { pattern: '^/a$', substitution: '/b', flags: ['R', 'L'] },
      { pattern: '^/b$', substitution: '/c' },
    ],
    path: '/a',
    expected: { kind: 'redirect', status: 302, location: '/b', rule: 0 },
  },
  {
    name: 'redirects with 302 for an absolute URL substitution without R',
    rules: [{ pattern: '^/old/(.*)$', substitution: 'https://example.org/new/$1' }],
    path: '/old/x',
    query: 'y=1',
    expected: { kind: 'redirect', status: 302, location: 'https://example.org/new/x?y=1', rule: 0 },
  },
  {
    name: 'takes the status of R= for an absolute URL substitution',
    rules: [{ pattern: '^/old$', substitution: 'http://example.org/', flags: ['R=308'] }],
    path: '/old',
    expected: { kind: 'redirect', status: 308, location: 'http://example.org/', rule: 0 },
  },
  {
    name: 'percent-encodes the decoded path in a redirect location',
    rules: [{ pattern: '^(/.+)/$', substitution: '$1', flags: ['R=301'] }],
    path: '/max muster#1?/',
    expected: { kind: 'redirect', status: 301, location: '/max%20muster%231%3F', rule: 0 },
  },
  {
    name: 'collapses leading slashes so a redirect never points at another host',
    rules: [{ pattern: '^(/.+)/$', substitution: '$1', flags: ['R=301'] }],
    path: '//evil.example/',
    expected: { kind: 'redirect', status: 301, location: '/evil.example', rule: 0 },
  },
  {
    name: 'answers forbidden for F and stops at once',
    rules: [
      { pattern: '^/secret', substitution: '-', flags: ['F'] },
      { pattern: '^/secret', substitution: '/x' },
    ],
    path: '/secret/file',
    expected: { kind: 'forbidden', rule: 0 },
  },
  {
    name: 'lets F win over a pending redirect',
    rules: [
      { pattern: '^/a$', substitution: '/b', flags: ['R'] },
      { pattern: '^/b$', substitution: '-', flags: ['forbidden'] },
    ],
    path: '/a',
    expected: { kind: 'forbidden', rule: 1 },
  },
  {
    name: 'answers gone for G and stops at once',
    rules: [
      { pattern: '^/deleted$', substitution: '-', flags: ['G'] },
      { pattern: '^/deleted$', substitution: '/x' },
    ],
    path: '/deleted',
    expected: { kind: 'gone', rule: 0 },
  },
  {
    name: 'proxies to the absolute substitution for P, keeping the query string',
    rules: [
      { pattern: '^/api/(.*)$', substitution: 'http://127.0.0.1:9000/v1/$1', flags: ['P'] },
      { pattern: '^/api', substitution: '/x' },
    ],
    path: '/api/a b',
    query: 'y=1',
    expected: { kind: 'proxy', url: 'http://127.0.0.1:9000/v1/a%20b?y=1', rule: 0 },
  },
  {
    name: 'merges the query strings of a proxied URL with QSA',
    rules: [{ pattern: '^/api/(.*)$', substitution: 'https://upstream.example/$1?key=k', flags: ['proxy', 'qsa'] }],
    path: '/api/x',
    query: 'y=1',
    expected: { kind: 'proxy', url: 'https://upstream.example/x?key=k&y=1', rule: 0 },
  },
];

for (const [group, cases] of [
  ['matching', matchingCases],
  ['substitution', substitutionCases],
  ['query string', queryCases],
  ['outcome', outcomeCases],
] as const) {
  describe(`rewriteUrl: ${group}`, () => {
    for (const { name, rules, path, query = '', expected } of cases) {
      test(name, () =>
        assert.deepEqual(rewriteUrl(compileRules(rules, anyScript), { path, query }), { vary: [], ...expected }),
      );
    }
  });
}

describe('compileRules', () => {
  test('compiles each rule once into its regex, negation and flags', () => {
    const source = { pattern: '!^/a$', substitution: '-', flags: ['nc', 'R=301', 'L'], comment: 'why' };
    assert.deepEqual(compileRules({ rules: [source] }, anyScript), {
      rules: [
        {
          index: 0,
          source,
          regex: /^\/a$/i,
          negate: true,
          flags: {
            last: true,
            end: false,
            qsa: false,
            qsd: false,
            nocase: true,
            noescape: false,
            escape: false,
            chain: false,
            skip: 0,
            discardPathInfo: false,
            redirect: 301,
            forbidden: false,
            gone: false,
            proxy: false,
          },
          conditions: [],
          template: { keep: true, absolute: false, path: [], query: null },
        },
      ],
      directory: null,
      base: null,
      representationSuffixes: true,
    });
  });

  test('accepts a bare array as well as {rules}', () => {
    const rules = [{ pattern: '^/a$', substitution: '/b' }];
    assert.deepEqual(compileRules(rules, anyScript), compileRules({ rules, comment: 'the table' }, anyScript));
  });

  test('asks scriptExists about each script a substitution names, with or without a leading slash', () => {
    const asked: string[] = [];
    const scriptExists = (name: string): boolean => asked.push(name) > 0;
    compileRules(
      [
        { pattern: '^/$', substitution: '/index.php' },
        { pattern: '^/p/(.*)$', substitution: 'person.php?slug=$1' },
        { pattern: '^/(.*)$', substitution: '/$1.php' },
      ],
      { scriptExists },
    );
    assert.deepEqual(asked, ['index', 'person']);
  });
});

interface ConfigErrorCase {
  name: string;
  rule: unknown;
  message: string;
}

// Each broken rule sits third, after two good ones, so the message must say "rule 3".
const goodRule = { pattern: '^/$', substitution: '/index.php', flags: ['L'] };
const scripts = { file: 'rules.json', scriptExists: (name: string) => name === 'index' || name === 'person' };

const configErrorCases: ConfigErrorCase[] = [
  {
    name: 'rejects a rule that is not an object',
    rule: 42,
    message:
      'rules.json: rule 3: expected an object, got number; write each rule as {"pattern": "...", "substitution": "...", "flags": ["L"]}.',
  },
  {
    name: 'rejects an unknown key such as a misspelt substitution',
    rule: { pattern: '^/a$', substition: '/b' },
    message:
      'rules.json: rule 3 (pattern "^/a$"): unknown key "substition"; the keys are pattern, substitution, flags, conditions and comment, so check the spelling.',
  },
  {
    name: 'rejects a missing pattern',
    rule: { substitution: '/b' },
    message: 'rules.json: rule 3: "pattern" must be a string (a regular expression), got undefined.',
  },
  {
    name: 'rejects a substitution that is not a string',
    rule: { pattern: '^/a$', substitution: 7 },
    message:
      'rules.json: rule 3 (pattern "^/a$"): "substitution" must be a string, got number; use "-" to leave the path unchanged.',
  },
  {
    name: 'rejects an empty substitution',
    rule: { pattern: '^/a$', substitution: '' },
    message: 'rules.json: rule 3 (pattern "^/a$"): the substitution is empty; use "-" to leave the path unchanged.',
  },
  {
    name: 'rejects flags that are not an array',
    rule: { pattern: '^/a$', substitution: '/b', flags: 'L' },
    message:
      'rules.json: rule 3 (pattern "^/a$"): "flags" must be an array of strings such as ["L", "QSA"], got string.',
  },
  {
    name: 'rejects flags that are not strings',
    rule: { pattern: '^/a$', substitution: '/b', flags: [1] },
    message:
      'rules.json: rule 3 (pattern "^/a$"): "flags" must be an array of strings such as ["L", "QSA"], got an array.',
  },
  {
    name: 'rejects a comment that is not a string',
    rule: { pattern: '^/a$', substitution: '/b', comment: ['x'] },
    message: 'rules.json: rule 3 (pattern "^/a$"): "comment" must be a string, got an array.',
  },
  {
    name: 'rejects a pattern that does not compile and quotes the RegExp error',
    rule: { pattern: '^/(a', substitution: '/b' },
    message:
      'rules.json: rule 3 (pattern "^/(a"): the pattern does not compile (Invalid regular expression: /^/(a/: Unterminated group); fix the regular expression (JavaScript syntax, close to PCRE).',
  },
  {
    name: 'rejects an unknown flag',
    rule: { pattern: '^/a$', substitution: '/b', flags: ['L', 'X'] },
    message:
      'rules.json: rule 3 (pattern "^/a$"): unknown flag "X"; use L, END, QSA, QSD, NC, NE, B, C, S=N, DPI, R, R=301|302|303|307|308, F, G or P (or their long names).',
  },
  {
    name: 'rejects a value on a flag that takes none',
    rule: { pattern: '^/a$', substitution: '/b', flags: ['L=1'] },
    message:
      'rules.json: rule 3 (pattern "^/a$"): unknown flag "L=1"; use L, END, QSA, QSD, NC, NE, B, C, S=N, DPI, R, R=301|302|303|307|308, F, G or P (or their long names).',
  },
  {
    name: 'rejects a redirect status outside 301, 302, 303, 307 and 308',
    rule: { pattern: '^/a$', substitution: '/b', flags: ['R=200'] },
    message:
      'rules.json: rule 3 (pattern "^/a$"): flag "R=200" has an unsupported status; use R=301, R=302, R=303, R=307 or R=308.',
  },
  {
    name: 'rejects P with a substitution that is not an absolute http(s) URL',
    rule: { pattern: '^/api/(.*)$', substitution: '/upstream/$1', flags: ['P'] },
    message:
      'rules.json: rule 3 (pattern "^/api/(.*)$"): flag P needs an absolute http:// or https:// substitution, got "/upstream/$1"; write the upstream URL, for example "http://127.0.0.1:8080$0".',
  },
  ...[
    ['F', 'R'],
    ['F', 'P'],
    ['G', 'R=301'],
    ['G', 'P'],
    ['P', 'R'],
    ['F', 'G'],
  ].map(
    ([first = '', second = '']): ConfigErrorCase => ({
      name: `rejects the flags ${first} and ${second} together`,
      rule: { pattern: '^/a$', substitution: 'http://example.org/', flags: [first, second] },
      message: `rules.json: rule 3 (pattern "^/a$"): flags ${first} and ${second.charAt(0)} cannot be combined, since each decides the answer on its own; keep one of them.`,
    }),
  ),
  {
    name: 'rejects a substitution naming a script that does not exist',
    rule: { pattern: '^/n/([0-9]+)$', substitution: '/nope.php?id=$1' },
    message:
      'rules.json: rule 3 (pattern "^/n/([0-9]+)$"): the substitution names scripts/nope.ts, which does not exist; create that script or correct the name in the substitution.',
  },
  {
    name: 'rejects a relative substitution naming a script that does not exist',
    rule: { pattern: '^/n$', substitution: 'nope.php' },
    message:
      'rules.json: rule 3 (pattern "^/n$"): the substitution names scripts/nope.ts, which does not exist; create that script or correct the name in the substitution.',
  },
  {
    name: 'rejects a back reference to a group the pattern does not have',
    rule: { pattern: '^/a/([0-9]+)$', substitution: '/person.php?pid=$1&x=$2' },
    message:
      'rules.json: rule 3 (pattern "^/a/([0-9]+)$"): the substitution uses $2, but the pattern has 1 capturing group; add a group to the pattern or refer to $0..$1.',
  },
  {
    name: 'rejects $1 when the pattern has no group at all',
    rule: { pattern: '^/a/(?:x)$', substitution: '/b/$1' },
    message:
      'rules.json: rule 3 (pattern "^/a/(?:x)$"): the substitution uses $1, but the pattern has 0 capturing groups; add a group to the pattern or refer to $0..$0.',
  },
  {
    name: 'rejects a URL scheme other than http and https',
    rule: { pattern: '^/a$', substitution: 'ftp://example.org/' },
    message:
      'rules.json: rule 3 (pattern "^/a$"): the substitution "ftp://example.org/" uses a URL scheme other than http or https; only http:// and https:// URLs are supported.',
  },
];

describe('compileRules: validation', () => {
  for (const { name, rule, message } of configErrorCases) {
    test(name, () => {
      assert.throws(() => compileRules({ rules: [goodRule, goodRule, rule] }, scripts), {
        name: 'RewriteConfigError',
        message,
      });
    });
  }

  test('rejects input that is neither an array nor {rules}', () => {
    assert.throws(
      () => compileRules('rules', scripts),
      new RewriteConfigError(
        'rules.json: expected {"rules": [...]} or an array of rules, got string; write the table as {"rules": [{"pattern": "^/$", "substitution": "/index.php", "flags": ["L"]}]}.',
      ),
    );
  });

  test('rejects an unknown top-level key', () => {
    assert.throws(
      () => compileRules({ rule: [] }, scripts),
      new RewriteConfigError(
        'rules.json: unknown top-level key "rule"; the table holds "rules" and optionally "comment", "directory", "base" and "representationSuffixes".',
      ),
    );
  });

  test('leaves the file name out of the message when none is given', () => {
    assert.throws(
      () => compileRules([{ pattern: '^/a$', substitution: '/b', flags: ['Z'] }], anyScript),
      new RewriteConfigError(
        'rule 1 (pattern "^/a$"): unknown flag "Z"; use L, END, QSA, QSD, NC, NE, B, C, S=N, DPI, R, R=301|302|303|307|308, F, G or P (or their long names).',
      ),
    );
  });
});

describe('loadRules', () => {
  const folder = mkdtemp(join(tmpdir(), 'rewrite-test-'));

  test('loads a table file', async () => {
    const file = join(await folder, 'good.json');
    await writeFile(file, JSON.stringify({ rules: [{ pattern: '^/a$', substitution: '/b' }] }));
    const rules = await loadRules(file, anyScript);
    assert.deepEqual(rewriteUrl(rules, { path: '/a', query: '' }), {
      kind: 'pass',
      path: '/b',
      query: '',
      rule: 0,
      vary: [],
    });
  });

  test('names the file when its JSON does not parse', async () => {
    const file = join(await folder, 'bad.json');
    await writeFile(file, '{"rules": [,]}');
    await assert.rejects(loadRules(file, anyScript), (error: unknown) => {
      assert.ok(error instanceof RewriteConfigError);
      assert.ok(error.message.startsWith(`${file}: the rewrite table is not valid JSON (`), error.message);
      assert.ok(error.message.endsWith('); fix the syntax and start again.'), error.message);
      return true;
    });
  });

  test('names the file when it cannot be read', async () => {
    const file = join(await folder, 'missing.json');
    await assert.rejects(
      loadRules(file, anyScript),
      new RewriteConfigError(
        `${file}: cannot read the rewrite table (ENOENT: no such file or directory, open '${file}'); check that the file exists and is readable.`,
      ),
    );
  });

  test('names the file and the rule when a rule is wrong', async () => {
    const file = join(await folder, 'typo.json');
    await writeFile(file, JSON.stringify([{ pattern: '^/a$', substitution: '/b', flags: ['QAS'] }]));
    await assert.rejects(
      loadRules(file, anyScript),
      new RewriteConfigError(
        `${file}: rule 1 (pattern "^/a$"): unknown flag "QAS"; use L, END, QSA, QSD, NC, NE, B, C, S=N, DPI, R, R=301|302|303|307|308, F, G or P (or their long names).`,
      ),
    );
  });
});

describe('rewrite-rules.json: every URL of docs/interface.md', () => {
  const scriptNames = new Set([
    'index',
    'personen',
    'person',
    'werk',
    'search',
    'entlehnte',
    'login',
    'logout',
    'person-neu',
    'person-bearbeiten',
    'person-werke',
    'werk-neu',
    'werk-bearbeiten',
    'entlehnung',
    'feed',
    'sitemap',
    'robots',
    'openapi',
    'me',
    'person-loeschen',
    'werk-loeschen',
    'person-bild',
  ]);
  const tableFile = fileURLToPath(new URL('../../rewrite-rules.json', import.meta.url));
  const loaded = loadRules(tableFile, { scriptExists: (name) => scriptNames.has(name) });

  const cases: [url: string, expected: Decision][] = [
    ['/', { kind: 'pass', path: '/index.php', query: '', rule: 2 }],
    ['/index', { kind: 'pass', path: '/index.php', query: '', rule: 3 }],
    ['/personen?offset=50', { kind: 'pass', path: '/personen.php', query: 'offset=50', rule: 4 }],
    ['/person/42', { kind: 'pass', path: '/person.php', query: 'pid=42', rule: 5 }],
    ['/person/42?x=1', { kind: 'pass', path: '/person.php', query: 'pid=42&x=1', rule: 5 }],
    ['/person/max-muster', { kind: 'pass', path: '/person.php', query: 'slug=max-muster', rule: 6 }],
    ['/person/1a', { kind: 'pass', path: '/person.php', query: 'slug=1a', rule: 6 }],
    ['/werk/7', { kind: 'pass', path: '/werk.php', query: 'id=7', rule: 7 }],
    [
      '/search?query=any,contains,x&offset=10',
      { kind: 'pass', path: '/search.php', query: 'query=any,contains,x&offset=10', rule: 8 },
    ],
    ['/entlehnte/3', { kind: 'pass', path: '/entlehnte.php', query: 'uid=3', rule: 9 }],
    ['/entlehnte/3?offset=50', { kind: 'pass', path: '/entlehnte.php', query: 'uid=3&offset=50', rule: 9 }],
    ['/entlehnte/abc', { kind: 'pass', path: '/entlehnte/abc', query: '', rule: null }],
    ['/login?back=/entlehnte/3', { kind: 'pass', path: '/login.php', query: 'back=/entlehnte/3', rule: 10 }],
    ['/logout', { kind: 'pass', path: '/logout.php', query: '', rule: 11 }],
    ['/personen/neu', { kind: 'pass', path: '/person-neu.php', query: '', rule: 12 }],
    ['/person/7/bearbeiten', { kind: 'pass', path: '/person-bearbeiten.php', query: 'pid=7', rule: 13 }],
    [
      '/person/max-muster/bearbeiten',
      { kind: 'pass', path: '/person-bearbeiten.php', query: 'slug=max-muster', rule: 14 },
    ],
    ['/person/7/werke', { kind: 'pass', path: '/person-werke.php', query: 'pid=7', rule: 15 }],
    ['/person/max-muster/werke', { kind: 'pass', path: '/person-werke.php', query: 'slug=max-muster', rule: 16 }],
    ['/person/7/werke/neu', { kind: 'pass', path: '/werk-neu.php', query: 'pid=7', rule: 17 }],
    ['/person/max-muster/werke/neu', { kind: 'pass', path: '/werk-neu.php', query: 'slug=max-muster', rule: 18 }],
    ['/werk/7/bearbeiten', { kind: 'pass', path: '/werk-bearbeiten.php', query: 'id=7', rule: 19 }],
    ['/entlehnte/3/14', { kind: 'pass', path: '/entlehnung.php', query: 'uid=3&wid=14', rule: 20 }],
    ['/feed', { kind: 'pass', path: '/feed.php', query: '', rule: 21 }],
    ['/person/7/feed', { kind: 'pass', path: '/feed.php', query: 'pid=7', rule: 22 }],
    ['/person/max-muster/feed', { kind: 'pass', path: '/feed.php', query: 'slug=max-muster', rule: 23 }],
    ['/sitemap?werke=2', { kind: 'pass', path: '/sitemap.php', query: 'werke=2', rule: 24 }],
    ['/robots.txt', { kind: 'pass', path: '/robots.php', query: '', rule: 25 }],
    ['/openapi', { kind: 'pass', path: '/openapi.php', query: '', rule: 26 }],
    ['/me', { kind: 'pass', path: '/me.php', query: '', rule: 27 }],
    ['/person/7/loeschen', { kind: 'pass', path: '/person-loeschen.php', query: 'pid=7', rule: 28 }],
    ['/person/max-muster/loeschen', { kind: 'pass', path: '/person-loeschen.php', query: 'slug=max-muster', rule: 29 }],
    ['/werk/7/loeschen', { kind: 'pass', path: '/werk-loeschen.php', query: 'id=7', rule: 30 }],
    ['/person/7/bild', { kind: 'pass', path: '/person-bild.php', query: 'pid=7', rule: 31 }],
    ['/person/max-muster/bild', { kind: 'pass', path: '/person-bild.php', query: 'slug=max-muster', rule: 32 }],
    [
      '/bilder/0123456789abcdef0123456789abcdef-480.webp',
      { kind: 'pass', path: '/bilder/0123456789abcdef0123456789abcdef-480.webp', query: '', rule: null },
    ],
    ['/person/max-muster/werke/7', { kind: 'pass', path: '/person/max-muster/werke/7', query: '', rule: null }],
    ['/entlehnte/3/abc', { kind: 'pass', path: '/entlehnte/3/abc', query: '', rule: null }],
    ['/personen/', { kind: 'redirect', status: 301, location: '/personen', rule: 1 }],
    ['/personen/?offset=50', { kind: 'redirect', status: 301, location: '/personen?offset=50', rule: 1 }],
    ['/.env', { kind: 'forbidden', rule: 0 }],
    ['/.git/config', { kind: 'forbidden', rule: 0 }],
    ['/.well-known/security.txt', { kind: 'pass', path: '/.well-known/security.txt', query: '', rule: null }],
    ['/../server.php', { kind: 'pass', path: '/../server.php', query: '', rule: null }],
    ['//evil.example/', { kind: 'pass', path: '//evil.example/', query: '', rule: null }],
    ['/person.php?pid=3', { kind: 'pass', path: '/person.php', query: 'pid=3', rule: null }],
    ['/werk/abc', { kind: 'pass', path: '/werk/abc', query: '', rule: null }],
    ['/foo', { kind: 'pass', path: '/foo', query: '', rule: null }],
  ];

  for (const [url, expected] of cases) {
    test(`maps ${url} to ${JSON.stringify(expected)}`, async () => {
      const mark = url.indexOf('?');
      const result = rewriteUrl(await loaded, {
        path: mark === -1 ? url : url.slice(0, mark),
        query: mark === -1 ? '' : url.slice(mark + 1),
      });
      assert.deepEqual(result, { vary: [], ...expected });
    });
  }

  test('fails to load when one of its scripts is missing', async () => {
    await assert.rejects(
      loadRules(tableFile, { scriptExists: (name) => name !== 'werk' }),
      new RewriteConfigError(
        `${tableFile}: rule 8 (pattern "^/werk/([0-9]+)$"): the substitution names scripts/werk.ts, which does not exist; create that script or correct the name in the substitution.`,
      ),
    );
  });
});
