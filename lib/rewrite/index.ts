// The rewrite room: the URL table with mod_rewrite's semantics, loaded and checked at start-up,
// and a pure function from request to decision; request.ts applies it to an HTTP request.
// Imports: http (the adapter in request.ts only).
export type { CompileOptions } from './compile.ts';
export { compileRules, loadRules } from './compile.ts';
export type { RewriteConditionSource } from './conditions.ts';
export type { Destination, SiteFiles } from './request.ts';
export { rewriteRequest } from './request.ts';
export { rewriteUrl } from './rounds.ts';
export type { RewriteRequest, RewriteResult, RewriteRuleSource, RewriteTable } from './table.ts';
export { RewriteConfigError } from './table.ts';
