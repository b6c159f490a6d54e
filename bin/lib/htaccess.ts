// Reads an Apache .htaccess file (or the inside of a <Directory> block) and turns its
// mod_rewrite directives into a rewrite table in directory context. Every line it cannot
// carry over comes back as a finding with its line number and the reason; none is dropped.
import path from 'node:path';
import { compileRules, RewriteConfigError } from '../../lib/rewrite/index.ts';
import { scriptOf } from '../../lib/script-name.ts';
import type { RewriteConditionSource, RewriteRuleSource } from '../../lib/rewrite/index.ts';

interface ImportOptions {
  /** Site path of the folder the file sits in, "/" for the document root. */
  directory: string;
  scriptExists: (name: string) => boolean;
  /** Where .php targets without a script of ours go, as P rules: e.g. http://127.0.0.1:8000. */
  upstream: string | null;
  /** Named in the table's comment. */
  source: string;
}
interface Finding {
  line: number;
  text: string;
  reason: string;
}
interface ImportedTable {
  comment: string;
  directory: string;
  base: string;
  representationSuffixes: false;
  rules: RewriteRuleSource[];
}
interface ImportResult {
  table: ImportedTable;
  findings: Finding[];
}

interface Line {
  number: number;
  text: string;
}
interface PendingCondition {
  line: Line;
  condition: RewriteConditionSource;
}

// Flags that change nothing in a site of scripts: no subrequests, and PT is ignored in directory context.
const HARMLESS_FLAGS = new Map([
  ['ns', 'there are no subrequests here'],
  ['nosubreq', 'there are no subrequests here'],
  ['pt', 'Apache ignores PT in directory context'],
  ['passthrough', 'Apache ignores PT in directory context'],
]);
const STATUS_FLAGS = new Map([
  ['403', 'F'],
  ['410', 'G'],
]);

export function importHtaccess(text: string, options: ImportOptions): ImportResult {
  const findings: Finding[] = [];
  const rules: RewriteRuleSource[] = [];
  let base = options.directory;
  let engineOn = false;
  let conditions: PendingCondition[] = [];
  const skipped = (line: Line, reason: string) => findings.push({ line: line.number, text: line.text, reason });
  for (const line of joinLines(text)) {
    const [name = '', ...args] = splitArguments(line.text);
    switch (name.toLowerCase()) {
      case '<ifmodule':
      case '</ifmodule>':
      case '<directory':
      case '</directory>':
        if (/^<ifmodule\s+!/i.test(line.text))
          skipped(
            line,
            'a negated <IfModule> block is for servers without the module; its contents are imported as if it held, so check them.',
          );
        break;
      case 'rewriteengine':
        engineOn = (args[0] ?? '').toLowerCase() === 'on';
        if (!engineOn)
          skipped(
            line,
            'RewriteEngine Off: the rules after it are imported anyway, so remove the ones Apache would not run.',
          );
        break;
      case 'rewritebase':
        if (!args[0]?.startsWith('/')) skipped(line, 'RewriteBase needs a URL path starting with "/".');
        else base = args[0].endsWith('/') ? args[0] : args[0] + '/';
        break;
      case 'rewritecond':
        conditions.push(...readCondition(line, args, skipped));
        break;
      case 'rewriterule': {
        const rule = convertRule({ line, args, conditions, base }, options, skipped);
        if (rule !== null) rules.push(rule);
        conditions = [];
        break;
      }
      default:
        skipped(line, explainOther(name));
    }
  }
  for (const pending of conditions)
    skipped(
      pending.line,
      'a RewriteCond belongs to the RewriteRule after it, and none follows; Apache ignores it too.',
    );
  if (!engineOn && rules.length > 0)
    findings.push({
      line: 0,
      text: '',
      reason: 'the file never says "RewriteEngine On", so Apache would run none of these rules.',
    });
  const table: ImportedTable = {
    comment: `Imported from ${options.source} by npm run import-htaccess: mod_rewrite's directory context, as in the .htaccess file.`,
    directory: options.directory,
    base,
    representationSuffixes: false,
    rules,
  };
  return { table, findings: findings.sort((a, b) => a.line - b.line) };
}

// A backslash at the end of a line continues the directive on the next one, as in httpd.conf.
function joinLines(text: string): Line[] {
  const lines: Line[] = [];
  let pending: Line | null = null;
  text.split(/\r?\n/).forEach((raw, index) => {
    const continued = raw.endsWith('\\');
    const body = continued ? raw.slice(0, -1) : raw;
    pending =
      pending === null ? { number: index + 1, text: body } : { number: pending.number, text: pending.text + body };
    if (continued) return;
    const text = pending.text.trim();
    if (text !== '' && !text.startsWith('#')) lines.push({ number: pending.number, text });
    pending = null;
  });
  return lines;
}

/** Splits a directive into words as mod_rewrite's parseargline does: quotes, and "\ " inside a word. */
export function splitArguments(text: string): string[] {
  const words: string[] = [];
  let i = 0;
  while (i < text.length) {
    while (i < text.length && /\s/.test(text.charAt(i))) i++;
    if (i >= text.length) break;
    const quote = text.charAt(i) === '"' || text.charAt(i) === "'" ? text.charAt(i++) : '';
    let word = '';
    for (; i < text.length; i++) {
      const char = text.charAt(i);
      if (quote === '' ? /\s/.test(char) : char === quote) break;
      if (char === '\\' && /\s/.test(text.charAt(i + 1))) {
        word += char + text.charAt(++i);
        continue;
      }
      word += char;
    }
    if (quote !== '') i++;
    words.push(word);
  }
  return words;
}

function readCondition(line: Line, args: string[], skipped: (line: Line, reason: string) => void): PendingCondition[] {
  const [test, pattern, flagField] = args;
  if (test === undefined || pattern === undefined || args.length > 3) {
    skipped(line, 'a RewriteCond needs a test string, a pattern and optionally [flags]; fix the line.');
    return [];
  }
  const flags = flagField === undefined ? [] : readFlagField(flagField);
  const condition: RewriteConditionSource = flags.length > 0 ? { test, pattern, flags } : { test, pattern };
  return [{ line, condition }];
}

function readFlagField(field: string): string[] {
  return field
    .replace(/^\[|\]$/g, '')
    .split(',')
    .map((flag) => flag.trim())
    .filter((flag) => flag !== '');
}

interface RuleInput {
  line: Line;
  args: string[];
  conditions: PendingCondition[];
  base: string;
}

function convertRule(
  input: RuleInput,
  options: ImportOptions,
  skipped: (line: Line, reason: string) => void,
): RewriteRuleSource | null {
  const { line, args, conditions, base } = input;
  const [pattern, substitution, flagField] = args;
  const dropConditions = (why: string) =>
    conditions.forEach((c) => skipped(c.line, `belongs to the rule on line ${line.number}, which ${why}.`));
  if (pattern === undefined || substitution === undefined || args.length > 3) {
    skipped(line, 'a RewriteRule needs a pattern, a substitution and optionally [flags]; fix the line.');
    dropConditions('is not imported');
    return null;
  }
  const flags: string[] = [];
  let target = substitution;
  for (const flag of flagField === undefined ? [] : readFlagField(flagField)) {
    const [key = '', value] = flag.split('=', 2);
    const lower = key.toLowerCase();
    if (HARMLESS_FLAGS.has(lower)) {
      skipped(line, `flag ${flag} left out: ${HARMLESS_FLAGS.get(lower)}.`);
    } else if ((lower === 'r' || lower === 'redirect') && value !== undefined && STATUS_FLAGS.has(value)) {
      flags.push(STATUS_FLAGS.get(value) as string);
    } else {
      flags.push(flag);
    }
  }
  const legacy = mapLegacyScript(target, base, options);
  if (legacy === 'missing') {
    const name = path.posix.basename(target.split('?', 1)[0] ?? '', '.php');
    skipped(
      line,
      `${name}.php has no script scripts/${name}.ts; create the script, or give --upstream with the legacy server's URL to proxy it there.`,
    );
    dropConditions('is not imported');
    return null;
  }
  if (legacy !== null) {
    target = legacy;
    flags.splice(0, flags.length, ...flags.filter((flag) => !/^(l|last|end)$/i.test(flag)), 'P');
  }
  const rule: RewriteRuleSource = { pattern, substitution: target };
  if (flags.length > 0) rule.flags = flags;
  if (conditions.length > 0) rule.conditions = conditions.map((c) => c.condition);
  rule.comment = `line ${line.number}: ${line.text}`;
  const problem = checkRule(rule, options);
  if (problem !== null) {
    skipped(line, problem);
    dropConditions('is not imported');
    return null;
  }
  return rule;
}

/** A P rule's URL for a .php target we have no script for; null when nothing changes. */
function mapLegacyScript(substitution: string, base: string, options: ImportOptions): string | 'missing' | null {
  const pathPart = substitution.split('?', 1)[0] ?? '';
  if (/^https?:\/\//i.test(pathPart) || /[$%]/.test(pathPart)) return null;
  const name = scriptOf(pathPart);
  if (!pathPart.endsWith('.php') || (name !== null && options.scriptExists(name))) return null;
  if (options.upstream === null) return 'missing';
  const sitePath = pathPart.startsWith('/') ? pathPart : base + pathPart;
  return options.upstream.replace(/\/+$/, '') + sitePath + substitution.slice(pathPart.length);
}

// The rule must load in our table exactly as the server will load it.
function checkRule(rule: RewriteRuleSource, options: ImportOptions): string | null {
  try {
    compileRules({ directory: options.directory, rules: [rule] }, { scriptExists: options.scriptExists });
    return null;
  } catch (error) {
    if (error instanceof RewriteConfigError)
      return error.message.replace(/^rule 1 \(pattern "(?:[^"\\]|\\.)*"\): /, '');
    throw error;
  }
}

function explainOther(name: string): string {
  const directive = name.replace(/^<\/?/, '').replace(/>$/, '');
  const lower = directive.toLowerCase();
  if (lower === 'rewriteoptions')
    return 'RewriteOptions (inheritance between folders) has no counterpart: the table is one folder.';
  if (lower === 'rewritemap')
    return 'RewriteMap is not available in .htaccess, and the table has no maps; spell the mapping out as rules.';
  if (['redirect', 'redirectmatch', 'redirectpermanent', 'redirecttemp'].includes(lower))
    return `${directive} is mod_alias, not mod_rewrite; write it as a RewriteRule with [R=301,L].`;
  if (name.startsWith('<')) return `<${directive}> blocks are not imported; their directives are not rewrite rules.`;
  return `${directive} is not a mod_rewrite directive; the server has its own setting for it, or none (docs/migrating.md, Apache's .htaccess).`;
}
