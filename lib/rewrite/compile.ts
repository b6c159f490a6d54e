// Loads and checks the rewrite table: an ordered list of mod_rewrite rules (pattern, conditions,
// substitution, flags). Anything wrong stops the start with a message naming the rule, numbered
// from 1 as a person counts rules in the file.
import { readFile } from 'node:fs/promises';
import { scriptOf } from '../script-name.ts';
import type { CompiledCondition, RewriteConditionSource } from './conditions.ts';
import { compileCondition } from './conditions.ts';
import { ExpandError, hasReferences, highestReference, isAbsoluteUrl, parsePieces } from './expand.ts';
import type { CompiledRule, RewriteRuleSource, RewriteTable, RuleFlags, Template } from './table.ts';
import { RewriteConfigError } from './table.ts';

interface CompileOptions {
  file?: string;
  scriptExists: (name: string) => boolean;
}

type SwitchFlag =
  | 'last'
  | 'end'
  | 'qsa'
  | 'qsd'
  | 'nocase'
  | 'noescape'
  | 'escape'
  | 'chain'
  | 'discardPathInfo'
  | 'forbidden'
  | 'gone'
  | 'proxy';

// Short and long flag names, https://httpd.apache.org/docs/2.4/rewrite/flags.html
const FLAG_NAMES = new Map<string, SwitchFlag | 'redirect' | 'skip'>([
  ['l', 'last'],
  ['last', 'last'],
  ['end', 'end'],
  ['qsa', 'qsa'],
  ['qsappend', 'qsa'],
  ['qsd', 'qsd'],
  ['qsdiscard', 'qsd'],
  ['nc', 'nocase'],
  ['nocase', 'nocase'],
  ['ne', 'noescape'],
  ['noescape', 'noescape'],
  ['b', 'escape'],
  ['c', 'chain'],
  ['chain', 'chain'],
  ['s', 'skip'],
  ['skip', 'skip'],
  ['dpi', 'discardPathInfo'],
  ['discardpath', 'discardPathInfo'],
  ['r', 'redirect'],
  ['redirect', 'redirect'],
  ['f', 'forbidden'],
  ['forbidden', 'forbidden'],
  ['g', 'gone'],
  ['gone', 'gone'],
  ['p', 'proxy'],
  ['proxy', 'proxy'],
]);
const FLAG_LIST = 'L, END, QSA, QSD, NC, NE, B, C, S=N, DPI, R, R=301|302|303|307|308, F, G or P (or their long names)';
const REDIRECT_CODES = new Map<string, number>([
  ['301', 301],
  ['302', 302],
  ['303', 303],
  ['307', 307],
  ['308', 308],
  ['permanent', 301],
  ['temp', 302],
  ['seeother', 303],
]);
const RULE_KEYS = new Set(['pattern', 'substitution', 'flags', 'conditions', 'comment']);
const TABLE_KEYS = new Set(['rules', 'comment', 'directory', 'base', 'representationSuffixes']);
const OTHER_SCHEME = /^[A-Za-z][A-Za-z0-9+.-]*:\/\//;

interface RuleContext {
  file: string | undefined;
  index: number;
  pattern: string | undefined;
}

export function compileRules(input: unknown, options: CompileOptions): RewriteTable {
  const table = readTable(input, options.file);
  const rules = table.list.map((raw, index) =>
    compileRule(raw, { file: options.file, index, pattern: undefined }, options),
  );
  return { rules, directory: table.directory, base: table.base, representationSuffixes: table.representationSuffixes };
}

export async function loadRules(file: string, options: Omit<CompileOptions, 'file'>): Promise<RewriteTable> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new RewriteConfigError(
      `${file}: cannot read the rewrite table (${describeError(error)}); check that the file exists and is readable.`,
      { cause: error },
    );
  }
  let input: unknown;
  try {
    input = JSON.parse(text);
  } catch (error) {
    throw new RewriteConfigError(
      `${file}: the rewrite table is not valid JSON (${describeError(error)}); fix the syntax and start again.`,
      { cause: error },
    );
  }
  return compileRules(input, { ...options, file });
}

function parseSubstitution(substitution: string): Template {
  if (substitution === '-') return { keep: true, absolute: false, path: [], query: null };
  const mark = substitution.indexOf('?');
  const pathText = mark === -1 ? substitution : substitution.slice(0, mark);
  return {
    keep: false,
    absolute: isAbsoluteUrl(pathText),
    path: parsePieces(pathText),
    query: mark === -1 ? null : parsePieces(substitution.slice(mark + 1)),
  };
}

interface TableShape {
  list: unknown[];
  directory: string | null;
  base: string | null;
  representationSuffixes: boolean;
}

function readTable(input: unknown, file: string | undefined): TableShape {
  if (Array.isArray(input)) return { list: input, directory: null, base: null, representationSuffixes: true };
  const prefix = file === undefined ? '' : `${file}: `;
  if (isRecord(input)) {
    for (const key of Object.keys(input)) {
      if (!TABLE_KEYS.has(key)) {
        throw new RewriteConfigError(
          `${prefix}unknown top-level key ${JSON.stringify(key)}; the table holds "rules" and optionally "comment", "directory", "base" and "representationSuffixes".`,
        );
      }
    }
    if (Array.isArray(input['rules'])) {
      const { directory, base, representationSuffixes } = input;
      if (directory !== undefined && (typeof directory !== 'string' || !/^\/(?:.*\/)?$/.test(directory))) {
        throw new RewriteConfigError(
          `${prefix}"directory" must be a site path that starts and ends with "/", such as "/" or "/shop/", got ${JSON.stringify(directory)}.`,
        );
      }
      if (base !== undefined && (typeof base !== 'string' || !base.startsWith('/') || directory === undefined)) {
        throw new RewriteConfigError(
          `${prefix}"base" (RewriteBase) must be a site path starting with "/" and goes with "directory", got ${JSON.stringify(base)}.`,
        );
      }
      if (representationSuffixes !== undefined && typeof representationSuffixes !== 'boolean') {
        throw new RewriteConfigError(
          `${prefix}"representationSuffixes" must be true or false, got ${JSON.stringify(representationSuffixes)}.`,
        );
      }
      return {
        list: input['rules'],
        directory: directory ?? null,
        // Apache adds the slash a RewriteBase lacks when it replaces the directory prefix.
        base: base === undefined ? null : base.endsWith('/') ? base : base + '/',
        representationSuffixes: representationSuffixes ?? true,
      };
    }
  }
  throw new RewriteConfigError(
    `${prefix}expected {"rules": [...]} or an array of rules, got ${describeType(input)}; write the table as {"rules": [{"pattern": "^/$", "substitution": "/index.php", "flags": ["L"]}]}.`,
  );
}

function compileRule(raw: unknown, context: RuleContext, options: CompileOptions): CompiledRule {
  const source = checkRuleShape(raw, context);
  context.pattern = source.pattern;
  const flags = parseFlags(source.flags ?? [], context);
  const negate = source.pattern.startsWith('!');
  const body = negate ? source.pattern.slice(1) : source.pattern;
  let regex: RegExp;
  try {
    regex = new RegExp(body, flags.nocase ? 'i' : '');
  } catch (error) {
    throw ruleError(
      context,
      `the pattern does not compile (${describeError(error)}); fix the regular expression (JavaScript syntax, close to PCRE).`,
    );
  }
  let template: Template;
  let conditions: CompiledCondition[];
  try {
    template = parseSubstitution(source.substitution);
    conditions = (source.conditions ?? []).map((condition) => compileCondition(condition));
  } catch (error) {
    if (error instanceof ExpandError) throw ruleError(context, error.message);
    throw error;
  }
  checkSubstitution({ source, template, flags, groups: countGroups(body) }, context, options);
  return { index: context.index, source, regex, negate, flags, conditions, template };
}

function checkRuleShape(raw: unknown, context: RuleContext): RewriteRuleSource {
  if (!isRecord(raw)) {
    throw ruleError(
      context,
      `expected an object, got ${describeType(raw)}; write each rule as {"pattern": "...", "substitution": "...", "flags": ["L"]}.`,
    );
  }
  if (typeof raw['pattern'] === 'string') context.pattern = raw['pattern'];
  for (const key of Object.keys(raw)) {
    if (!RULE_KEYS.has(key))
      throw ruleError(
        context,
        `unknown key ${JSON.stringify(key)}; the keys are pattern, substitution, flags, conditions and comment, so check the spelling.`,
      );
  }
  const { pattern, substitution, flags, conditions, comment } = raw;
  if (typeof pattern !== 'string')
    throw ruleError(context, `"pattern" must be a string (a regular expression), got ${describeType(pattern)}.`);
  if (typeof substitution !== 'string')
    throw ruleError(
      context,
      `"substitution" must be a string, got ${describeType(substitution)}; use "-" to leave the path unchanged.`,
    );
  if (substitution === '') throw ruleError(context, 'the substitution is empty; use "-" to leave the path unchanged.');
  if (flags !== undefined && !(Array.isArray(flags) && flags.every((flag) => typeof flag === 'string'))) {
    throw ruleError(context, `"flags" must be an array of strings such as ["L", "QSA"], got ${describeType(flags)}.`);
  }
  if (comment !== undefined && typeof comment !== 'string')
    throw ruleError(context, `"comment" must be a string, got ${describeType(comment)}.`);
  if (conditions !== undefined && !Array.isArray(conditions)) {
    throw ruleError(
      context,
      `"conditions" must be an array such as [{"test": "%{REQUEST_FILENAME}", "pattern": "!-f"}], got ${describeType(conditions)}.`,
    );
  }
  const source: RewriteRuleSource = { pattern, substitution };
  if (flags !== undefined) source.flags = flags as string[];
  if (conditions !== undefined) source.conditions = conditions as RewriteConditionSource[];
  if (comment !== undefined) source.comment = comment;
  return source;
}

function parseFlags(list: readonly string[], context: RuleContext): RuleFlags {
  const flags: RuleFlags = {
    last: false,
    end: false,
    qsa: false,
    qsd: false,
    nocase: false,
    noescape: false,
    escape: false,
    chain: false,
    skip: 0,
    discardPathInfo: false,
    redirect: null,
    forbidden: false,
    gone: false,
    proxy: false,
  };
  for (const flag of list) {
    const eq = flag.indexOf('=');
    const name = FLAG_NAMES.get((eq === -1 ? flag : flag.slice(0, eq)).toLowerCase());
    const value = eq === -1 ? null : flag.slice(eq + 1);
    if (
      name === undefined ||
      (value !== null && name !== 'redirect' && name !== 'skip') ||
      (name === 'skip' && value === null)
    ) {
      throw ruleError(context, `unknown flag ${JSON.stringify(flag)}; use ${FLAG_LIST}.`);
    }
    if (name === 'redirect') {
      const status = value === null ? 302 : REDIRECT_CODES.get(value.toLowerCase());
      if (status === undefined)
        throw ruleError(
          context,
          `flag ${JSON.stringify(flag)} has an unsupported status; use R=301, R=302, R=303, R=307 or R=308.`,
        );
      flags.redirect = status;
    } else if (name === 'skip') {
      if (!/^[1-9][0-9]{0,2}$/.test(value ?? ''))
        throw ruleError(context, `flag ${JSON.stringify(flag)} needs a number of rules to skip, such as S=2.`);
      flags.skip = Number(value);
    } else {
      flags[name] = true;
    }
  }
  checkFlagConflicts(flags, context);
  return flags;
}

// F and G answer at once, and P hands the request upstream, so none of them can also redirect.
function checkFlagConflicts(flags: RuleFlags, context: RuleContext): void {
  const conflicts: [boolean, string][] = [
    [flags.forbidden && flags.gone, 'F and G'],
    [flags.forbidden && flags.redirect !== null, 'F and R'],
    [flags.forbidden && flags.proxy, 'F and P'],
    [flags.gone && flags.redirect !== null, 'G and R'],
    [flags.gone && flags.proxy, 'G and P'],
    [flags.proxy && flags.redirect !== null, 'P and R'],
  ];
  for (const [clash, names] of conflicts) {
    if (clash)
      throw ruleError(
        context,
        `flags ${names} cannot be combined, since each decides the answer on its own; keep one of them.`,
      );
  }
}

interface SubstitutionCheck {
  source: RewriteRuleSource;
  template: Template;
  flags: RuleFlags;
  groups: number;
}

function checkSubstitution(check: SubstitutionCheck, context: RuleContext, options: CompileOptions): void {
  const { source, template, flags, groups } = check;
  const pathText = source.substitution.split('?', 1)[0] ?? '';
  if (!template.absolute && OTHER_SCHEME.test(pathText)) {
    throw ruleError(
      context,
      `the substitution ${JSON.stringify(source.substitution)} uses a URL scheme other than http or https; only http:// and https:// URLs are supported.`,
    );
  }
  if (flags.proxy && !template.absolute) {
    throw ruleError(
      context,
      `flag P needs an absolute http:// or https:// substitution, got ${JSON.stringify(source.substitution)}; write the upstream URL, for example "http://127.0.0.1:8080$0".`,
    );
  }
  const highest = highestReference([...template.path, ...(template.query ?? [])], '$');
  if (highest > groups) {
    throw ruleError(
      context,
      `the substitution uses $${highest}, but the pattern has ${groups} capturing group${groups === 1 ? '' : 's'}; add a group to the pattern or refer to $0..$${groups}.`,
    );
  }
  const script = hasReferences(template.path) ? null : scriptOf(pathText);
  if (script != null && !options.scriptExists(script)) {
    throw ruleError(
      context,
      `the substitution names scripts/${script}.ts, which does not exist; create that script or correct the name in the substitution.`,
    );
  }
}

// Matching the empty string against "source|" always succeeds, and the result has one slot per group.
function countGroups(body: string): number {
  return (new RegExp(body + '|').exec('')?.length ?? 1) - 1;
}

function ruleError(context: RuleContext, problem: string): RewriteConfigError {
  const file = context.file === undefined ? '' : `${context.file}: `;
  const pattern = context.pattern === undefined ? '' : ` (pattern ${JSON.stringify(context.pattern)})`;
  return new RewriteConfigError(`${file}rule ${context.index + 1}${pattern}: ${problem}`);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function describeType(value: unknown): string {
  if (value === null) return 'null';
  return Array.isArray(value) ? 'an array' : typeof value;
}

function describeError(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
