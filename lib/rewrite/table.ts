// The rewrite table's shapes: the rules as written (RewriteRuleSource), as compiled, the request
// as the rules see it and the decision they reach. Semantics follow mod_rewrite:
// https://httpd.apache.org/docs/2.4/mod/mod_rewrite.html (server context for our own table,
// directory context for one imported from an .htaccess file).
import type { IncomingHttpHeaders } from 'node:http';
import type { CompiledCondition, RewriteConditionSource } from './conditions.ts';
import type { Piece } from './expand.ts';

export interface RewriteRuleSource {
  pattern: string;
  substitution: string;
  flags?: string[];
  conditions?: RewriteConditionSource[];
  comment?: string;
}
export interface RuleFlags {
  last: boolean;
  end: boolean;
  qsa: boolean;
  qsd: boolean;
  nocase: boolean;
  noescape: boolean;
  escape: boolean;
  chain: boolean;
  skip: number;
  discardPathInfo: boolean;
  redirect: number | null;
  forbidden: boolean;
  gone: boolean;
  proxy: boolean;
}
export interface CompiledRule {
  index: number;
  source: RewriteRuleSource;
  regex: RegExp;
  negate: boolean;
  flags: RuleFlags;
  conditions: CompiledCondition[];
  /** The substitution split once into literal text, back references and variables, so a request only concatenates. */
  template: Template;
}
/** A substitution as pieces; `keep` for "-", `absolute` for an http(s) URL (a redirect or a proxy). */
export interface Template {
  keep: boolean;
  absolute: boolean;
  path: Piece[];
  query: Piece[] | null;
}
export interface RewriteTable {
  rules: CompiledRule[];
  /** Directory context: the folder (site path ending in "/") the rules apply to, as an .htaccess file. */
  directory: string | null;
  /** RewriteBase: what relative substitutions are taken against in directory context. */
  base: string | null;
  /** Whether the front takes .html, .xml and .json off the path before rewriting. */
  representationSuffixes: boolean;
}
/** The request as the rules see it. The path is percent-decoded, the query raw and without "?". */
export interface RewriteRequest {
  path: string;
  query: string;
  method?: string;
  headers?: IncomingHttpHeaders;
  https?: boolean;
  /** THE_REQUEST, e.g. "GET /a?b HTTP/1.1". */
  requestLine?: string;
  remoteAddr?: string;
  /** -f and -d: whether a site path is a file (a public file or a script's /name.php) or a folder. */
  fileExists?: (path: string) => boolean;
  dirExists?: (path: string) => boolean;
}
type Outcome =
  | { kind: 'pass'; path: string; query: string; rule: number | null }
  | { kind: 'redirect'; status: number; location: string; rule: number }
  | { kind: 'forbidden'; rule: number }
  | { kind: 'gone'; rule: number }
  | { kind: 'proxy'; url: string; rule: number }
  | { kind: 'loop'; rule: number };
/** The decision, with the request headers the deciding conditions read (for Vary). */
export type RewriteResult = Outcome & { vary: string[] };
export class RewriteConfigError extends Error {
  override name = 'RewriteConfigError';
}
