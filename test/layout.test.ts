// The house rules of docs/development.md, checked on the files as they are: lib/ in rooms whose
// index says which rooms they may import, no import circle, a short front and README, and every
// test file reached by an npm script.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { root } from './helpers.ts';

const tracked = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard'], {
  cwd: root,
  encoding: 'utf8',
})
  .split('\n')
  .filter((f) => f !== '' && !f.startsWith('node_modules/'));
const libFiles = tracked.filter((f) => f.startsWith('lib/') && f.endsWith('.ts'));
// The files directly in lib/ (at most four) that every room may use.
const shared = new Set(['lib/config.ts', 'lib/script-name.ts']);

/** The lib files a file imports, as paths from the project root (type-only imports included). */
function importsOf(file: string): string[] {
  const text = readFileSync(path.join(root, file), 'utf8');
  const specifiers = [...text.matchAll(/(?:\bfrom\s+|\bimport\s*\(\s*|^import\s+)'(\.[^']+)'/gm)].map(
    (m) => m[1] as string,
  );
  return specifiers
    .map((s) => path.posix.normalize(path.posix.join(path.posix.dirname(file), s)))
    .filter((f) => f.startsWith('lib/'));
}

function roomOf(file: string): string | null {
  const parts = file.split('/');
  return parts.length === 3 ? (parts[1] as string) : null;
}

/** The rooms a room's index.ts says it may import: "// May import: db, http." */
function allowedRooms(room: string): string[] {
  const header = readFileSync(path.join(root, 'lib', room, 'index.ts'), 'utf8');
  const line = /^\/\/ May import: ([^.(]*)/m.exec(header)?.[1];
  assert.ok(line !== undefined, `lib/${room}/index.ts opens with a "May import:" line`);
  return line.trim() === 'none' ? [] : line.split(',').map((r) => r.trim());
}

describe('lib/ in rooms', () => {
  test('holds at most four files directly, and each room has an index.ts that opens with what it owns', () => {
    const top = libFiles.filter((f) => roomOf(f) === null);
    assert.ok(top.length <= 4, top.join(', '));
    const rooms = [...new Set(libFiles.map(roomOf).filter((r): r is string => r !== null))];
    for (const room of rooms) {
      const index = readFileSync(path.join(root, 'lib', room, 'index.ts'), 'utf8');
      assert.match(
        index,
        new RegExp(`^// The ${room === 'db' ? 'database' : room === 'http' ? 'HTTP' : room} room: `),
        room,
      );
    }
  });

  test('a room imports its own files, the shared ones, and the index of a room its header allows', () => {
    const wrong: string[] = [];
    for (const file of libFiles) {
      const room = roomOf(file);
      for (const target of importsOf(file)) {
        const other = roomOf(target);
        if (shared.has(target) || other === room) continue;
        if (room === null) {
          wrong.push(
            `${file} → ${target}: only config.ts and script-name.ts sit directly in lib/, and they import no room`,
          );
        } else if (other === null || !allowedRooms(room).includes(other)) {
          wrong.push(`${file} → ${target}: lib/${room}/index.ts does not list ${other ?? target}`);
        } else if (!target.endsWith('/index.ts')) {
          wrong.push(`${file} → ${target}: another room is imported through its index.ts`);
        }
      }
    }
    assert.deepEqual(wrong, []);
  });

  test("the rooms' lists make an order: no room may import, directly or through others, itself", () => {
    const rooms = [...new Set(libFiles.map(roomOf).filter((r): r is string => r !== null))];
    for (const room of rooms) {
      const reached = new Set<string>();
      const walk = (from: string) => {
        for (const next of allowedRooms(from)) {
          if (reached.has(next)) continue;
          reached.add(next);
          walk(next);
        }
      };
      walk(room);
      assert.ok(!reached.has(room), `lib/${room} may import itself through ${[...reached].join(', ')}`);
    }
  });

  test("no two files of lib/ and bin/ share a name, nor a file another room's (index.ts aside)", () => {
    const files = tracked.filter((f) => /^(lib|bin)\/.*\.ts$/.test(f) && path.basename(f) !== 'index.ts');
    const rooms = new Set(tracked.filter((f) => /^lib\/[^/]+\/index\.ts$/.test(f)).map((f) => f.split('/')[1]));
    const byName = new Map<string, string[]>();
    for (const file of files) {
      const name = path.basename(file, '.ts');
      byName.set(name, [...(byName.get(name) ?? []), file]);
    }
    const shared = [...byName]
      .filter(([name, list]) => list.length > 1 || (rooms.has(name) && list.some((f) => !f.startsWith(`lib/${name}/`))))
      .map(([, list]) => list.join(' '));
    assert.ok(files.length > 50, `${files.length} files`);
    assert.deepEqual(shared, []);
  });

  test('no file of lib/ imports itself through a circle', () => {
    const graph = new Map(libFiles.map((f) => [f, importsOf(f)]));
    const circles: string[] = [];
    const state = new Map<string, 'open' | 'done'>();
    const visit = (file: string, trail: string[]) => {
      if (state.get(file) === 'done') return;
      if (state.get(file) === 'open') {
        circles.push([...trail.slice(trail.indexOf(file)), file].join(' → '));
        return;
      }
      state.set(file, 'open');
      for (const next of graph.get(file) ?? []) visit(next, [...trail, file]);
      state.set(file, 'done');
    };
    for (const file of libFiles) visit(file, []);
    assert.deepEqual(circles, []);
  });
});

describe('the front and the map', () => {
  test('server.ts reads in one sitting, and the README stays a map', () => {
    const lines = (file: string) => readFileSync(path.join(root, file), 'utf8').split('\n').length;
    // As the formatter writes it (biome.json, 120 columns), which puts each name of a list that
    // does not fit on a line of its own.
    assert.ok(lines('server.ts') <= 360, `server.ts has ${lines('server.ts')} lines`);
    assert.ok(lines('README.md') <= 300, `README.md has ${lines('README.md')} lines`);
  });

  test('no file of the project cites a document outside it; comments point into docs/', () => {
    const sources = tracked.filter((f) => /\.(ts|ejs|json|sql|md|css)$/.test(f) && f !== 'package-lock.json');
    const citing = sources.filter((f) =>
      /\bCONTRACT\b|\bSEED(\.md)?\b|\bSTYLE [0-9]/.test(readFileSync(path.join(root, f), 'utf8')),
    );
    assert.deepEqual(citing, []);
  });

  test('every docs/ file a comment or the README names exists', () => {
    const named = new Set<string>();
    for (const file of tracked.filter((f) => /\.(ts|md)$/.test(f))) {
      for (const m of readFileSync(path.join(root, file), 'utf8').matchAll(/docs\/([a-z-]+\.md)/g))
        named.add(m[1] as string);
    }
    const missing = [...named].filter((name) => !tracked.includes(`docs/${name}`));
    assert.deepEqual(missing, []);
  });
});

describe('the test suites', () => {
  test('every test file runs in npm test, npm run test:robustness or npm run test:topology, and CI runs all three', () => {
    const scripts = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')).scripts as Record<string, string>;
    const globs = `${scripts.test} ${scripts['test:robustness']} ${scripts['test:topology']}`
      .split(/\s+/)
      .filter((word) => word.startsWith('test/'));
    const matches = (file: string, glob: string) =>
      new RegExp(`^${glob.replace(/\./g, '\\.').replace(/\*/g, '[^/]*')}$`).test(file);
    const unreached = tracked.filter((f) => f.endsWith('.test.ts') && !globs.some((g) => matches(f, g)));
    assert.deepEqual(unreached, []);
    const ci = readFileSync(path.join(root, '.ci', 'run'), 'utf8');
    for (const line of ['npm test', 'npm run test:robustness', 'npm run test:topology'])
      assert.match(ci, new RegExp(`^(DATABASE_URL=\\S+ )?${line}$`, 'm'), line);
  });
});
