// `npm run build`: bundles server.ts with the lib modules it imports into dist/server.js, plain
// JavaScript that `npm start` runs without the tsx loader. Packages stay imports from
// node_modules. The handler scripts stay out of the bundle: each is compiled on its own into
// dist/scripts.json, which the production server loads instead of compiling them
// (lib/scripts/loader.ts), so it runs no compiler.
import { mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, transform } from 'esbuild';
import { projectRoot } from '../lib/config.ts';
import type { BuiltScript } from '../lib/scripts/loader.ts';
import { builtScriptsFile, compileOptions, sha256Of } from '../lib/scripts/loader.ts';

/** The built server; it lies one folder deep, as lib/ does, so projectRoot stays the same. */
export const serverBundle = path.join(projectRoot, 'dist', 'server.js');

export async function buildServer(): Promise<{ file: string; bytes: number; scripts: number; milliseconds: number }> {
  const started = performance.now();
  const result = await build({
    entryPoints: [path.join(projectRoot, 'server.ts')],
    outfile: serverBundle,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    // pg, ejs, PGlite … are imported from node_modules at run time; PGlite's import stays lazy.
    packages: 'external',
    // For --enable-source-maps: stack traces and the error log name the .ts file and line.
    // Positions only: Node keeps a loaded map in memory, and the sources are next to it.
    sourcemap: 'linked',
    sourcesContent: false,
    write: false,
    logLevel: 'warning',
  });
  // Each file is written whole under another name and renamed, so a server starting while tests
  // build again never reads half a file. The map goes first, for the bundle that points to it.
  mkdirSync(path.dirname(serverBundle), { recursive: true });
  const files = [...result.outputFiles].sort(
    (a, b) => Number(b.path.endsWith('.map')) - Number(a.path.endsWith('.map')),
  );
  for (const file of files) {
    const temporary = `${file.path}.${process.pid}.tmp`;
    writeFileSync(temporary, file.contents);
    renameSync(temporary, file.path);
  }
  const bytes = files.find((f) => f.path === serverBundle)?.contents.byteLength ?? 0;
  const scripts = await buildScripts();
  return { file: serverBundle, bytes, scripts, milliseconds: performance.now() - started };
}

/**
 * Every .ts file of scripts/ compiled as the loader compiles it, with the hash of its text, into
 * dist/scripts.json. A script that does not compile is left out: the server then reports its
 * parse error on first use, as it would without a build.
 */
async function buildScripts(): Promise<number> {
  const dir = path.join(projectRoot, 'scripts');
  const built: Record<string, BuiltScript> = {};
  for (const name of readdirSync(dir)
    .filter((f) => f.endsWith('.ts'))
    .sort()) {
    const file = path.join(dir, name);
    const source = readFileSync(file, 'utf8');
    try {
      const { code, map } = await transform(source, compileOptions(file));
      built[path.relative(projectRoot, file)] = { sha256: sha256Of(source), code, map };
    } catch {
      // reported by the server, at the script's first request
    }
  }
  const temporary = `${builtScriptsFile}.${process.pid}.tmp`;
  writeFileSync(temporary, JSON.stringify(built));
  renameSync(temporary, builtScriptsFile);
  return Object.keys(built).length;
}

/**
 * The arguments of node in `npm start` (its flags and the bundle), read from package.json, so
 * that tests and the benchmark start the product exactly as operators do.
 */
export function startArguments(): string[] {
  const { scripts } = JSON.parse(readFileSync(path.join(projectRoot, 'package.json'), 'utf8')) as {
    scripts: Record<string, string>;
  };
  const command = /\bnode((?: --[a-z-]+(?:=[\w.-]+)?)*) dist\/server\.js$/.exec(scripts.start ?? '');
  if (!command)
    throw new Error(
      `the start script in package.json must end with "node [flags] dist/server.js", not "${scripts.start}".`,
    );
  return [...(command[1] as string).trim().split(' ').filter(Boolean), serverBundle];
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  buildServer().then(
    ({ file, bytes, scripts, milliseconds }) =>
      console.log(
        `build: ${path.relative(projectRoot, file)} (${Math.round(bytes / 1024)} KiB) and ${scripts} scripts in ${Math.round(milliseconds)} ms`,
      ),
    (err: unknown) => {
      console.error(`build: ${err instanceof Error ? err.message : String(err)}`);
      process.exit(1);
    },
  );
}
