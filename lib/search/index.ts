// The search room: Primo's query language, the word index each process keeps and follows
// (sql/009_search_words.sql, sql/012_search_changes.sql), and the ranking, counting and paging of
// its hits (docs/interface.md, Search).
// May import: db, http.
export type { Atom, Condition, Field, Match, Operator, ParsedLine } from './language.ts';
export { checkCondition, fields, fold, matches, maxTermLength, operators, parseCondition, parseLines } from './language.ts';
export type { Piece } from './highlight.ts';
export { excerpt, highlight } from './highlight.ts';
export { Searcher } from './run.ts';
export type { FacetFilter, FacetName, FacetValue, Found, Hit, RequestSearch, SearchLimits, SearchSpec, SearchStats, Sort } from './spec.ts';
export { facetNames, sorts } from './spec.ts';
export { Turns } from './turns.ts';
