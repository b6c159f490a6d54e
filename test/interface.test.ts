// The examples of docs/interface.md are the server's bytes: every code block headed by a `GET`
// line is fetched from the demo data and compared, so the documentation cannot drift from what
// the server writes. A line of only "…" stands for any number of lines; loan dates depend on the
// day the demo data was loaded, so dates are compared as YYYY-MM-DD.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { TestServer } from './helpers.ts';
import { root, startTestServer } from './helpers.ts';

interface Example {
  target: string;
  credentials: string | null;
  language: string;
  lines: string[];
  /** Line of the docs file, for the message. */
  at: number;
}

function readExamples(): Example[] {
  const lines = readFileSync(path.join(root, 'docs/interface.md'), 'utf8').split('\n');
  const examples: Example[] = [];
  for (let i = 0; i < lines.length; i++) {
    const head = /^`GET (\S+)`(?: with `-u ([^`]+)`)?$/.exec(lines[i] as string);
    if (!head) continue;
    let start = i + 1;
    while (lines[start] === '') start++;
    const fence = /^```(json|xml)$/.exec(lines[start] ?? '');
    assert.ok(fence, `docs/interface.md:${i + 1}: a GET line is followed by a json or xml code block`);
    const end = lines.indexOf('```', start + 1);
    examples.push({
      target: head[1] as string,
      credentials: head[2] ?? null,
      language: fence[1] as string,
      lines: lines.slice(start + 1, end),
      at: i + 1,
    });
    i = end;
  }
  return examples;
}

/** Whether the actual lines are the example's, where a line of "…" matches any run of lines. */
function matchesExample(example: readonly string[], actual: readonly string[]): boolean {
  const dates = (line: string) => line.replace(/\d{4}-\d{2}-\d{2}/g, 'YYYY-MM-DD');
  const memo = new Map<string, boolean>();
  const match = (e: number, a: number): boolean => {
    const key = `${e},${a}`;
    if (memo.has(key)) return memo.get(key) as boolean;
    let result: boolean;
    if (e === example.length) result = a === actual.length;
    else if ((example[e] as string).trim() === '…') result = match(e + 1, a) || (a < actual.length && match(e, a + 1));
    else
      result = a < actual.length && dates(example[e] as string) === dates(actual[a] as string) && match(e + 1, a + 1);
    memo.set(key, result);
    return result;
  };
  return match(0, 0);
}

describe('the examples of docs/interface.md', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer({ BASE_URL: 'http://127.0.0.1:8080' });
  });
  after(() => server.close());

  const examples = readExamples();
  test('there are examples of every resource in JSON and XML', () => {
    const targets = examples.map((e) => e.target);
    for (const resource of ['/person/', '/werk/', '/personen', '/index', '/search', '/entlehnte/']) {
      for (const format of ['.json', '.xml']) {
        assert.ok(
          targets.some((t) => t.startsWith(resource) && t.includes(format)),
          `${resource}…${format}`,
        );
      }
    }
  });

  for (const example of examples) {
    test(`GET ${example.target} (docs/interface.md:${example.at}) gives the bytes shown`, async () => {
      const headers: Record<string, string> = example.credentials
        ? { authorization: `Basic ${Buffer.from(example.credentials).toString('base64')}` }
        : {};
      const res = await fetch(`${server.origin}${example.target}`, { headers });
      assert.match(
        res.headers.get('content-type') ?? '',
        example.language === 'json' ? /\/(problem\+)?json;/ : /\/(problem\+)?xml;/,
      );
      const actual = (await res.text()).replace(/\n$/, '').split('\n');
      assert.ok(
        matchesExample(example.lines, actual),
        `docs/interface.md:${example.at} shows\n${example.lines.join('\n')}\n\nbut the server wrote\n${actual.join('\n')}`,
      );
    });
  }

  test('an example that differs from the bytes is caught', () => {
    assert.equal(matchesExample(['{', '  "a": 1', '}'], ['{', '  "a": 2', '}']), false);
    assert.equal(matchesExample(['{', '  …', '}'], ['{', '  "a": 2', '  "b": 3', '}']), true);
    assert.equal(matchesExample(['{', '  "bis": "2026-01-01"', '}'], ['{', '  "bis": "2027-05-09"', '}']), true);
    assert.equal(matchesExample(['{', '  …', '  "z": 0', '}'], ['{', '  "a": 2', '}']), false);
  });
});
