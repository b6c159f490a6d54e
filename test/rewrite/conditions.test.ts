// Specifies RewriteCond in the rewrite table and the flags END, QSD, NE, B, C and S=N, in
// server context (our own table), with the Vary list that header conditions produce.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { compileRules, rewriteUrl } from '../../lib/rewrite/index.ts';
import type { RewriteRequest, RewriteResult, RewriteRuleSource } from '../../lib/rewrite/index.ts';

const anyScript = { scriptExists: () => true };
const files = new Set(['/robots.txt', '/index.php']);
const folders = new Set(['/', '/img']);
const site = { fileExists: (p: string) => files.has(p), dirExists: (p: string) => folders.has(p) };

type Decision = RewriteResult extends infer R
  ? R extends unknown
    ? Omit<R, 'vary'> & { vary?: string[] }
    : never
  : never;
interface Case {
  name: string;
  rules: RewriteRuleSource[];
  request: Partial<RewriteRequest> & { path: string };
  expected: Decision;
}

const pass = (path: string, query: string, rule: number | null, vary: string[] = []): Decision => ({
  kind: 'pass',
  path,
  query,
  rule,
  vary,
});

const conditionCases: Case[] = [
  {
    name: 'applies a rule when its regex condition matches the host',
    rules: [{ pattern: '^/a$', substitution: '/b', conditions: [{ test: '%{HTTP_HOST}', pattern: '^www\\.' }] }],
    request: { path: '/a', headers: { host: 'www.example.org' } },
    expected: pass('/b', '', 0),
  },
  {
    name: 'skips a rule when its condition does not match, and adds nothing to Vary',
    rules: [{ pattern: '^/a$', substitution: '/b', conditions: [{ test: '%{HTTP_USER_AGENT}', pattern: 'bot' }] }],
    request: { path: '/a', headers: { 'user-agent': 'curl' } },
    expected: pass('/a', '', null),
  },
  {
    name: 'adds a request header that a holding condition read to Vary, but never Host',
    rules: [
      {
        pattern: '^/a$',
        substitution: '/b',
        conditions: [
          { test: '%{HTTP_HOST}', pattern: '.' },
          { test: '%{HTTP_ACCEPT}', pattern: 'json' },
          { test: '%{HTTP:X-Mode}', pattern: '^on$' },
        ],
      },
    ],
    request: { path: '/a', headers: { host: 'h', accept: 'application/json', 'x-mode': 'on' } },
    expected: pass('/b', '', 0, ['Accept', 'X-Mode']),
  },
  {
    name: 'leaves a header out of Vary when the condition has NV',
    rules: [
      { pattern: '^/a$', substitution: '/b', conditions: [{ test: '%{HTTP_REFERER}', pattern: 'x', flags: ['NV'] }] },
    ],
    request: { path: '/a', headers: { referer: 'http://x/' } },
    expected: pass('/b', '', 0),
  },
  {
    name: 'negates a condition with "!"',
    rules: [{ pattern: '^/a$', substitution: '/b', conditions: [{ test: '%{REQUEST_METHOD}', pattern: '!^GET$' }] }],
    request: { path: '/a', method: 'POST' },
    expected: pass('/b', '', 0),
  },
  {
    name: 'matches a condition case-insensitively with NC',
    rules: [
      {
        pattern: '^/a$',
        substitution: '/b',
        conditions: [{ test: '%{QUERY_STRING}', pattern: '^LANG=de$', flags: ['NC'] }],
      },
    ],
    request: { path: '/a', query: 'lang=DE' },
    expected: pass('/b', 'lang=DE', 0),
  },
  {
    name: 'holds when one of the [OR] alternatives holds',
    rules: [
      {
        pattern: '^/a$',
        substitution: '/b',
        conditions: [
          { test: '%{HTTPS}', pattern: '=on', flags: ['OR'] },
          { test: '%{HTTP:X-Forwarded-Proto}', pattern: '=https' },
          { test: '%{REQUEST_METHOD}', pattern: '=GET' },
        ],
      },
    ],
    request: { path: '/a', headers: { 'x-forwarded-proto': 'https' } },
    expected: pass('/b', '', 0, ['X-Forwarded-Proto']),
  },
  {
    name: 'fails when no [OR] alternative holds',
    rules: [
      {
        pattern: '^/a$',
        substitution: '/b',
        conditions: [
          { test: '%{HTTPS}', pattern: '=on', flags: ['OR'] },
          { test: '%{REQUEST_SCHEME}', pattern: '=https' },
        ],
      },
    ],
    request: { path: '/a', https: false },
    expected: pass('/a', '', null),
  },
  {
    name: 'expands %N to the groups of the last matched condition, and $N to the pattern groups',
    rules: [
      {
        pattern: '^/p/(.*)$',
        substitution: '/x.php?id=%2&o=%1&p=$1',
        conditions: [
          { test: '%{QUERY_STRING}', pattern: '(^|&)id=([0-9]+)' },
          { test: '%{REQUEST_URI}', pattern: '!nomatch' },
        ],
      },
    ],
    request: { path: '/p/q', query: 'a=1&id=42' },
    expected: pass('/x.php', 'id=42&o=%26&p=q', 0),
  },
  {
    name: 'compares strings with =, and ="" with the empty string',
    rules: [
      {
        pattern: '^/a$',
        substitution: '/empty',
        flags: ['L'],
        conditions: [{ test: '%{QUERY_STRING}', pattern: '=""' }],
      },
      { pattern: '^/a$', substitution: '/full', flags: ['L'] },
    ],
    request: { path: '/a' },
    expected: pass('/empty', '', 0),
  },
  {
    name: 'compares < and > as mod_rewrite does: a longer string is greater',
    rules: [
      {
        pattern: '^/a$',
        substitution: '/b',
        conditions: [
          { test: '%{QUERY_STRING}', pattern: '>zz' },
          { test: '%{QUERY_STRING}', pattern: '<=bbbb' },
        ],
      },
    ],
    request: { path: '/a', query: 'aaa' },
    expected: pass('/b', 'aaa', 0),
  },
  {
    name: 'tests -f and -d against the site files',
    rules: [
      {
        pattern: '^',
        substitution: '/index.php',
        flags: ['L'],
        conditions: [
          { test: '%{REQUEST_FILENAME}', pattern: '!-f' },
          { test: '%{REQUEST_FILENAME}', pattern: '!-d' },
        ],
      },
    ],
    request: { path: '/robots.txt', ...site },
    expected: pass('/robots.txt', '', null),
  },
  {
    name: 'rewrites a path that is neither a file nor a folder',
    rules: [
      {
        pattern: '^',
        substitution: '/index.php',
        flags: ['L'],
        conditions: [
          { test: '%{DOCUMENT_ROOT}/%{REQUEST_URI}', pattern: '!-f' },
          { test: '%{REQUEST_FILENAME}', pattern: '!-d' },
        ],
      },
    ],
    request: { path: '/blog/1', ...site },
    expected: pass('/index.php', '', 0),
  },
  {
    name: 'reads THE_REQUEST, the request line as sent',
    rules: [
      {
        pattern: '^/index\\.php$',
        substitution: '/',
        flags: ['R=301'],
        conditions: [{ test: '%{THE_REQUEST}', pattern: '^GET /index\\.php[ ?]' }],
      },
    ],
    request: { path: '/index.php', requestLine: 'GET /index.php HTTP/1.1' },
    expected: { kind: 'redirect', status: 301, location: '/', rule: 0 },
  },
];

const flagCases: Case[] = [
  {
    name: 'stops at END like L',
    rules: [
      { pattern: '^/a$', substitution: '/b', flags: ['END'] },
      { pattern: '^/b$', substitution: '/c' },
    ],
    request: { path: '/a' },
    expected: pass('/b', '', 0),
  },
  {
    name: 'discards the query string with QSD',
    rules: [{ pattern: '^/a$', substitution: '/b', flags: ['QSD'] }],
    request: { path: '/a', query: 'x=1' },
    expected: pass('/b', '', 0),
  },
  {
    name: 'lets QSD win over QSA',
    rules: [{ pattern: '^/a$', substitution: '/b?y=2', flags: ['QSA', 'QSD'] }],
    request: { path: '/a', query: 'x=1' },
    expected: pass('/b', 'y=2', 0),
  },
  {
    name: "escapes back references as Apache's B does: letters, digits and _ stay, a space is +",
    rules: [{ pattern: '^/t/(.*)$', substitution: '/s.php?tag=$1', flags: ['B'] }],
    request: { path: '/t/rock & roll-ü' },
    expected: pass('/s.php', 'tag=rock+%26+roll%2D%C3%BC', 0),
  },
  {
    name: 'skips the rest of a chain when a chained rule does not match',
    rules: [
      { pattern: '^/a', substitution: '/b', flags: ['C'] },
      { pattern: '^/b', substitution: '/c', flags: ['C'] },
      { pattern: '^/c', substitution: '/d' },
      { pattern: '^/x$', substitution: '/y' },
    ],
    request: { path: '/x' },
    expected: pass('/y', '', 3),
  },
  {
    name: 'runs the whole chain when every rule matches',
    rules: [
      { pattern: '^/a', substitution: '/b', flags: ['C'] },
      { pattern: '^/b', substitution: '/c' },
    ],
    request: { path: '/a' },
    expected: pass('/c', '', 1),
  },
  {
    name: 'skips N rules after a match with S=N',
    rules: [
      { pattern: '^/a$', substitution: '-', flags: ['S=2'] },
      { pattern: '^/a$', substitution: '/one' },
      { pattern: '^/a$', substitution: '/two' },
      { pattern: '^/a$', substitution: '/three' },
    ],
    request: { path: '/a' },
    expected: pass('/three', '', 3),
  },
  {
    name: 'leaves a redirect unescaped with NE, so a fragment survives',
    rules: [{ pattern: '^/a$', substitution: '/b#top', flags: ['R=301', 'NE'] }],
    request: { path: '/a' },
    expected: { kind: 'redirect', status: 301, location: '/b#top', rule: 0 },
  },
];

for (const [group, cases] of [
  ['conditions', conditionCases],
  ['flags', flagCases],
] as const) {
  describe(`rewriteUrl: ${group}`, () => {
    for (const { name, rules, request, expected } of cases) {
      test(name, () => {
        const result = rewriteUrl(compileRules(rules, anyScript), { query: '', ...request });
        assert.deepEqual(result, { vary: [], ...expected });
      });
    }
  });
}

describe('compileRules: conditions and new flags', () => {
  const cases: [string, RewriteRuleSource, string][] = [
    [
      'rejects an unknown variable',
      { pattern: '^/a$', substitution: '/b', conditions: [{ test: '%{SERVER_SOFTWARE}', pattern: 'x' }] },
      'rule 1 (pattern "^/a$"): the variable %{SERVER_SOFTWARE} is not supported; use one of REQUEST_URI, QUERY_STRING, REQUEST_METHOD, REQUEST_FILENAME, SCRIPT_FILENAME, THE_REQUEST, HTTPS, REQUEST_SCHEME, DOCUMENT_ROOT, REMOTE_ADDR, HTTP_HOST, HTTP_ACCEPT, HTTP_COOKIE, HTTP_REFERER, HTTP_USER_AGENT, HTTP_FORWARDED, HTTP_PROXY_CONNECTION, HTTP:<header>.',
    ],
    [
      'points a header variable Apache does not know to %{HTTP:…}',
      { pattern: '^/a$', substitution: '/b', conditions: [{ test: '%{HTTP_X_FORWARDED_PROTO}', pattern: 'x' }] },
      'rule 1 (pattern "^/a$"): %{HTTP_X_FORWARDED_PROTO} is empty in Apache, which names only a few headers this way; write %{HTTP:X-Forwarded-Proto} to read that header.',
    ],
    [
      'rejects an unknown condition flag',
      {
        pattern: '^/a$',
        substitution: '/b',
        conditions: [{ test: '%{HTTPS}', pattern: 'on', flags: ['NOCASE', 'X'] }],
      },
      'rule 1 (pattern "^/a$"): unknown condition flag "X"; use NC, OR or NV.',
    ],
    [
      'rejects a condition pattern that does not compile',
      { pattern: '^/a$', substitution: '/b', conditions: [{ test: '%{HTTPS}', pattern: '(' }] },
      'rule 1 (pattern "^/a$"): the condition pattern "(" does not compile (Invalid regular expression: /(/: Unterminated group); fix the regular expression.',
    ],
    [
      'rejects a file test other than -f and -d',
      { pattern: '^/a$', substitution: '/b', conditions: [{ test: '%{REQUEST_FILENAME}', pattern: '-s' }] },
      'rule 1 (pattern "^/a$"): the condition test "-s" is not supported; use a regular expression, =, <, >, <=, >=, -f or -d.',
    ],
    [
      'rejects a condition without a pattern',
      { pattern: '^/a$', substitution: '/b', conditions: [{ test: '%{HTTPS}' } as never] },
      'rule 1 (pattern "^/a$"): a condition needs "pattern", such as "!-f" or "^www\\\\.".',
    ],
    [
      'rejects a rewrite map',
      { pattern: '^/a$', substitution: '/${lower:$1}' },
      'rule 1 (pattern "^/a$"): the RewriteMap lookup ${lower:$1} is not supported; there are no rewrite maps, so spell the mapping out as rules.',
    ],
    [
      'rejects S without a number',
      { pattern: '^/a$', substitution: '-', flags: ['S=x'] },
      'rule 1 (pattern "^/a$"): flag "S=x" needs a number of rules to skip, such as S=2.',
    ],
  ];
  for (const [name, rule, message] of cases) {
    test(name, () => assert.throws(() => compileRules([rule], anyScript), { name: 'RewriteConfigError', message }));
  }
});
