// Runs a search (docs/interface.md, Search) on the process's word index (word-index.ts), brought up
// to date first (sync.ts): its words are looked up in the vocabulary, its plan (plan.ts) takes the
// first hits of each kind in the order of their ids (match.ts), and those are ranked, counted
// (facets.ts) and paged (result-page.ts). The database gives what the index does not keep: the page's
// rows, read by key where the request reads (a replica may answer), and the stems of words the
// index has not seen, each a short lookup, pipelined; the folded descriptions a phrase is checked
// on and the closest spellings (suggest.ts), within the share of connections searches may take,
// under a time-out of their own: one that runs into it is 503, never 500.
import type { Db } from '../db/index.ts';
import { DbUnavailableError } from '../db/index.ts';
import { HttpError } from '../http/index.ts';
import { facetsOf, withFacets } from './facets.ts';
import type { ParsedLine } from './language.ts';
import { quoteTerms } from './language.ts';
import { scoreRows, takeRows } from './match.ts';
import type { Ranked } from './result-page.ts';
import { pageOf, pageRowsRead } from './result-page.ts';
import type { Plan } from './plan.ts';
import { kindPlan } from './plan.ts';
import type { Found, Hits, RequestSearch, SearchEngine, SearchLimits, SearchSpec, SearchStats } from './spec.ts';
import { suggest } from './suggest.ts';
import type { SyncOptions } from './sync.ts';
import { IndexSync } from './sync.ts';
import type { Descriptions } from './texts.ts';
import { textsOf } from './texts.ts';
import { LoopTurns, Turns } from './turns.ts';
import type { WordInfo } from './vocabulary.ts';
import type { WordLookup } from './words.ts';
import { lookupKey, lookupsOf, marksOf } from './words.ts';
import type { WordIndex } from './word-index.ts';

/** Words a compound part or a wildcard stands for at most, and all of a search's together. */
const maxExpansions = 60;
const expansionBudget = 120;
/** Rows a search's phrases may be checked on, per kind, as a multiple of the hits it takes. */
const checksPerHit = 20;
/**
 * Rows whose descriptions a search's phrases may be read for, per kind, in statements of 1,000
 * rows at most: well within SEARCH_TIMEOUT_MS at a million works, as much as any search may cost.
 */
const maxDescribed = 2000;
/** The data version a search must see, or 'latest': the index as it last was. */
export type Wanted = bigint | null | 'latest';

/** Stems of words (null for a stop word), as PostgreSQL's German stemmer gives them. */
export type Stems = Record<string, string | null>;

/** The words of lookups whose stems are looked up (wildcards are expanded instead), each once. */
function stemmedWords(lookups: readonly WordLookup[]): string[] {
  return [...new Set(lookups.filter((l) => !/[*?]/.test(l.word)).map((l) => l.word))];
}

/** Each word's stem, from the database: a short statement, pipelined as lookups by key are. */
async function readStems(db: Db, words: string[]): Promise<Stems> {
  const rows = await db.query<{ word: string; stem: string | null }>(
    `SELECT q.word, (tsvector_to_array(to_tsvector('german', q.word)))[1] AS stem FROM unnest($1::text[]) AS q(word)`,
    [words],
    { name: 'search-stems', pipeline: true },
  );
  return Object.fromEntries(rows.map(({ word, stem }) => [word, stem]));
}

/** A search's answer: what it found but the page's rows, and the page's hits, whose rows are read where the request reads. */
export interface Searched {
  found: Found;
  page: Ranked[];
}

/** A search before the index is read: this process's, or the search process's (service-client.ts). */
export function indexNotRead(): HttpError {
  return new HttpError(503, 'Search is starting: its index is being read. Try again in a few seconds.', {
    headers: { 'retry-after': '5' },
  });
}

/**
 * The search one request runs: on an index with every change the request's data version of the
 * primary counts (read once for the request and the requests that come with it), reading its
 * rows from `db`, where the request reads; rows a replica does not have yet are read from the
 * primary, so a page shows every hit the index counts. While the primary cannot be reached, on
 * the index as it last was: a replica answers the rest, as it does for the other pages. `search`
 * is the index's: this process's (Searcher, which asks `db` for stems itself), or the search
 * process's (service-client.ts: `stemsHere`, the stems it would ask of the primary are read here then).
 */
export function requestSearch(parts: {
  primary: Db;
  db: Db;
  version: () => Promise<bigint | null>;
  turns: Turns;
  timeoutMs: number;
  stemsHere: boolean;
  search: (spec: SearchSpec, wanted: Wanted, stems: Stems | null) => Promise<Searched>;
}): RequestSearch {
  const { primary, db, version, turns, timeoutMs, stemsHere, search } = parts;
  return {
    find: async (spec) => {
      let wanted: Wanted;
      let stems: Stems | null = null;
      try {
        wanted = await version();
      } catch (err) {
        if (!(err instanceof DbUnavailableError) || db === primary) throw err;
        wanted = 'latest';
        // The search process asks the primary for the stems of words it has not seen: the
        // replica gives them instead, for the words of the search.
        const words = stemsHere ? stemmedWords(lookupsOf(spec.lines)) : [];
        if (words.length > 0) stems = await readStems(db, words);
      }
      const { found, page } = await search(spec, wanted, stems);
      // The index has what the primary had when the request came: a replica behind it may lack
      // a row added since, which the primary has (not while it cannot be reached).
      found.hits = await pageRowsRead(db, page, db === primary || wanted === 'latest' ? null : primary);
      return found;
    },
    suggest: (conditions, lines) => suggest(db, turns, timeoutMs, conditions, lines),
  };
}

/** Stems of words the vocabulary does not have, kept per process: the stemmer's answer never changes. */
const maxStems = 10_000;

export class Searcher implements SearchEngine {
  private readonly sync: IndexSync;
  private readonly turns: Turns;
  private readonly loop = new LoopTurns();
  private readonly stems = new Map<string, string | null>();
  private counted: { at: number; personen: number; werke: number; bytes: number } | null = null;
  /** Searches made on the index: the requests' that no kept result answered. */
  private searches = 0;

  /** primary: the database whose changes the index follows. */
  constructor(
    primary: Db,
    private readonly limits: SearchLimits,
    options: SyncOptions,
  ) {
    this.sync = new IndexSync(primary, options);
    this.turns = new Turns(limits);
  }

  /** Reads the index; a search before that is 503 (forRequest). */
  start(): Promise<void> {
    return this.sync.start();
  }

  /** Stops following the database, once the snapshot file is written (when the index changed since it was). */
  close(): Promise<void> {
    return this.sync.close();
  }

  /**
   * The index's rows, its bytes outside the heap, and how often it was read (docs/operations.md,
   * Health and metrics): the bytes add up every set, so a scrape's collectors share one count a second.
   */
  stats(): SearchStats {
    if (!this.counted || Date.now() - this.counted.at > 1000) {
      const index = this.sync.latest;
      this.counted = {
        at: Date.now(),
        personen: index.personen.lexemes.rows.size,
        werke: index.werke.lexemes.rows.size,
        bytes: index.bytes,
      };
    }
    const { personen, werke, bytes } = this.counted;
    return { personen, werke, bytes, searches: this.searches, ...this.sync.stats };
  }

  /** The search one request runs (requestSearch), on this process's index. */
  forRequest(version: () => Promise<bigint | null>, db: Db): RequestSearch {
    return requestSearch({
      primary: this.sync.db,
      db,
      version,
      turns: this.turns,
      timeoutMs: this.limits.timeoutMs,
      stemsHere: false,
      search: (spec, wanted) => this.search(spec, wanted, db),
    });
  }

  /**
   * A search on the index with every change the data version `wanted` counts ('latest': the
   * index as it last was, for when the primary cannot be asked; while the index is read anew, the
   * one before). The page's rows are not in the index: `page` names them, to be read where the
   * request reads. `db` answers the stems of unknown words (unless `stems`, read where the
   * request reads, has them) and the descriptions phrases are checked on.
   */
  async search(spec: SearchSpec, wanted: Wanted, db: Db = this.sync.db, stems: Stems | null = null): Promise<Searched> {
    if (!this.sync.read) throw indexNotRead();
    const { index } = wanted === 'latest' ? { index: this.sync.latest } : await this.sync.current(wanted);
    this.searches++;
    return this.find(db, index, spec, stems);
  }

  /** The words of the lines as the index knows them: stems, and the words they stand for. */
  private async words(
    db: Db,
    index: WordIndex,
    lines: readonly ParsedLine[],
    given: Stems | null,
  ): Promise<Map<string, WordInfo>> {
    const lookups = lookupsOf(lines);
    // Twelve one-letter wildcards share what one may have: the query stays a few hundred lexemes.
    const expanding = lookups.filter((l) => l.expansion !== null).length;
    const limit = Math.max(8, Math.min(maxExpansions, Math.floor(expansionBudget / Math.max(1, expanding))));
    const stems = await this.stemsOf(db, index, stemmedWords(lookups), given);
    const words = new Map<string, WordInfo>();
    for (const { word, expansion } of lookups) {
      const stem = stems.get(word) ?? null;
      const found = expansion ? index.vocabulary.expand(expansion, stem, limit) : { words: [], more: false };
      words.set(lookupKey(word, expansion), { stem, expansions: found.words, more: found.more });
    }
    return words;
  }

  /** Each word's stem (null for a stop word): the vocabulary's, or PostgreSQL's German stemmer's. */
  private async stemsOf(
    db: Db,
    index: WordIndex,
    words: string[],
    given: Stems | null,
  ): Promise<Map<string, string | null>> {
    const stems = new Map<string, string | null>();
    const unknown: string[] = [];
    for (const word of new Set(words)) {
      const stem =
        index.vocabulary.stemOf(word) ??
        this.stems.get(word) ??
        (given && Object.hasOwn(given, word) ? given[word] : undefined);
      if (stem === undefined) unknown.push(word);
      else stems.set(word, stem);
    }
    if (unknown.length === 0) return stems;
    // A dozen words at most, each a call of the stemmer.
    const read = Object.entries(await readStems(db, unknown));
    if (this.stems.size + read.length > maxStems) this.stems.clear();
    for (const [word, stem] of read) {
      stems.set(word, stem);
      this.stems.set(word, stem);
    }
    return stems;
  }

  private async find(db: Db, index: WordIndex, spec: SearchSpec, given: Stems | null): Promise<Searched> {
    const { cap } = this.limits;
    const words = await this.words(db, index, spec.lines, given);
    await this.loop.next();
    const found: Found = {
      total: 0,
      exact: true,
      hits: [],
      facets: { rtype: [], creator: [], decade: [] },
      marks: marksOf(spec.lines, words),
    };
    // Persons have no type and no year: a facet that asks for one leaves them out.
    const noPersons = spec.scope === 'werke' || spec.facets.some((f) => f.mode === 'include' && f.name !== 'creator');
    const plans = [
      noPersons ? null : kindPlan(spec.lines, 'person', words, index),
      spec.scope === 'personen' ? null : kindPlan(spec.lines, 'werk', words, index),
    ]
      .filter((p): p is Plan => p !== null)
      .map((p) => ({ ...p, rows: withFacets(p.rows, p.kind, spec.facets, index) }));
    const hits: Hits = { person: { ids: [], scores: [] }, werk: { ids: [], scores: [] } };
    let stopped = 0;
    for (const plan of plans) {
      const maxChecked = plan.description ? maxDescribed : checksPerHit * cap;
      const rows = plan.kind === 'person' ? index.personen.lexemes.rows : index.werke.lexemes.rows;
      // One row more than it takes tells that there were more; only the rows taken are ranked, counted and paged.
      const taken = await takeRows(plan, rows, {
        limit: cap + 1,
        maxChecked,
        texts: (descriptions) => textsOf(plan.kind, index, descriptions),
        describe: (ids) => this.describe(db, ids),
      });
      if (taken.ids.length > cap || taken.stopped) found.exact = false;
      if (taken.stopped) stopped = Math.max(stopped, maxChecked);
      const ids = taken.ids.slice(0, cap);
      hits[plan.kind] = { ids, scores: scoreRows(plan, ids, textsOf(plan.kind, index, taken.descriptions)) };
    }
    found.total = hits.person.ids.length + hits.werk.ids.length;
    if (stopped > 0 && found.total === 0) {
      throw new HttpError(
        400,
        `The search ${quoteTerms(spec.lines)} checked the first ${stopped} rows that have its words for its phrases, exact or begins_with, and none matched: its words are in most rows. Add a rarer word or more letters, or a facet.`,
      );
    }
    // Past the end of a search whose hits were all taken: an empty page, as any list has. Past
    // the hits taken by one that had more: those were never taken.
    if (!found.exact && spec.offset >= found.total) {
      throw new HttpError(
        400,
        `Parameter offset is ${spec.offset}; a search pages through the first ${cap} hits of each kind only (${found.total} here). Add words or a facet to narrow it.`,
      );
    }
    found.facets = facetsOf(hits, index);
    return { found, page: pageOf(hits, spec, index) };
  }

  /** The folded descriptions of works, for the phrases checked on them (they stay in the database). */
  private async describe(db: Db, ids: number[]): Promise<Descriptions> {
    const rows = await this.turns.within(() =>
      db.query<{ id: number; text: string; described: boolean }>(
        `SELECT w.id, coalesce(w.suche_text, '') AS text, search_fold(w.beschreibung) <> '' AS described FROM werk w WHERE w.id = ANY($1::int[])`,
        [ids],
        { name: 'search-descriptions', timeoutMs: this.limits.timeoutMs },
      ),
    );
    return new Map(rows.map((r) => [r.id, { text: r.text, described: r.described }]));
  }
}
