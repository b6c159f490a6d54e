// Loads the handler scripts in scripts/ the way PHP loads .php files: by name, compiled on first
// use, and in development compiled again when the file's text changes. A script that does not
// compile is a parse error, not a crash (docs/development.md). In production the compiled code
// comes from the build (dist/scripts.json) when the script's text is the one built, so the server
// starts no compiler process; a script changed since is compiled as in development.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import vm from 'node:vm';
import type { TransformFailure, TransformOptions } from 'esbuild';
import { projectRoot } from '../config.ts';
import type { ScriptModule, SiteScript } from '../page/index.ts';
import * as page from '../page/index.ts';
import { scriptName } from '../script-name.ts';
import { mapPosition, registerSourceMap, ScriptParseError } from './stack.ts';

/** A compiled file of the scripts folder: a script, or a helper that scripts import. */
interface CompiledModule {
  file: string;
  /** The text it was compiled from: development compares it with the file's (isCurrent). */
  source: string;
  exports: Record<string, unknown>;
  /** The files of the scripts folder it imports, compiled the same way. */
  helpers: CompiledModule[];
}

/** What `npm run build` compiled: the files of scripts/ by path from the project folder (bin/build.ts). */
export const builtScriptsFile = path.join(projectRoot, 'dist', 'scripts.json');

export interface BuiltScript {
  /** SHA-256 of the text it was compiled from. */
  sha256: string;
  code: string;
  map: string;
}

/** How a file of the scripts folder is compiled: at build time and on first use alike. */
export function compileOptions(file: string): TransformOptions {
  return {
    loader: 'ts',
    format: 'cjs',
    target: 'node20',
    sourcemap: 'external',
    sourcefile: file,
    tsconfigRaw: { compilerOptions: { verbatimModuleSyntax: true } },
  };
}

export function sha256Of(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** esbuild, imported on first need: a production server that finds every script built never loads it. */
async function compileWithEsbuild(source: string, file: string): Promise<{ code: string; map: string }> {
  const { transform } = await import('esbuild');
  return transform(source, compileOptions(file));
}

const requireCall = /\brequire\("([^"]+)"\)/g;
const libDir = path.join(projectRoot, 'lib');
// The one lib module a script may import; it gets the very instance the server runs.
const pageModule = path.join(libDir, 'page', 'index.ts');

export class ScriptLoader {
  readonly dir: string;
  private readonly reload: boolean;
  private known: Set<string>;
  /** Compiled scripts and helpers by file; one instance of each, shared by all that import it. */
  private readonly compiled = new Map<string, CompiledModule>();
  /** Compiling goes one script at a time, so a helper two scripts import is compiled once. */
  private compiling: Promise<unknown> = Promise.resolve();
  /** The build's compiled scripts, in production; empty in development and without a build. */
  private readonly built: Record<string, BuiltScript>;
  /**
   * lib/page as this loader's scripts import it: the server's own module, with siteScripts
   * listing this loader's scripts (the OpenAPI document gathers their fragments).
   */
  private readonly page: typeof page;

  constructor(dir: string, options: { reload: boolean }) {
    this.dir = path.resolve(dir);
    this.reload = options.reload;
    this.known = this.scan();
    this.built = options.reload ? {} : readBuilt();
    this.page = { ...page, siteScripts: () => this.all() };
  }

  /** Whether scripts/<name>.ts exists; only such names are ever resolved, never another file. */
  exists(name: string): boolean {
    if (!scriptName.test(name)) return false;
    if (this.reload && !this.known.has(name)) this.known = this.scan();
    return this.known.has(name);
  }

  names(): string[] {
    return [...this.known].sort();
  }

  /** The compiled module of scripts/<name>.ts; the name must pass exists() first. */
  async load(name: string): Promise<ScriptModule> {
    const file = this.fileOf(name);
    const cached = this.compiled.get(file);
    if (cached && (!this.reload || isCurrent(cached))) return cached.exports as ScriptModule;
    const loading = this.compiling.then(() => this.use(file, []));
    this.compiling = loading.catch(() => undefined);
    return (await loading).exports as ScriptModule;
  }

  /** Every script of the folder, compiled; one that does not compile fails the whole. */
  async all(): Promise<SiteScript[]> {
    if (this.reload) this.known = this.scan();
    const names = this.names();
    return Promise.all(names.map(async (name) => ({ name, module: await this.load(name) })));
  }

  fileOf(name: string): string {
    return path.join(this.dir, `${name}.ts`);
  }

  private scan(): Set<string> {
    let entries: string[];
    try {
      entries = readdirSync(this.dir);
    } catch (err) {
      throw new Error(
        `cannot read the scripts folder ${this.dir}: ${(err as Error).message}; set SCRIPTS_DIR to the folder with the handler scripts.`,
      );
    }
    return new Set(
      entries
        .filter((f) => f.endsWith('.ts'))
        .map((f) => f.slice(0, -3))
        .filter((n) => scriptName.test(n)),
    );
  }

  /** A file compiled once; in development again when it or a helper it imports has changed. */
  private async use(file: string, importers: readonly string[]): Promise<CompiledModule> {
    const cached = this.compiled.get(file);
    if (cached && (!this.reload || isCurrent(cached))) return cached;
    const compiled = await this.compile(file, importers);
    this.compiled.set(file, compiled);
    return compiled;
  }

  private async compile(file: string, importers: readonly string[]): Promise<CompiledModule> {
    const source = await readFile(file, 'utf8');
    const built = this.built[path.relative(projectRoot, file)];
    let output;
    try {
      output = built && built.sha256 === sha256Of(source) ? built : await compileWithEsbuild(source, file);
    } catch (err) {
      const first = (err as TransformFailure).errors?.[0];
      throw new ScriptParseError(
        first?.text ?? String(err),
        file,
        first?.location?.line ?? 0,
        first?.location?.column ?? 0,
      );
    }
    registerSourceMap(file, JSON.parse(output.map));
    const { imports, helpers } = await this.importDependencies(output.code, file, importers);
    const module = { exports: {} as Record<string, unknown> };
    const run = vm.compileFunction(output.code, ['exports', 'require', 'module', '__filename', '__dirname'], {
      filename: file,
    });
    const requireDependency = (id: string) => {
      const dependency = imports.get(id);
      if (!dependency) throw new Error(`${path.basename(file)} cannot require ${id}: scripts use static imports only.`);
      return dependency;
    };
    run(module.exports, requireDependency, module, file, path.dirname(file));
    return { file, source, exports: module.exports, helpers };
  }

  // The compiled file says require("../lib/page/index.ts"): it gets the very module instance the
  // server imported, so `instanceof HttpError` holds and no second copy is loaded, under tsx as
  // in the bundle. A helper next to the scripts is compiled as they are; Node's modules and
  // packages are imported.
  private async importDependencies(code: string, file: string, importers: readonly string[]) {
    const imports = new Map<string, unknown>();
    const helpers: CompiledModule[] = [];
    for (const call of code.matchAll(requireCall)) {
      const id = call[1] as string;
      if (imports.has(id)) continue;
      if (!id.startsWith('.')) {
        imports.set(id, await import(id));
        continue;
      }
      const target = path.resolve(path.dirname(file), id);
      const refuse = (why: string) => importError(`Cannot import ${id}: ${why}`, file, { code, offset: call.index });
      if (target === pageModule) {
        imports.set(id, this.page);
      } else if (target.startsWith(libDir + path.sep)) {
        throw refuse(
          'scripts import lib/page/index.ts, the one lib module made for them; export what the script needs from there.',
        );
      } else if (target.startsWith(this.dir + path.sep) && target.endsWith('.ts')) {
        if (!existsSync(target)) throw refuse(`there is no file ${path.relative(projectRoot, target)}.`);
        if (target === file || importers.includes(target))
          throw refuse('the files of the scripts folder import each other in a circle.');
        const helper = await this.use(target, [...importers, file]);
        helpers.push(helper);
        imports.set(id, helper.exports);
      } else {
        throw refuse("a script imports lib/page/index.ts, .ts files of its own folder, Node's modules and packages.");
      }
    }
    return { imports, helpers };
  }
}

function readBuilt(): Record<string, BuiltScript> {
  try {
    return JSON.parse(readFileSync(builtScriptsFile, 'utf8')) as Record<string, BuiltScript>;
  } catch {
    return {};
  }
}

/** Whether no file of a compiled module has changed since it was compiled (development). */
// The text, not the modification time: a file saved twice within one tick of the file system's
// clock keeps its time, and the second edit went unseen (test/scripts/dev-reload.test.ts, edit 24 of 300).
function isCurrent(module: CompiledModule): boolean {
  return readSource(module.file) === module.source && module.helpers.every(isCurrent);
}

function readSource(file: string): string | null {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return null;
  }
}

/** An import that cannot be served is reported like a compile error: at its line, before anything runs. */
function importError(message: string, file: string, at: { code: string; offset: number }): ScriptParseError {
  const before = at.code.slice(0, at.offset).split('\n');
  const position = mapPosition(file, before.length, (before.at(-1) as string).length + 1);
  return new ScriptParseError(message, file, position?.line ?? 0, position?.column ?? 0);
}
