// One pass of the rewrite table over a request, as apply_rewrite_list and apply_rewrite_rule
// in httpd's mod_rewrite.c: pattern, then conditions, then substitution and flags (L, END,
// C, S=N, QSA, QSD, B, DPI, R, F, G, P). In directory context the path is taken relative to
// the directory, as in an .htaccess file; rounds.ts repeats passes like Apache does.
import createDebug from 'debug';
import type { ConditionScope } from './conditions.ts';
import { conditionsHold } from './conditions.ts';
import type { Expansion } from './expand.ts';
import { escapeBackReference, expandPieces, headerOf, LONE_SURROGATE } from './expand.ts';
import type { CompiledRule, RewriteRequest, Template } from './table.ts';

/** The request as the rules leave it. In directory context `filename` is relative while `inDir`. */
export interface Pass {
  request: RewriteRequest;
  directory: string | null;
  /** REQUEST_URI: the path this pass started from. */
  uri: string;
  filename: string;
  inDir: boolean;
  pathInfo: string;
  query: string;
  absolute: boolean;
  changed: boolean;
  matched: number | null;
  redirect: number | null;
  noescape: boolean;
  end: boolean;
  vary: string[];
}

type PassStop = { kind: 'forbidden'; rule: number } | { kind: 'gone'; rule: number } | { kind: 'proxy'; rule: number };

// Like Apache's RewriteLog trace: DEBUG=portfolio:rewrite shows every rule tried (numbered from 1).
const trace = createDebug('portfolio:rewrite');
// CVE-2023-25690: Apache 2.4.56 and later refuse a rewritten query with spaces or controls (AH10411).
const UNSAFE_QUERY = /[\x00-\x20\x7f]/;

export function startPass(request: RewriteRequest, directory: string | null, walked: string): Pass {
  const inDir = directory !== null && walked.startsWith(directory);
  return {
    request,
    directory,
    uri: request.path,
    filename: inDir ? walked.slice((directory as string).length) : walked,
    inDir,
    pathInfo: request.path.slice(walked.length),
    query: request.query,
    absolute: false,
    changed: false,
    matched: null,
    redirect: null,
    noescape: false,
    end: false,
    vary: [],
  };
}

/** Runs the rules once; a stop (F, G, P) ends the request at once. */
export function runPass(rules: readonly CompiledRule[], pass: Pass): PassStop | null {
  for (let i = 0; i < rules.length; i++) {
    const rule = rules[i] as CompiledRule;
    const applied = applyRule(rule, pass);
    if (applied === false) {
      // A chained rule that fails skips the rest of its chain (flags.html#flag_c).
      while (i < rules.length && rules[i]?.flags.chain) i++;
      continue;
    }
    if (applied !== true) return applied;
    if (rule.flags.end) {
      pass.end = true;
      break;
    }
    if (rule.flags.last) break;
    i += rule.flags.skip;
  }
  return null;
}

function applyRule(rule: CompiledRule, pass: Pass): boolean | PassStop {
  const subject = matchSubject(pass);
  const match = rule.regex.exec(subject);
  if ((match === null) !== rule.negate) {
    if (trace.enabled) trace('rule %d %s did not match %s', rule.index + 1, rule.source.pattern, subject);
    return false;
  }
  const scope: ConditionScope = {
    expansion: {
      rule: rule.negate ? null : match,
      cond: null,
      lookup: (name) => lookupVariable(name, pass, scope),
      escape: null,
    },
    fileExists: (path) => testPath(pass.request.fileExists, path),
    dirExists: (path) => testPath(pass.request.dirExists, path),
    pending: [],
    vary: [],
  };
  if (!conditionsHold(rule.conditions, scope)) {
    if (trace.enabled)
      trace('rule %d %s matched %s, but its conditions did not hold', rule.index + 1, rule.source.pattern, subject);
    return false;
  }
  pass.vary.push(...scope.vary);
  pass.matched = rule.index;
  const { flags } = rule;
  if (flags.forbidden) return { kind: 'forbidden', rule: rule.index };
  if (flags.gone) return { kind: 'gone', rule: rule.index };
  const { template } = rule;
  if (!template.keep) {
    const forbidden = substitute(template, rule, pass, scope.expansion);
    if (forbidden) return { kind: 'forbidden', rule: rule.index };
  }
  if (trace.enabled)
    trace('rule %d %s matched %s -> %s?%s', rule.index + 1, rule.source.pattern, subject, pass.filename, pass.query);
  if (flags.proxy) return { kind: 'proxy', rule: rule.index };
  // R without L keeps going, and the client gets the URL the last rule leaves (flags.html#flag_r).
  pass.redirect = flags.redirect ?? pass.redirect ?? (!template.keep && template.absolute ? 302 : null);
  return true;
}

/** What the pattern sees: in directory context the path below the directory plus the path info. */
function matchSubject(pass: Pass): string {
  return pass.directory === null ? pass.filename : pass.filename + pass.pathInfo;
}

/** Applies a substitution; true when Apache would refuse the result (403). */
function substitute(template: Template, rule: CompiledRule, pass: Pass, expansion: Expansion): boolean {
  const { flags } = rule;
  let path: string;
  let fresh: string | null;
  if (pass.directory === null) {
    // Our own table: back references in the query are always escaped, since they come from
    // the decoded path and the query is raw: "/person/a%26b" must not add a parameter.
    path = expandPieces(template.path, { ...expansion, escape: flags.escape ? escapeBackReference : null });
    fresh =
      template.query === null
        ? null
        : expandPieces(template.query, { ...expansion, escape: flags.escape ? escapeBackReference : encodeQueryValue });
    if (!template.absolute && path.charCodeAt(0) !== 0x2f) path = '/' + path;
  } else {
    // Apache expands first and splits at the first "?" afterwards (splitout_queryargs).
    const escape = flags.escape ? escapeBackReference : null;
    const whole =
      expandPieces(template.path, { ...expansion, escape }) +
      (template.query === null ? '' : '?' + expandPieces(template.query, { ...expansion, escape }));
    const mark = whole.indexOf('?');
    path = mark === -1 ? whole : whole.slice(0, mark);
    fresh = mark === -1 ? null : whole.slice(mark + 1);
    pass.inDir = !template.absolute && path.charCodeAt(0) !== 0x2f;
    if (flags.discardPathInfo) pass.pathInfo = '';
    if (fresh !== null && UNSAFE_QUERY.test(fresh)) return true;
  }
  pass.filename = path;
  pass.absolute = template.absolute;
  pass.changed = true;
  pass.noescape ||= flags.noescape;
  if (fresh !== null)
    pass.query =
      flags.qsa && !flags.qsd && pass.query !== '' ? (fresh === '' ? pass.query : fresh + '&' + pass.query) : fresh;
  else if (flags.qsd) pass.query = '';
  return false;
}

function encodeQueryValue(value: string): string {
  return encodeURIComponent(value.replace(LONE_SURROGATE, '\uFFFD'));
}

/** The current file name as a site path: what -f, -d and %{REQUEST_FILENAME} see. */
export function currentPath(pass: Pass): string {
  return pass.directory !== null && pass.inDir ? pass.directory + pass.filename : pass.filename;
}

// File tests take site paths; %{DOCUMENT_ROOT} is empty, so "%{DOCUMENT_ROOT}/%{REQUEST_URI}" gives "//x".
function testPath(test: ((path: string) => boolean) | undefined, path: string): boolean {
  return test !== undefined && path.startsWith('/') && test(path.replace(/\/{2,}/g, '/'));
}

function lookupVariable(name: string, pass: Pass, scope: ConditionScope): string {
  const { request } = pass;
  const header = headerOf(name);
  if (header !== null) {
    const value = request.headers?.[header.toLowerCase()];
    if (value === undefined) return '';
    // Vary: Host is pointless (RFC 9110 section 12.5.5), so Apache leaves it out.
    if (header.toLowerCase() !== 'host') scope.pending.push(header);
    return Array.isArray(value) ? value.join(', ') : value;
  }
  const method = request.method ?? 'GET';
  switch (name) {
    case 'REQUEST_URI':
      return pass.uri;
    case 'QUERY_STRING':
      return pass.query;
    case 'REQUEST_METHOD':
      return method;
    case 'REQUEST_FILENAME':
    case 'SCRIPT_FILENAME':
      return currentPath(pass);
    case 'THE_REQUEST':
      return (
        request.requestLine ?? `${method} ${request.path}${request.query === '' ? '' : '?' + request.query} HTTP/1.1`
      );
    case 'HTTPS':
      return request.https ? 'on' : 'off';
    case 'REQUEST_SCHEME':
      return request.https ? 'https' : 'http';
    case 'REMOTE_ADDR':
      return request.remoteAddr ?? '';
    default:
      return ''; // DOCUMENT_ROOT: site paths start at the root
  }
}
