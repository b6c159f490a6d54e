// The search room: Primo's query language, the word index behind it (sql/009_search_words.sql, sql/010_search_index.sql)
// and the statements that rank, count and page its hits (docs/interface.md, Search).
// May import: db, http.
export type { Atom, Condition, Field, Match, Operator, ParsedLine } from './language.ts';
export { checkCondition, fields, fold, matches, maxTermLength, operators, parseCondition, parseLines } from './language.ts';
export type { Piece } from './highlight.ts';
export { excerpt, highlight } from './highlight.ts';
export type { FacetFilter, FacetName, FacetValue, Found, Hit, SearchLimits, SearchSpec, Sort } from './run.ts';
export { facetNames, rowsFound, Searcher, sorts } from './run.ts';
