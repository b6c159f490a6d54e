// The script loader (lib/scripts/loader.ts): scripts get lib/page/index.ts, the very module the
// server itself imported, and helpers of their own folder compiled as they are; a script
// importing any other file of the project does not load.
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { HttpError } from '../../lib/http/index.ts';
import type { Document } from '../../lib/page/index.ts';
import * as pageModule from '../../lib/page/index.ts';
import { ScriptLoader, ScriptParseError } from '../../lib/scripts/index.ts';
import { root } from '../helpers.ts';

describe('the scripts in scripts/', () => {
  test('all load, and import from lib/ nothing but lib/page/index.ts', async () => {
    const loader = new ScriptLoader(path.join(root, 'scripts'), { reload: false });
    assert.ok(loader.names().length >= 14, loader.names().join(', '));
    for (const name of loader.names()) {
      const script = await loader.load(name);
      assert.ok(script.GET ?? script.POST, `${name} has a handler`);
      const source = readFileSync(path.join(root, 'scripts', `${name}.ts`), 'utf8');
      const modules = [...source.matchAll(/from '([^']+)'/g)].map((m) => m[1]);
      assert.deepEqual([...new Set(modules)], ['../lib/page/index.ts'], name);
    }
  });

  test('get the module instances the server imported, not copies', async () => {
    const loader = new ScriptLoader(path.join(root, 'scripts'), { reload: false });
    // scripts/person.ts re-exports personView as its view.
    assert.equal((await loader.load('person')).view, pageModule.personView);
    assert.equal(pageModule.HttpError, HttpError);
  });
});

describe('imports of a script', () => {
  const dir = path.join(root, 'test/fixtures', `tmp-imports-${process.pid}`);
  // Files in dir, three folders below the project root.
  const write = (name: string, lines: string[]) => writeFileSync(path.join(dir, name), [...lines, ''].join('\n'));
  const page = (importLine: string) => [
    '// Imports on line 3.',
    "import type { Document } from '../../../lib/page/index.ts';",
    importLine,
    'export async function GET(): Promise<Document> {',
    "  return { path: '/x', title: String(x), data: {} };",
    '}',
  ];

  before(() => {
    mkdirSync(dir, { recursive: true });
    write('_shared.ts', [
      "import { HttpError } from '../../../lib/page/index.ts';",
      'export const made = { HttpError };',
      "export const x = 'eins';",
    ]);
    write('first.ts', page("import { x } from './_shared.ts';").concat("export { made as view } from './_shared.ts';"));
    write(
      'second.ts',
      page("import { x } from './_shared.ts';").concat("export { made as view } from './_shared.ts';"),
    );
    write('unshared.ts', page("import { readTarget as x } from '../../../lib/http/index.ts';"));
    write('server.ts', page("import { createApp as x } from '../../../server.ts';"));
    write('missing.ts', page("import { x } from './_nowhere.ts';"));
    write('circle.ts', page("import { x } from './_circle.ts';"));
    write('_circle.ts', ["import { GET } from './circle.ts';", 'export const x = GET;']);
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  test('of a helper in the scripts folder: compiled once, one instance for every script', async () => {
    const loader = new ScriptLoader(dir, { reload: false });
    assert.deepEqual(loader.names(), ['circle', 'first', 'missing', 'second', 'server', 'unshared']);
    const [first, second] = await Promise.all([loader.load('first'), loader.load('second')]);
    assert.ok(first.view !== undefined);
    assert.equal(first.view, second.view);
    assert.equal((first.view as unknown as { HttpError: unknown }).HttpError, HttpError);
  });

  test('of a helper, in development: an edit of the helper reaches the script that imports it', async () => {
    const loader = new ScriptLoader(dir, { reload: true });
    const titleOf = async () => ((await (await loader.load('first')).GET?.({} as never)) as Document).title;
    assert.equal(await titleOf(), 'eins');
    write('_shared.ts', [
      "import { HttpError } from '../../../lib/page/index.ts';",
      'export const made = { HttpError };',
      "export const x = 'zwei';",
    ]);
    const later = new Date(Date.now() + 5000);
    utimesSync(path.join(dir, '_shared.ts'), later, later);
    assert.equal(await titleOf(), 'zwei');
  });

  const refusals = [
    [
      'unshared',
      /^Cannot import \.\.\/\.\.\/\.\.\/lib\/http\/index\.ts: scripts import lib\/page\/index\.ts, the one lib module made for them; export what the script needs from there\.$/,
    ],
    [
      'server',
      /^Cannot import \.\.\/\.\.\/\.\.\/server\.ts: a script imports lib\/page\/index\.ts, \.ts files of its own folder, Node's modules and packages\.$/,
    ],
    [
      'missing',
      new RegExp(
        `^Cannot import \\./_nowhere\\.ts: there is no file test/fixtures/tmp-imports-${process.pid}/_nowhere\\.ts\\.$`,
      ),
    ],
    ['circle', /^Cannot import \.\/circle\.ts: the files of the scripts folder import each other in a circle\.$/],
  ] as const;
  for (const [name, message] of refusals) {
    test(`${name}.ts does not load: a parse error at the import, saying what a script may import`, async () => {
      const loader = new ScriptLoader(dir, { reload: false });
      await assert.rejects(loader.load(name), (err: unknown) => {
        assert.ok(err instanceof ScriptParseError);
        assert.match(err.message, message);
        const file = name === 'circle' ? '_circle.ts' : `${name}.ts`;
        assert.deepEqual([err.file, err.line], [path.join(dir, file), name === 'circle' ? 1 : 3]);
        return true;
      });
    });
  }
});
