// Reads an error's stack into frames with TypeScript file:line, so the error log and the
// display_errors page name the line a developer wrote, not a compiled one: the loader registers
// each compiled script's source map here.
import { SourceMap } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** A script that does not compile, or imports what it may not: PHP's parse error, at file:line. */
export class ScriptParseError extends Error {
  override name = 'ParseError';
  constructor(
    message: string,
    readonly file: string,
    readonly line: number,
    readonly column: number,
  ) {
    super(message);
  }
}

// Compiled script positions, to report errors at TypeScript lines (see mapPosition).
const sourceMaps = new Map<string, SourceMap>();

/** Notes where a compiled script's lines came from (esbuild's source map). */
export function registerSourceMap(file: string, map: unknown): void {
  sourceMaps.set(file, new SourceMap(map as ConstructorParameters<typeof SourceMap>[0]));
}

/** Maps a line and column of a compiled script back to its TypeScript source. */
export function mapPosition(file: string, line: number, column: number): { line: number; column: number } | null {
  const map = sourceMaps.get(file);
  if (!map) return null;
  const entry = map.findEntry(line - 1, column - 1) as { originalLine?: number; originalColumn?: number };
  if (entry.originalLine === undefined) return null;
  return { line: entry.originalLine + 1, column: (entry.originalColumn ?? 0) + 1 };
}

interface Frame {
  fn: string;
  /** Absolute file path. */
  file: string;
  line: number;
  column: number;
  /** Part of this project (not node_modules, not Node itself). */
  own: boolean;
}

interface Location {
  /** Path relative to the project root, e.g. scripts/person.ts. */
  file: string;
  absolute: string;
  line: number;
}

const framePattern = /^\s*at (?:async )?(?:(.*?) \()?(.+?):(\d+):(\d+)\)?$/;

export function parseStack(err: Error, root: string): Frame[] {
  const frames: Frame[] = [];
  for (const text of (err.stack ?? '').split('\n').slice(1)) {
    const match = framePattern.exec(text);
    if (!match) continue;
    let file = match[2] as string;
    if (file.startsWith('file://')) file = fileURLToPath(file);
    let line = Number(match[3]);
    let column = Number(match[4]);
    const mapped = mapPosition(file, line, column);
    if (mapped) ({ line, column } = mapped);
    const own =
      path.isAbsolute(file) && file.startsWith(root + path.sep) && !file.includes(`${path.sep}node_modules${path.sep}`);
    frames.push({ fn: match[1] ?? '<anonymous>', file, line, column, own });
  }
  return frames;
}

// EJS prefixes a failing template's message with "<file>:<line>" and an excerpt, once
// per include level; the last such header is the innermost template.
const templateHeader = /^(\/\S+\.ejs):(\d+)$/gm;

function templateLocation(err: Error): { file: string; line: number; message: string } | null {
  const headers = [...err.message.matchAll(templateHeader)];
  const last = headers.at(-1);
  if (!last) return null;
  const cut = err.message.lastIndexOf('\n\n');
  return {
    file: last[1] as string,
    line: Number(last[2]),
    message: cut === -1 ? err.message : err.message.slice(cut + 2),
  };
}

/** The error's own message, without a template engine's excerpt. */
export function messageOf(err: Error): string {
  return templateLocation(err)?.message ?? err.message;
}

/** Where the error happened in the project's own code, if anywhere. */
export function locateError(err: unknown, root: string): Location | null {
  if (err instanceof ScriptParseError) {
    return { file: path.relative(root, err.file), absolute: err.file, line: err.line };
  }
  if (!(err instanceof Error)) return null;
  const template = templateLocation(err);
  if (template) return { file: path.relative(root, template.file), absolute: template.file, line: template.line };
  const frame = parseStack(err, root).find((f) => f.own);
  return frame ? { file: path.relative(root, frame.file), absolute: frame.file, line: frame.line } : null;
}

/** The error-log message: "TypeError: … in scripts/person.ts on line 42" (docs/operations.md, Logs). */
export function describeError(err: unknown, root: string): string {
  const where = locateError(err, root);
  const suffix = where ? ` in ${where.file} on line ${where.line}` : '';
  if (err instanceof ScriptParseError) return `Parse error: ${err.message}${suffix}`;
  if (err instanceof Error) return `${err.name}: ${messageOf(err)}${suffix}`;
  return `Error: ${String(err)}${suffix}`;
}
