// Development mode, the PHP habit "save and reload": an edited script or template takes effect on
// the next request without a restart, a broken script shows the parse error with its line, the
// fix brings the page back, and hundreds of edits leave the heap where it was.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, test } from 'node:test';
import type { TestServer } from '../helpers.ts';
import { rawRequest, root, startTestServer } from '../helpers.ts';

const dir = path.join(root, 'test/fixtures', `tmp-reload-${process.pid}`);
const scriptFile = path.join(dir, 'scripts', 'hello.ts');
const templateFile = path.join(dir, 'templates', 'hello.ejs');

const script = (greeting: string) =>
  [
    '// A page edited while the server runs.',
    'export async function GET() {',
    `  const greeting = ${JSON.stringify(greeting)};`,
    "  return { path: '/hello', title: 'Hello', data: { greeting } };",
    '}',
    '',
  ].join('\n');
const template = (tag: string) =>
  `<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>Hello</title></head>\n<body><${tag}><%= data.greeting %></${tag}></body></html>\n`;

let server: TestServer;

before(async () => {
  mkdirSync(path.dirname(scriptFile), { recursive: true });
  mkdirSync(path.dirname(templateFile), { recursive: true });
  writeFileSync(scriptFile, script('Hallo 1'));
  writeFileSync(templateFile, template('p'));
  writeFileSync(
    path.join(dir, 'rules.json'),
    JSON.stringify([{ pattern: '^/hello$', substitution: '/hello.php', flags: ['L'] }]),
  );
  server = await startTestServer({
    DISPLAY_ERRORS: '1',
    SCRIPTS_DIR: path.join(dir, 'scripts'),
    TEMPLATES_DIR: path.join(dir, 'templates'),
    REWRITE_RULES: path.join(dir, 'rules.json'),
  });
});
after(async () => {
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('a running development server', () => {
  test('serves an edited script on the next request', async () => {
    assert.equal((await rawRequest(server.origin, '/hello.json')).body, '{\n  "greeting": "Hallo 1"\n}\n');
    writeFileSync(scriptFile, script('Hallo 2'));
    assert.equal((await rawRequest(server.origin, '/hello.json')).body, '{\n  "greeting": "Hallo 2"\n}\n');
  });

  test('renders an edited template on the next request', async () => {
    assert.match((await rawRequest(server.origin, '/hello')).body, /<body><p>Hallo 2<\/p><\/body>/);
    writeFileSync(templateFile, template('h1'));
    assert.match((await rawRequest(server.origin, '/hello')).body, /<body><h1>Hallo 2<\/h1><\/body>/);
  });

  test('shows the parse error of a broken script with its line, and the page again once fixed', async () => {
    writeFileSync(scriptFile, script('Hallo 3').replace("title: 'Hello',", "title: 'Hello' data,"));
    const broken = await rawRequest(server.origin, '/hello');
    assert.equal(broken.status, 500);
    assert.match(broken.body, /<h1>Parse error<\/h1>/);
    assert.match(
      broken.body,
      new RegExp(
        `Expected &#34;}&#34; but found &#34;data&#34; in <b>test/fixtures/tmp-reload-${process.pid}/scripts/hello\\.ts</b> on line <b>4</b>`,
      ),
    );
    assert.match(
      broken.body,
      /<span class="here">4 &gt;   return \{ path: &#39;\/hello&#39;, title: &#39;Hello&#39; data, data: \{ greeting \} \};<\/span>/,
    );
    writeFileSync(scriptFile, script('Hallo 4'));
    const fixed = await rawRequest(server.origin, '/hello');
    assert.equal(fixed.status, 200);
    assert.match(fixed.body, /<h1>Hallo 4<\/h1>/);
  });

  test('answers a new script at its script-style URL without a restart', async () => {
    writeFileSync(path.join(dir, 'scripts', 'neu.ts'), script('Neu').replace("'/hello'", "'/neu'"));
    const res = await rawRequest(server.origin, '/neu.php', { headers: { accept: 'application/json' } });
    assert.equal(res.status, 200);
    assert.equal(res.body, '{\n  "greeting": "Neu"\n}\n');
  });
});

describe('hundreds of edits', () => {
  test('leave the heap where it was (300 edits of a script holding 160 KB each, forced GC)', {
    timeout: 120_000,
  }, async () => {
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--expose-gc', '--import', 'tsx', path.join(root, 'test/fixtures/edit-loop.ts'), '300'],
      { cwd: root, timeout: 110_000 },
    );
    const result = JSON.parse(stdout) as { edits: number; baseline: number; final: number };
    assert.equal(result.edits, 300);
    // Keeping every old version would hold about 250 × 160 KB = 40 MB more.
    const growth = result.final - result.baseline;
    assert.ok(growth < 8 * 1024 * 1024, `the heap grew by ${(growth / 1024 / 1024).toFixed(1)} MB`);
  });
});
