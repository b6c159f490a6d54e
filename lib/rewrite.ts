// The URL rewrite engine: an ordered table of mod_rewrite-style rules (pattern, substitution,
// flags) applied to the request path, and the loader that checks the table at start-up.
// Semantics follow https://httpd.apache.org/docs/2.4/mod/mod_rewrite.html#rewriterule (server context).

import { readFile } from 'node:fs/promises';
import createDebug from 'debug';

// Like Apache's RewriteLog trace: DEBUG=portfolio:rewrite shows every rule tried.
// Rule numbers in the trace and in load errors are 1-based, as a person counts rules in the file.
const trace = createDebug('portfolio:rewrite');

export interface RewriteRuleSource { pattern: string; substitution: string; flags?: string[]; comment?: string }
export interface RuleFlags { last: boolean; qsa: boolean; nocase: boolean; redirect: number | null; forbidden: boolean; gone: boolean; proxy: boolean }
export interface CompiledRule { index: number; source: RewriteRuleSource; regex: RegExp; negate: boolean; flags: RuleFlags }
export type RewriteResult =
  | { kind: 'pass'; path: string; query: string; rule: number | null }
  | { kind: 'redirect'; status: number; location: string; rule: number }
  | { kind: 'forbidden'; rule: number }
  | { kind: 'gone'; rule: number }
  | { kind: 'proxy'; url: string; rule: number };
export interface CompileOptions { file?: string; scriptExists: (name: string) => boolean }

export class RewriteConfigError extends Error {
  override name = 'RewriteConfigError';
}

type SwitchFlag = Exclude<keyof RuleFlags, 'redirect'>;

// Short and long flag names, https://httpd.apache.org/docs/2.4/rewrite/flags.html
const FLAG_NAMES = new Map<string, SwitchFlag | 'redirect'>([
  ['l', 'last'], ['last', 'last'], ['qsa', 'qsa'], ['qsappend', 'qsa'], ['nc', 'nocase'], ['nocase', 'nocase'],
  ['r', 'redirect'], ['redirect', 'redirect'], ['f', 'forbidden'], ['forbidden', 'forbidden'],
  ['g', 'gone'], ['gone', 'gone'], ['p', 'proxy'], ['proxy', 'proxy'],
]);
const REDIRECT_CODES = new Map<string, number>([
  ['301', 301], ['302', 302], ['303', 303], ['307', 307], ['308', 308],
  ['permanent', 301], ['temp', 302], ['seeother', 303],
]);
const RULE_KEYS = new Set(['pattern', 'substitution', 'flags', 'comment']);
const ABSOLUTE_URL = /^https?:\/\//i;
const OTHER_SCHEME = /^[A-Za-z][A-Za-z0-9+.-]*:\/\//;
const SCRIPT_NAME = /^\/?([A-Za-z0-9_-]+)\.php$/;
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

// A substitution split once into literal text and group numbers, so a request only concatenates.
// Kept beside the rule in a WeakMap so CompiledRule stays the plain published shape.
type Piece = string | number;
interface Template { keep: boolean; absolute: boolean; path: Piece[]; query: Piece[] | null }
const templates = new WeakMap<CompiledRule, Template>();

interface RuleContext { file: string | undefined; index: number; pattern: string | undefined }

export function compileRules(input: unknown, options: CompileOptions): CompiledRule[] {
  const list = readRuleList(input, options.file);
  return list.map((raw, index) => compileRule(raw, { file: options.file, index, pattern: undefined }, options));
}

export async function loadRules(file: string, options: Omit<CompileOptions, 'file'>): Promise<CompiledRule[]> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new RewriteConfigError(`${file}: cannot read the rewrite table (${describeError(error)}); check that the file exists and is readable.`, { cause: error });
  }
  let input: unknown;
  try {
    input = JSON.parse(text);
  } catch (error) {
    throw new RewriteConfigError(`${file}: the rewrite table is not valid JSON (${describeError(error)}); fix the syntax and start again.`, { cause: error });
  }
  return compileRules(input, { ...options, file });
}

export function rewriteUrl(rules: readonly CompiledRule[], path: string, query: string): RewriteResult {
  const tracing = trace.enabled;
  let current = path;
  let currentQuery = query;
  let matched: number | null = null;
  let redirect: number | null = null;
  for (const rule of rules) {
    const match = rule.regex.exec(current);
    if ((match === null) !== rule.negate) {
      if (tracing) trace('rule %d %s did not match %s', rule.index + 1, rule.source.pattern, current);
      continue;
    }
    matched = rule.index;
    const { flags } = rule;
    if (flags.forbidden) return traceResult(path, query, { kind: 'forbidden', rule: rule.index });
    if (flags.gone) return traceResult(path, query, { kind: 'gone', rule: rule.index });
    const template = findTemplate(rule);
    const before = tracing ? joinQuery(current, currentQuery) : '';
    if (!template.keep) {
      // A negated pattern has no groups: every $N is empty (mod_rewrite docs, "!" prefix).
      current = expandPath(template, match);
      if (template.query !== null) currentQuery = mergeQuery(expandPieces(template.query, match, true), currentQuery, flags.qsa);
    }
    if (tracing) trace('rule %d %s matched %s -> %s', rule.index + 1, rule.source.pattern, before, joinQuery(current, currentQuery));
    if (flags.proxy) return traceResult(path, query, { kind: 'proxy', url: formatUrl(current, currentQuery), rule: rule.index });
    // R without L keeps going, and the client gets the URL the last rule leaves (flags.html#flag_r).
    redirect = flags.redirect ?? redirect ?? (template.absolute ? 302 : null);
    if (flags.last) break;
  }
  if (redirect !== null && matched !== null) {
    return traceResult(path, query, { kind: 'redirect', status: redirect, location: formatUrl(current, currentQuery), rule: matched });
  }
  return traceResult(path, query, { kind: 'pass', path: current, query: currentQuery, rule: matched });
}

function traceResult(path: string, query: string, result: RewriteResult): RewriteResult {
  if (trace.enabled) trace('%s -> %o', joinQuery(path, query), result);
  return result;
}

function findTemplate(rule: CompiledRule): Template {
  let template = templates.get(rule);
  if (template === undefined) {
    template = parseSubstitution(rule.source.substitution);
    templates.set(rule, template);
  }
  return template;
}

// The path stays percent-decoded while rules run; a relative result is taken against "/",
// as with "RewriteBase /". Back references in the query part are percent-encoded (Apache's
// B flag) because they come from the decoded path and the query is raw: "/person/a%26b" must
// not inject a parameter.
function expandPath(template: Template, match: RegExpExecArray | null): string {
  const path = expandPieces(template.path, match, false);
  return template.absolute || path.charCodeAt(0) === 0x2f ? path : '/' + path;
}

function expandPieces(pieces: readonly Piece[], match: RegExpExecArray | null, encode: boolean): string {
  let out = '';
  for (const piece of pieces) {
    if (typeof piece === 'string') {
      out += piece;
    } else {
      const value = match?.[piece] ?? '';
      out += encode ? encodeURIComponent(value.replace(LONE_SURROGATE, '\uFFFD')) : value;
    }
  }
  return out;
}

function mergeQuery(fresh: string, current: string, append: boolean): string {
  if (!append || current === '') return fresh;
  return fresh === '' ? current : fresh + '&' + current;
}

function joinQuery(path: string, query: string): string {
  return query === '' ? path : path + '?' + query;
}

// A URL that leaves the server is escaped again (Apache escapes unless NE is set), and a
// leading "//" or "/\" is collapsed so a path can never become a protocol-relative
// redirect to another host (an open redirect).
function formatUrl(current: string, query: string): string {
  let url: string;
  if (ABSOLUTE_URL.test(current)) {
    const start = current.indexOf('/', current.indexOf('//') + 2);
    url = start === -1 ? current : current.slice(0, start) + encodePath(current.slice(start));
  } else {
    url = encodePath(current.replace(/^[/\\]+/, '/'));
  }
  return joinQuery(url, query);
}

function encodePath(path: string): string {
  return encodeURI(path.replace(LONE_SURROGATE, '\uFFFD')).replace(/[?#]/g, (c) => (c === '?' ? '%3F' : '%23'));
}

function parseSubstitution(substitution: string): Template {
  if (substitution === '-') return { keep: true, absolute: false, path: [], query: null };
  const mark = substitution.indexOf('?');
  const pathText = mark === -1 ? substitution : substitution.slice(0, mark);
  return {
    keep: false,
    absolute: ABSOLUTE_URL.test(pathText),
    path: parsePieces(pathText),
    query: mark === -1 ? null : parsePieces(substitution.slice(mark + 1)),
  };
}

// "$N" is a back reference; "\$" and "\\" are a literal "$" and "\" (mod_rewrite docs).
function parsePieces(text: string): Piece[] {
  const pieces: Piece[] = [];
  let literal = '';
  for (let i = 0; i < text.length; i++) {
    const char = text.charAt(i);
    const next = text.charAt(i + 1);
    if (char === '\\' && (next === '$' || next === '\\')) {
      literal += next;
      i++;
    } else if (char === '$' && next >= '0' && next <= '9') {
      if (literal !== '') pieces.push(literal);
      literal = '';
      pieces.push(Number(next));
      i++;
    } else {
      literal += char;
    }
  }
  if (literal !== '') pieces.push(literal);
  return pieces;
}

function readRuleList(input: unknown, file: string | undefined): unknown[] {
  if (Array.isArray(input)) return input;
  const prefix = file === undefined ? '' : `${file}: `;
  if (isRecord(input)) {
    for (const key of Object.keys(input)) {
      if (key !== 'rules' && key !== 'comment') {
        throw new RewriteConfigError(`${prefix}unknown top-level key ${JSON.stringify(key)}; the table holds only "rules" (and an optional "comment").`);
      }
    }
    if (Array.isArray(input['rules'])) return input['rules'];
  }
  throw new RewriteConfigError(`${prefix}expected {"rules": [...]} or an array of rules, got ${describeType(input)}; write the table as {"rules": [{"pattern": "^/$", "substitution": "/index.php", "flags": ["L"]}]}.`);
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
    throw ruleError(context, `the pattern does not compile (${describeError(error)}); fix the regular expression (JavaScript syntax, close to PCRE).`);
  }
  const template = parseSubstitution(source.substitution);
  checkSubstitution({ source, template, flags, groups: countGroups(body) }, context, options);
  const rule: CompiledRule = { index: context.index, source, regex, negate, flags };
  templates.set(rule, template);
  return rule;
}

function checkRuleShape(raw: unknown, context: RuleContext): RewriteRuleSource {
  if (!isRecord(raw)) {
    throw ruleError(context, `expected an object, got ${describeType(raw)}; write each rule as {"pattern": "...", "substitution": "...", "flags": ["L"]}.`);
  }
  if (typeof raw['pattern'] === 'string') context.pattern = raw['pattern'];
  for (const key of Object.keys(raw)) {
    if (!RULE_KEYS.has(key)) throw ruleError(context, `unknown key ${JSON.stringify(key)}; the keys are pattern, substitution, flags and comment, so check the spelling.`);
  }
  const { pattern, substitution, flags, comment } = raw;
  if (typeof pattern !== 'string') throw ruleError(context, `"pattern" must be a string (a regular expression), got ${describeType(pattern)}.`);
  if (typeof substitution !== 'string') throw ruleError(context, `"substitution" must be a string, got ${describeType(substitution)}; use "-" to leave the path unchanged.`);
  if (substitution === '') throw ruleError(context, 'the substitution is empty; use "-" to leave the path unchanged.');
  if (flags !== undefined && !(Array.isArray(flags) && flags.every((flag) => typeof flag === 'string'))) {
    throw ruleError(context, `"flags" must be an array of strings such as ["L", "QSA"], got ${describeType(flags)}.`);
  }
  if (comment !== undefined && typeof comment !== 'string') throw ruleError(context, `"comment" must be a string, got ${describeType(comment)}.`);
  const source: RewriteRuleSource = { pattern, substitution };
  if (flags !== undefined) source.flags = flags as string[];
  if (comment !== undefined) source.comment = comment;
  return source;
}

function parseFlags(list: readonly string[], context: RuleContext): RuleFlags {
  const flags: RuleFlags = { last: false, qsa: false, nocase: false, redirect: null, forbidden: false, gone: false, proxy: false };
  for (const flag of list) {
    const eq = flag.indexOf('=');
    const name = FLAG_NAMES.get((eq === -1 ? flag : flag.slice(0, eq)).toLowerCase());
    if (name === undefined || (eq !== -1 && name !== 'redirect')) {
      throw ruleError(context, `unknown flag ${JSON.stringify(flag)}; use L, QSA, NC, R, R=301|302|303|307|308, F, G or P (or their long names).`);
    }
    if (name === 'redirect') {
      const status = eq === -1 ? 302 : REDIRECT_CODES.get(flag.slice(eq + 1).toLowerCase());
      if (status === undefined) throw ruleError(context, `flag ${JSON.stringify(flag)} has an unsupported status; use R=301, R=302, R=303, R=307 or R=308.`);
      flags.redirect = status;
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
    if (clash) throw ruleError(context, `flags ${names} cannot be combined, since each decides the answer on its own; keep one of them.`);
  }
}

interface SubstitutionCheck { source: RewriteRuleSource; template: Template; flags: RuleFlags; groups: number }

function checkSubstitution(check: SubstitutionCheck, context: RuleContext, options: CompileOptions): void {
  const { source, template, flags, groups } = check;
  const pathText = source.substitution.split('?', 1)[0] ?? '';
  if (!template.absolute && OTHER_SCHEME.test(pathText)) {
    throw ruleError(context, `the substitution ${JSON.stringify(source.substitution)} uses a URL scheme other than http or https; only http:// and https:// URLs are supported.`);
  }
  if (flags.proxy && !template.absolute) {
    throw ruleError(context, `flag P needs an absolute http:// or https:// substitution, got ${JSON.stringify(source.substitution)}; write the upstream URL, for example "http://127.0.0.1:8080$0".`);
  }
  const highest = Math.max(-1, ...[...template.path, ...(template.query ?? [])].filter((piece) => typeof piece === 'number'));
  if (highest > groups) {
    throw ruleError(context, `the substitution uses $${highest}, but the pattern has ${groups} capturing group${groups === 1 ? '' : 's'}; add a group to the pattern or refer to $0..$${groups}.`);
  }
  const script = pathText.includes('$') ? null : SCRIPT_NAME.exec(pathText)?.[1];
  if (script != null && !options.scriptExists(script)) {
    throw ruleError(context, `the substitution names scripts/${script}.ts, which does not exist; create that script or correct the name in the substitution.`);
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
