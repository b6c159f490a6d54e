// Loads the handler scripts in scripts/ the way PHP loads .php files: by name, compiled
// on first use, and in development compiled again when the file changes.
// A script that does not compile is a parse error (CONTRACT 6), not a crash.
import { readdirSync, statSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { SourceMap } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import vm from 'node:vm';
import { transform, type TransformFailure } from 'esbuild';
import type { ScriptModule } from './script.ts';

export class ScriptParseError extends Error {
  override name = 'ParseError';
  constructor(message: string, readonly file: string, readonly line: number, readonly column: number) {
    super(message);
  }
}

interface LoadedScript {
  module: ScriptModule;
  mtimeMs: number;
}

const scriptName = /^[a-z][a-z0-9_-]{0,63}$/;
// Compiled script positions, to report errors at TypeScript lines (see mapPosition).
const sourceMaps = new Map<string, SourceMap>();

export class ScriptLoader {
  readonly dir: string;
  private readonly reload: boolean;
  private known: Set<string>;
  private readonly loaded = new Map<string, LoadedScript>();
  private readonly pending = new Map<string, Promise<LoadedScript>>();

  constructor(dir: string, options: { reload: boolean }) {
    this.dir = dir;
    this.reload = options.reload;
    this.known = this.scan();
  }

  /** Whether scripts/<name>.ts exists; only such names are ever resolved (CONTRACT 1). */
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
    const cached = this.loaded.get(name);
    if (cached && !this.reload) return cached.module;
    const file = this.fileOf(name);
    if (cached) {
      const mtimeMs = statSync(file, { throwIfNoEntry: false })?.mtimeMs;
      if (mtimeMs === cached.mtimeMs) return cached.module;
    }
    let loading = this.pending.get(name);
    if (!loading) {
      loading = compileScript(file).finally(() => this.pending.delete(name));
      this.pending.set(name, loading);
    }
    const script = await loading;
    this.loaded.set(name, script);
    return script.module;
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
}

async function compileScript(file: string): Promise<LoadedScript> {
  const mtimeMs = statSync(file).mtimeMs;
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
  sourceMaps.set(file, new SourceMap(JSON.parse(output.map)));
  const imports = await importDependencies(output.code, file);
  const module = { exports: {} as Record<string, unknown> };
  const run = vm.compileFunction(output.code, ['exports', 'require', 'module', '__filename', '__dirname'], { filename: file });
  const requireDependency = (id: string) => {
    const dependency = imports.get(id);
    if (!dependency) throw new Error(`${path.basename(file)} cannot require ${id}: scripts use static imports only.`);
    return dependency;
  };
  run(module.exports, requireDependency, module, file, path.dirname(file));
  return { module: module.exports as ScriptModule, mtimeMs };
}

// The compiled script says require("../lib/x.ts"); hand it the very module instances the
// server imported, so `instanceof HttpError` holds and no second copy is loaded.
async function importDependencies(code: string, file: string): Promise<Map<string, unknown>> {
  const ids = new Set([...code.matchAll(/\brequire\("([^"]+)"\)/g)].map((m) => m[1] as string));
  const imports = new Map<string, unknown>();
  for (const id of ids) {
    const target = id.startsWith('.') ? pathToFileURL(path.resolve(path.dirname(file), id)).href : id;
    imports.set(id, await import(target));
  }
  return imports;
}

/** Maps a line and column of a compiled script back to its TypeScript source. */
export function mapPosition(file: string, line: number, column: number): { line: number; column: number } | null {
  const map = sourceMaps.get(file);
  if (!map) return null;
  const entry = map.findEntry(line - 1, column - 1) as { originalLine?: number; originalColumn?: number };
  if (entry.originalLine === undefined) return null;
  return { line: entry.originalLine + 1, column: (entry.originalColumn ?? 0) + 1 };
}
