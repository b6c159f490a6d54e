// The search room: Primo's query language, the word index and how it follows the database
// (sql/009_search_words.sql, sql/012_search_changes.sql), kept by one process a server (the one
// process, or the search process beside the workers: service.ts, service-client.ts), and the ranking,
// counting and paging of its hits (docs/interface.md, Search).
// May import: db, http.
export type { Atom, Condition, Field, Match, Operator, ParsedLine } from './language.ts';
export {
  checkCondition,
  fields,
  fold,
  matches,
  maxTermLength,
  operators,
  parseCondition,
  parseLines,
} from './language.ts';
export type { Piece } from './highlight.ts';
export { excerpt, highlight } from './highlight.ts';
export { SearchClient } from './service-client.ts';
export { Searcher } from './searcher.ts';
export { runSearchService } from './service.ts';
export type {
  FacetFilter,
  FacetName,
  FacetValue,
  Found,
  Hit,
  RequestSearch,
  SearchEngine,
  SearchLimits,
  SearchSpec,
  SearchStats,
  Sort,
} from './spec.ts';
export { facetNames, limitsOf, sorts } from './spec.ts';
export { Turns } from './turns.ts';
