// Turns passes of the rewrite table into one decision. Server context (our own table): one
// pass. Directory context (an imported .htaccess): Apache's per-directory rounds, where a
// changed path is an internal redirect that runs the rules again (hook_fixup in mod_rewrite.c).
import createDebug from 'debug';
import { escapeLikeApache, isAbsoluteUrl, LONE_SURROGATE } from './expand.ts';
import type { Pass } from './pass.ts';
import { currentPath, runPass, startPass } from './pass.ts';
import type { RewriteRequest, RewriteResult, RewriteTable } from './table.ts';

// Apache's LimitInternalRecursion default: the eleventh internal redirect is a 500.
const MAX_INTERNAL_REDIRECTS = 10;
// Like Apache's RewriteLog trace: DEBUG=portfolio:rewrite shows every rewrite.
const trace = createDebug('portfolio:rewrite');

/** Applies the table to one request: the first matching rules decide. */
export function rewriteUrl(table: RewriteTable, request: RewriteRequest): RewriteResult {
  const result = table.directory === null ? rewriteInServer(table, request) : rewriteInDirectory(table, request);
  if (trace.enabled)
    trace('%s -> %o', request.query === '' ? request.path : `${request.path}?${request.query}`, result);
  return result;
}

function rewriteInServer(table: RewriteTable, request: RewriteRequest): RewriteResult {
  const pass = startPass(request, null, request.path);
  const stop = runPass(table.rules, pass);
  const { vary } = pass;
  if (stop?.kind === 'proxy')
    return { kind: 'proxy', url: formatUrl(pass.filename, pass.query, pass.noescape), rule: stop.rule, vary };
  if (stop) return { ...stop, vary };
  if (pass.redirect !== null && pass.matched !== null) {
    return {
      kind: 'redirect',
      status: pass.redirect,
      location: formatUrl(pass.filename, pass.query, pass.noescape),
      rule: pass.matched,
      vary,
    };
  }
  return { kind: 'pass', path: pass.filename, query: pass.query, rule: pass.matched, vary };
}

function rewriteInDirectory(table: RewriteTable, request: RewriteRequest): RewriteResult {
  const directory = table.directory as string;
  const base = table.base ?? directory;
  const vary: string[] = [];
  let current = request;
  let matched: number | null = null;
  for (let redirects = 0; ; redirects++) {
    // Apache reads an .htaccess only for requests inside its folder.
    if (!current.path.startsWith(directory))
      return { kind: 'pass', path: current.path, query: current.query, rule: matched, vary };
    const walked = walkFilename(current, directory);
    const pass = startPass(current, directory, walked);
    const stop = runPass(table.rules, pass);
    vary.push(...pass.vary);
    matched = pass.matched ?? matched;
    if (stop?.kind === 'proxy')
      return { kind: 'proxy', url: apacheUrl(pass, base, current.query), rule: stop.rule, vary };
    if (stop) return { ...stop, vary };
    if (!pass.changed) return { kind: 'pass', path: current.path, query: current.query, rule: matched, vary };
    if (pass.redirect !== null || pass.absolute) {
      return {
        kind: 'redirect',
        status: pass.redirect ?? 302,
        location: apacheUrl(pass, base, current.query),
        rule: matched as number,
        vary,
      };
    }
    // The same file again: Apache serves it with the new query instead of looping.
    if (pass.inDir && directory + pass.filename === walked)
      return { kind: 'pass', path: walked, query: pass.query, rule: matched, vary };
    const next = { ...current, path: decodePath(pass.inDir ? base + pass.filename : pass.filename), query: pass.query };
    if (pass.end) return { kind: 'pass', path: next.path, query: next.query, rule: matched, vary };
    if (redirects === MAX_INTERNAL_REDIRECTS) return { kind: 'loop', rule: matched as number, vary };
    current = next;
  }
}

/**
 * The file Apache maps a path to before the rules run: the path up to the first part that is a
 * file or does not exist; the rest is PATH_INFO (ap_directory_walk).
 */
function walkFilename(request: RewriteRequest, directory: string): string {
  const { fileExists, dirExists, path } = request;
  if (fileExists === undefined || dirExists === undefined) return path;
  let current = '';
  for (const part of path.slice(1).split('/')) {
    const candidate = current + '/' + part;
    if (part === '' || fileExists(candidate) || !dirExists(candidate))
      return candidate.length < directory.length ? path : candidate;
    current = candidate;
  }
  return current;
}

// An internal redirect is parsed as a new request, so its path is percent-decoded again.
function decodePath(path: string): string {
  try {
    return decodeURIComponent(path);
  } catch {
    return path;
  }
}

// Apache escapes a redirect's path, and its query when a rule changed it, unless NE is set.
function apacheUrl(pass: Pass, base: string, originalQuery: string): string {
  const target = pass.inDir ? base + pass.filename : currentPath(pass);
  let url = target;
  if (!pass.noescape) {
    const start = isAbsoluteUrl(target) ? target.indexOf('/', target.indexOf('//') + 2) : 0;
    url = start === -1 ? target : target.slice(0, start) + escapeLikeApache(target.slice(start));
  }
  if (pass.query === '') return url;
  return url + '?' + (pass.noescape || pass.query === originalQuery ? pass.query : escapeLikeApache(pass.query));
}

// A URL that leaves the server is escaped again (Apache escapes unless NE is set), and a
// leading "//" or "/\" is collapsed so a path can never become a protocol-relative
// redirect to another host (an open redirect).
function formatUrl(current: string, query: string, noescape: boolean): string {
  const encode = noescape ? (path: string) => path : encodePath;
  let url: string;
  if (isAbsoluteUrl(current)) {
    const start = current.indexOf('/', current.indexOf('//') + 2);
    url = start === -1 ? current : current.slice(0, start) + encode(current.slice(start));
  } else {
    url = encode(current.replace(/^[/\\]+/, '/'));
  }
  return query === '' ? url : url + '?' + query;
}

function encodePath(path: string): string {
  return encodeURI(path.replace(LONE_SURROGATE, '\uFFFD')).replace(/[?#]/g, (c) => (c === '?' ? '%3F' : '%23'));
}
