// Loads the handler scripts in scripts/ the way PHP loads .php files: by name, compiled on first
// use, and in development compiled again when the file's text changes. A script that does not
// compile is a parse error, not a crash (docs/development.md).
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import vm from 'node:vm';
import { transform, type TransformFailure } from 'esbuild';
import { projectRoot } from '../config.ts';
import type { ScriptModule } from '../page/index.ts';
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

  constructor(dir: string, options: { reload: boolean }) {
    this.dir = path.resolve(dir);
    this.reload = options.reload;
    this.known = this.scan();
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

  fileOf(name: string): string {
    return path.join(this.dir, `${name}.ts`);
  }

  private scan(): Set<string> {
    let entries: string[];
    try {
      entries = readdirSync(this.dir);
    } catch (err) {
      throw new Error(`cannot read the scripts folder ${this.dir}: ${(err as Error).message}; set SCRIPTS_DIR to the folder with the handler scripts.`);
    }
    return new Set(entries.filter((f) => f.endsWith('.ts')).map((f) => f.slice(0, -3)).filter((n) => scriptName.test(n)));
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
    let output;
    try {
      output = await transform(source, {
        loader: 'ts',
        format: 'cjs',
        target: 'node20',
        sourcemap: 'external',
        sourcefile: file,
        tsconfigRaw: { compilerOptions: { verbatimModuleSyntax: true } },
      });
    } catch (err) {
      const first = (err as TransformFailure).errors?.[0];
      throw new ScriptParseError(first?.text ?? String(err), file, first?.location?.line ?? 0, first?.location?.column ?? 0);
    }
    registerSourceMap(file, JSON.parse(output.map));
    const { imports, helpers } = await this.importDependencies(output.code, file, importers);
    const module = { exports: {} as Record<string, unknown> };
    const run = vm.compileFunction(output.code, ['exports', 'require', 'module', '__filename', '__dirname'], { filename: file });
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
        imports.set(id, page);
      } else if (target.startsWith(libDir + path.sep)) {
        throw refuse('scripts import lib/page/index.ts, the one lib module made for them; export what the script needs from there.');
      } else if (target.startsWith(this.dir + path.sep) && target.endsWith('.ts')) {
        if (!existsSync(target)) throw refuse(`there is no file ${path.relative(projectRoot, target)}.`);
        if (target === file || importers.includes(target)) throw refuse('the files of the scripts folder import each other in a circle.');
        const helper = await this.use(target, [...importers, file]);
        helpers.push(helper);
        imports.set(id, helper.exports);
      } else {
        throw refuse('a script imports lib/page/index.ts, .ts files of its own folder, Node\'s modules and packages.');
      }
    }
    return { imports, helpers };
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
