// The rewrite room: the URL table with mod_rewrite's semantics, loaded and checked at start-up,
// and a pure function from request to decision; request.ts applies it to an HTTP request.
// May import: http (request.ts only).
export { compileRules, loadRules } from './compile.ts';
export type { RewriteConditionSource } from './conditions.ts';
export { rewriteRequest } from './request.ts';
export { rewriteUrl } from './rounds.ts';
export type { RewriteRequest, RewriteResult, RewriteRuleSource } from './table.ts';
export { RewriteConfigError } from './table.ts';
