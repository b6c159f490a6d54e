// What a search asks (the lines, scope, facets, order and page) and what it answers (the hits
// of the page, the total, the facets), between scripts/search.ts and lib/search/searcher.ts.
import type { Config } from '../config.ts';
import type { Db } from '../db/index.ts';
import type { Condition, ParsedLine } from './language.ts';
import type { Kind } from './texts.ts';

export const sorts = ['rank', 'title', 'author', 'date_d', 'date_a'] as const;
export type Sort = (typeof sorts)[number];
export const facetNames = ['rtype', 'creator', 'decade'] as const;
export type FacetName = (typeof facetNames)[number];

export interface FacetFilter {
  name: FacetName;
  mode: 'include' | 'exclude';
  value: string;
}

export interface SearchSpec {
  lines: ParsedLine[];
  scope: 'default_scope' | 'personen' | 'werke';
  facets: FacetFilter[];
  sort: Sort;
  offset: number;
  size: number;
}

export interface Hit {
  typ: 'person' | 'werk';
  id: number;
  titel: string;
  slug: string;
  person: string | null;
  score: number;
  beschreibung: string | null;
  art: string | null;
  jahr: number | null;
}

export interface FacetValue {
  value: string;
  count: number;
}

export interface Found {
  total: number;
  /** False when a kind had more hits than a search takes: total and counts are lower bounds. */
  exact: boolean;
  hits: Hit[];
  facets: Record<FacetName, FacetValue[]>;
  /** Folded words, stems and the index's words they stood for: what the HTML list marks. */
  marks: string[];
}

export interface SearchStats {
  personen: number;
  werke: number;
  bytes: number;
  searches: number;
  catchUps: number;
  reloads: number;
  snapshotsTaken: number;
  snapshotsWritten: number;
}

/** A search as a request runs it (lib/page/script-request.ts). */
export interface RequestSearch {
  /** The hits, ranked and counted, their facets, and the page asked for. */
  find(spec: SearchSpec): Promise<Found>;
  /** For a search without hits: the lines with the closest spellings the index has, or null. */
  suggest(conditions: readonly Condition[], lines: readonly ParsedLine[]): Promise<Condition[] | null>;
}

export interface SearchLimits {
  /** Hits of each kind a search takes from the index at most. */
  cap: number;
  timeoutMs: number;
  /** Searches of this process that may use the database at once; more wait for a turn, up to waitMs. */
  concurrency: number;
  waitMs: number;
}

/** A process's search limits, as the settings give them (lib/config.ts). */
export function limitsOf(config: Config): SearchLimits {
  return {
    cap: config.searchMaxHits,
    timeoutMs: config.searchTimeoutMs,
    concurrency: config.searchConcurrency,
    waitMs: config.searchWaitMs,
  };
}
/** The hits taken of each kind: ids in order, and their scores. */
export type Hits = Record<Kind, { ids: number[]; scores: number[] }>;

/**
 * What a serving process searches with: the word index it keeps itself (searcher.ts, the one process
 * of WEB_CONCURRENCY=1), or the one search process's, asked over its socket (service-client.ts).
 */
export interface SearchEngine {
  /** Resolves once searches can be answered from an index (with a search process: at once). */
  start(): Promise<void>;
  close(): Promise<void>;
  stats(): SearchStats | Promise<SearchStats>;
  forRequest(version: () => Promise<bigint | null>, db: Db): RequestSearch;
}
