// RewriteCond for the rewrite table: a test string, a pattern (regex, =, <, >, <=, >=, -f, -d,
// each negatable with "!") and the flags NC, OR and NV, evaluated as apply_rewrite_cond and
// apply_rewrite_rule in httpd's mod_rewrite.c do, including %N and the Vary bookkeeping.
import type { Expansion, Piece } from './expand.ts';
import { ExpandError, expandPieces, parsePieces } from './expand.ts';

export interface RewriteConditionSource {
  test: string;
  pattern: string;
  flags?: string[];
}
type Comparison = 'regex' | 'equal' | 'less' | 'greater' | 'lessOrEqual' | 'greaterOrEqual' | 'file' | 'directory';
export interface CompiledCondition {
  source: RewriteConditionSource;
  test: Piece[];
  comparison: Comparison;
  negate: boolean;
  regex: RegExp | null;
  operand: string;
  nocase: boolean;
  or: boolean;
  novary: boolean;
}

/** What one rule's conditions see: the rule's match, the file tests and the Vary list to fill. */
export interface ConditionScope {
  expansion: Expansion;
  fileExists: (path: string) => boolean;
  dirExists: (path: string) => boolean;
  /** Header names read while the current condition was expanded. */
  pending: string[];
  /** Header names of the conditions that held, for the response's Vary. */
  vary: string[];
}

const CONDITION_KEYS = new Set(['test', 'pattern', 'flags']);
const CONDITION_FLAGS = new Map([
  ['nc', 'nocase'],
  ['nocase', 'nocase'],
  ['or', 'or'],
  ['ornext', 'or'],
  ['nv', 'novary'],
  ['novary', 'novary'],
] as const);
const OPERATORS: [string, Comparison][] = [
  ['<=', 'lessOrEqual'],
  ['>=', 'greaterOrEqual'],
  ['<', 'less'],
  ['>', 'greater'],
  ['=', 'equal'],
];

/** Compiles one condition; a message without position, for the caller to place. */
export function compileCondition(raw: unknown): CompiledCondition {
  const source = checkConditionShape(raw);
  const flags = { nocase: false, or: false, novary: false };
  for (const flag of source.flags ?? []) {
    const name = CONDITION_FLAGS.get(flag.toLowerCase() as never);
    if (name === undefined) throw new ExpandError(`unknown condition flag ${JSON.stringify(flag)}; use NC, OR or NV.`);
    flags[name] = true;
  }
  const negate = source.pattern.startsWith('!');
  const body = negate ? source.pattern.slice(1) : source.pattern;
  const [comparison, operand] = readComparison(body);
  let regex: RegExp | null = null;
  if (comparison === 'regex') {
    try {
      regex = new RegExp(operand, flags.nocase ? 'i' : '');
    } catch (error) {
      throw new ExpandError(
        `the condition pattern ${JSON.stringify(source.pattern)} does not compile (${(error as Error).message}); fix the regular expression.`,
      );
    }
  }
  // NC means nothing to -f and -d; Apache ignores it there with a warning.
  const nocase = flags.nocase && comparison !== 'file' && comparison !== 'directory';
  return {
    source,
    test: parsePieces(source.test),
    comparison,
    negate,
    regex,
    operand,
    nocase,
    or: flags.or,
    novary: flags.novary,
  };
}

function checkConditionShape(raw: unknown): RewriteConditionSource {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new ExpandError(
      'each condition must be an object such as {"test": "%{HTTP_HOST}", "pattern": "^www\\\\.", "flags": ["NC"]}.',
    );
  }
  const record = raw as Record<string, unknown>;
  for (const key of Object.keys(record)) {
    if (!CONDITION_KEYS.has(key))
      throw new ExpandError(`unknown condition key ${JSON.stringify(key)}; the keys are test, pattern and flags.`);
  }
  const { test, pattern, flags } = record;
  if (typeof test !== 'string' || test === '')
    throw new ExpandError('a condition needs "test", the string to test, such as "%{REQUEST_FILENAME}".');
  if (typeof pattern !== 'string' || pattern === '')
    throw new ExpandError('a condition needs "pattern", such as "!-f" or "^www\\\\.".');
  if (flags !== undefined && !(Array.isArray(flags) && flags.every((flag) => typeof flag === 'string'))) {
    throw new ExpandError('condition "flags" must be an array of strings such as ["NC", "OR"].');
  }
  return flags === undefined ? { test, pattern } : { test, pattern, flags: flags as string[] };
}

function readComparison(body: string): [Comparison, string] {
  if (body === '-f') return ['file', ''];
  if (body === '-d') return ['directory', ''];
  // Apache reads any other "-x" as a file test and "-eqN", "-ltN"... as integer comparisons.
  if (/^-.$/.test(body) || /^-(?:eq|ne|lt|le|gt|ge)./.test(body)) {
    throw new ExpandError(
      `the condition test ${JSON.stringify(body)} is not supported; use a regular expression, =, <, >, <=, >=, -f or -d.`,
    );
  }
  if (body.length > 1) {
    for (const [operator, comparison] of OPERATORS) {
      if (!body.startsWith(operator)) continue;
      const operand = body.slice(operator.length);
      // '=""' compares with the empty string (mod_rewrite docs, RewriteCond).
      return [comparison, comparison === 'equal' && operand === '""' ? '' : operand];
    }
  }
  return ['regex', body];
}

/** Whether a rule's conditions hold, with [OR] chains; fills scope.vary as Apache does. */
export function conditionsHold(conditions: readonly CompiledCondition[], scope: ConditionScope): boolean {
  for (let i = 0; i < conditions.length; i++) {
    const condition = conditions[i] as CompiledCondition;
    scope.pending.length = 0;
    const holds = testCondition(condition, scope);
    if (condition.novary) scope.pending.length = 0;
    if (condition.or) {
      if (!holds) continue;
      // One alternative held: skip the rest of this [OR] chain, including its last member.
      while (i < conditions.length && conditions[i]?.or) i++;
    } else if (!holds) {
      return false;
    }
    scope.vary.push(...scope.pending);
  }
  return true;
}

function testCondition(condition: CompiledCondition, scope: ConditionScope): boolean {
  const input = expandPieces(condition.test, scope.expansion);
  let holds: boolean;
  switch (condition.comparison) {
    case 'file':
      holds = scope.fileExists(input);
      break;
    case 'directory':
      holds = scope.dirExists(input);
      break;
    case 'regex': {
      const match = (condition.regex as RegExp).exec(input);
      holds = match !== null;
      // Only a positive match becomes %N (apply_rewrite_cond).
      if (holds && !condition.negate) scope.expansion.cond = match;
      break;
    }
    default:
      holds = compareStrings(condition, input);
  }
  return holds !== condition.negate;
}

function compareStrings(condition: CompiledCondition, input: string): boolean {
  const order = condition.nocase
    ? compareCaseless(input, condition.operand)
    : compareLexicography(input, condition.operand);
  switch (condition.comparison) {
    case 'equal':
      return order === 0;
    case 'less':
      return order < 0;
    case 'greater':
      return order > 0;
    case 'lessOrEqual':
      return order <= 0;
    default:
      return order >= 0;
  }
}

// mod_rewrite's compare_lexicography: a longer string is always greater, equal lengths compare by bytes.
function compareLexicography(a: string, b: string): number {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  if (left.length !== right.length) return left.length > right.length ? 1 : -1;
  return Buffer.compare(left, right);
}

function compareCaseless(a: string, b: string): number {
  const left = a.toLowerCase();
  const right = b.toLowerCase();
  return left === right ? 0 : left < right ? -1 : 1;
}
