// Runs a search (docs/interface.md, Search) on the process's word index (word-index.ts), brought up
// to date first (sync.ts): its words are looked up in the vocabulary, its plan (plan.ts) takes the
// first hits of each kind in the order of their ids (match.ts), and those are ranked, counted
// and paged here. The database gives what the index does not keep: the ten rows of the page,
// the descriptions a phrase is checked on, the stems of words the index has not seen and the
// closest spellings. Those statements run within the share of connections searches may take,
// under a statement time-out of their own: a search that runs into it is 503, never 500.
import type { Db } from '../db/index.ts';
import { DbUnavailableError } from '../db/index.ts';
import { HttpError } from '../http/index.ts';
import type { Condition, ParsedLine } from './language.ts';
import { maxTermLength, quoteTerms } from './language.ts';
import type { Descriptions } from './match.ts';
import { scoreRows, takeRows } from './match.ts';
import type { IdSet } from './id-set.ts';
import type { Kind, Plan, Query } from './plan.ts';
import { kindPlan, lookupKey, lookupsOf, stopWordsOf, textsOf } from './plan.ts';
import type { SyncOptions } from './sync.ts';
import { IndexSync } from './sync.ts';
import { LoopTurns, Turns } from './turns.ts';
import type { WordInfo } from './vocabulary.ts';
import type { Interned, WordIndex } from './word-index.ts';
import { decadeOf, noYear } from './word-index.ts';

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

export interface FacetValue { value: string; count: number }

export interface Found {
  total: number;
  /** False when a kind had more hits than a search takes: total and counts are lower bounds. */
  exact: boolean;
  hits: Hit[];
  facets: Record<FacetName, FacetValue[]>;
  /** Folded words, stems and the index's words they stood for: what the HTML list marks. */
  marks: string[];
}

export interface SearchStats { personen: number; werke: number; bytes: number; catchUps: number; reloads: number }

/** A search as a request runs it (lib/page/request.ts). */
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

/** Words a compound part or a wildcard stands for at most, and all of a search's together. */
const maxExpansions = 60;
const expansionBudget = 120;
/** Rows a search's phrases may be checked on, per kind, as a multiple of the hits it takes. */
const checksPerHit = 20;
/** Stems of words the vocabulary does not have, kept per process: the stemmer's answer never changes. */
const maxStems = 10_000;

export class Searcher {
  private readonly sync: IndexSync;
  private readonly turns: Turns;
  private readonly loop = new LoopTurns();
  private readonly stems = new Map<string, string | null>();

  /** primary: the database whose changes the index follows. */
  constructor(primary: Db, private readonly limits: SearchLimits, options: SyncOptions) {
    this.sync = new IndexSync(primary, options);
    this.turns = new Turns(limits);
  }

  get cap(): number {
    return this.limits.cap;
  }

  /** Reads the index; a search before that waits for it. */
  start(): Promise<void> {
    return this.sync.start();
  }

  close(): void {
    this.sync.close();
  }

  /** The index's rows, its bytes outside the heap, and how often it was read (docs/operations.md, Health and metrics). */
  stats(): SearchStats {
    const index = this.sync.latest;
    return { personen: index.personen.lexemes.rows.size, werke: index.werke.lexemes.rows.size, bytes: index.bytes, ...this.sync.stats };
  }

  /**
   * The search one request runs: on the index with every change the request's data version of
   * the primary counts (read once for the request and the requests that come with it), reading
   * its rows from `db`, where the request reads. While the primary cannot be reached, on the
   * index as it last was: a replica answers the rest, as it does for the other pages.
   */
  forRequest(version: () => Promise<bigint | null>, db: Db): RequestSearch {
    const index = async () => {
      try {
        return await this.sync.current(await version());
      } catch (err) {
        if (err instanceof DbUnavailableError && db !== this.sync.db) return this.sync.latest;
        throw err;
      }
    };
    return {
      find: async (spec) => this.find(db, await index(), spec),
      suggest: (conditions, lines) => this.suggest(db, conditions, lines),
    };
  }

  /** The words of the lines as the index knows them: stems, and the words they stand for. */
  private async words(db: Db, index: WordIndex, lines: readonly ParsedLine[]): Promise<Map<string, WordInfo>> {
    const lookups = lookupsOf(lines);
    // Twelve one-letter wildcards share what one may have: the query stays a few hundred lexemes.
    const expanding = lookups.filter((l) => l.expansion !== null).length;
    const limit = Math.max(8, Math.min(maxExpansions, Math.floor(expansionBudget / Math.max(1, expanding))));
    const stems = await this.stemsOf(db, index, lookups.filter((l) => !/[*?]/.test(l.word)).map((l) => l.word));
    const words = new Map<string, WordInfo>();
    for (const { word, expansion } of lookups) {
      const stem = stems.get(word) ?? null;
      const found = expansion ? index.vocabulary.expand(expansion, stem, limit) : { words: [], more: false };
      words.set(lookupKey(word, expansion), { stem, expansions: found.words, more: found.more });
    }
    return words;
  }

  /** Each word's stem (null for a stop word): the vocabulary's, or PostgreSQL's German stemmer's. */
  private async stemsOf(db: Db, index: WordIndex, words: string[]): Promise<Map<string, string | null>> {
    const stems = new Map<string, string | null>();
    const unknown: string[] = [];
    for (const word of new Set(words)) {
      const stem = index.vocabulary.stemOf(word) ?? this.stems.get(word);
      if (stem === undefined) unknown.push(word);
      else stems.set(word, stem);
    }
    if (unknown.length === 0) return stems;
    // A dozen words at most, each a call of the stemmer: a short statement, pipelined as lookups by key are.
    const rows = await db.query<{ word: string; stem: string | null }>(
      `SELECT q.word, (tsvector_to_array(to_tsvector('german', q.word)))[1] AS stem FROM unnest($1::text[]) AS q(word)`,
      [unknown],
      { name: 'search-stems', pipeline: true },
    );
    if (this.stems.size + rows.length > maxStems) this.stems.clear();
    for (const { word, stem } of rows) {
      stems.set(word, stem);
      this.stems.set(word, stem);
    }
    return stems;
  }

  private async find(db: Db, index: WordIndex, spec: SearchSpec): Promise<Found> {
    const { cap } = this.limits;
    const words = await this.words(db, index, spec.lines);
    await this.loop.next();
    const found: Found = { total: 0, exact: true, hits: [], facets: { rtype: [], creator: [], decade: [] }, marks: marksOf(spec.lines, words) };
    // Persons have no type and no year: a facet that asks for one leaves them out.
    const noPersons = spec.scope === 'werke' || spec.facets.some((f) => f.mode === 'include' && f.name !== 'creator');
    const plans = [
      noPersons ? null : kindPlan(spec.lines, 'person', words, index),
      spec.scope === 'personen' ? null : kindPlan(spec.lines, 'werk', words, index),
    ].filter((p): p is Plan => p !== null).map((p) => ({ ...p, rows: withFacets(p.rows, p.kind, spec.facets, index) }));
    const hits: Hits = { person: { ids: [], scores: [] }, werk: { ids: [], scores: [] } };
    for (const plan of plans) {
      const rows = plan.kind === 'person' ? index.personen.lexemes.rows : index.werke.lexemes.rows;
      // One row more than it takes tells that there were more; only the rows taken are ranked, counted and paged.
      const taken = await takeRows(plan, rows, {
        limit: cap + 1,
        maxChecked: checksPerHit * cap,
        texts: (descriptions) => textsOf(plan.kind, index, descriptions),
        describe: (ids) => this.describe(db, ids),
      });
      if (taken.stopped && taken.ids.length === 0) {
        throw new HttpError(400, `The search ${quoteTerms(spec.lines)} checked the first ${checksPerHit * cap} rows that have its words for its phrases, exact or begins_with, and none matched: its words are in most rows. Add a rarer word outside the quotes, or a facet.`);
      }
      if (taken.ids.length > cap || taken.stopped) found.exact = false;
      const ids = taken.ids.slice(0, cap);
      hits[plan.kind] = { ids, scores: scoreRows(plan, ids, textsOf(plan.kind, index, taken.descriptions)) };
    }
    found.total = hits.person.ids.length + hits.werk.ids.length;
    // Past the end of a search whose hits were all taken: an empty page, as any list has. Past
    // the hits taken by one that had more: those were never taken.
    if (!found.exact && spec.offset >= found.total) {
      throw new HttpError(400, `Parameter offset is ${spec.offset}; a search pages through the first ${cap} hits of each kind only (${found.total} here). Add words or a facet to narrow it.`);
    }
    found.facets = facetsOf(hits, index);
    const page = pageOf(hits, spec, index);
    found.hits = page.length === 0 ? [] : await this.rowsOf(db, page);
    return found;
  }

  /** The page's rows as the database has them now, in the page's order; a row deleted meanwhile is left out. */
  private async rowsOf(db: Db, page: Ranked[]): Promise<Hit[]> {
    // Ten rows by key: pipelined, as a person page's lookups are.
    const rows = await db.query<Omit<Hit, 'score'>>(
      `SELECT 'werk' AS typ, w.id, w.titel, p.slug, w.urheber AS person, w.beschreibung, w.art, w.jahr
         FROM werk w JOIN person p ON p.id = w.person_id WHERE w.id = ANY($1::int[])
       UNION ALL
       SELECT 'person', p.id, p.vorname || ' ' || p.nachname, p.slug, NULL, NULL, NULL, NULL
         FROM person p WHERE p.id = ANY($2::int[])`,
      [page.filter((h) => h.typ === 'werk').map((h) => h.id), page.filter((h) => h.typ === 'person').map((h) => h.id)],
      { name: 'search-page', pipeline: true },
    );
    const byKey = new Map(rows.map((row) => [`${row.typ} ${row.id}`, row]));
    return page.flatMap((h) => {
      const row = byKey.get(`${h.typ} ${h.id}`);
      return row ? [{ ...row, score: h.score }] : [];
    });
  }

  /** The folded descriptions of works, for the phrases checked on them (they stay in the database). */
  private async describe(db: Db, ids: number[]): Promise<Descriptions> {
    const rows = await this.turns.within(() => db.query<{ id: number; text: string; described: boolean }>(
      `SELECT w.id, coalesce(w.suche_text, '') AS text, search_fold(w.beschreibung) <> '' AS described FROM werk w WHERE w.id = ANY($1::int[])`,
      [ids],
      { name: 'search-descriptions', timeoutMs: this.limits.timeoutMs },
    ));
    return new Map(rows.map((r) => [r.id, { text: r.text, described: r.described }]));
  }

  /**
   * For a search without hits: each word the index does not have, replaced by the closest one
   * it has (trigram similarity), as the lines to search instead; null when nothing is closer.
   */
  private async suggest(db: Db, conditions: readonly Condition[], lines: readonly ParsedLine[]): Promise<Condition[] | null> {
    // Each word searched for as written (no wildcard, not after NOT), once.
    const words = new Map(lines.flatMap((l) => l.clauses.flat())
      .filter((a) => !a.negated && a.kind === 'word' && !/[*?]/.test(a.raw) && (a.words[0] ?? '').length >= 3)
      .map((a) => [a.raw, a.words[0] as string]));
    const candidates = [...words].map(([raw, word]) => ({ raw, word }));
    if (candidates.length === 0) return null;
    const rows = await this.turns.within(() => db.query<{ i: number; shown: string | null }>(
      `SELECT q.i::int AS i, (SELECT v.shown FROM search_word v WHERE v.word % q.word AND v.word <> q.word
                               AND NOT EXISTS (SELECT 1 FROM search_word s WHERE s.word = q.word)
                             ORDER BY similarity(v.word, q.word) DESC, v.word COLLATE "C" LIMIT 1) AS shown
         FROM unnest($1::text[]) WITH ORDINALITY AS q(word, i)`,
      [candidates.map((c) => c.word)],
      { timeoutMs: this.limits.timeoutMs },
    ));
    const replacements = new Map<string, string>();
    for (const row of rows) {
      const candidate = candidates[row.i - 1];
      if (candidate && row.shown) replacements.set(candidate.raw, row.shown);
    }
    // A term that would grow past the longest a search takes stays as it was: its link would be 400.
    const replaced = conditions.map((c) => {
      if (c.match !== 'contains') return c;
      const term = c.term.split(/(\s+)/).map((token) => replacements.get(token) ?? token).join('');
      return term === c.term || [...term].length > maxTermLength ? c : { ...c, term };
    });
    return replaced.some((c, i) => c !== conditions[i]) ? replaced : null;
  }
}

/** The hits taken of each kind: ids in order, and their scores. */
type Hits = Record<Kind, { ids: number[]; scores: number[] }>;

/** A hit of the page. */
interface Ranked { typ: Kind; id: number; score: number }

/** Folded texts (lower-case ASCII letters, digits, spaces) in PostgreSQL's C collation: as JavaScript orders them. */
function compareFolded(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * The hits of the page, in a total order for each sort: ties go to persons, then the lower id,
 * so pages never overlap. The hits are numbered persons first, then works, and compared by
 * number; the first offset + size are kept in order as they come, the rest passed by.
 */
function pageOf(hits: Hits, spec: SearchSpec, index: WordIndex): Ranked[] {
  const { personen, werke } = index;
  const { person: persons, werk: works } = hits;
  const split = persons.ids.length;
  const count = split + works.ids.length;
  const id = (n: number) => (n < split ? persons.ids[n] : works.ids[n - split]) as number;
  const score = (n: number) => (n < split ? persons.scores[n] : works.scores[n - split]) as number;
  const kindOf = (n: number) => (n < split ? 0 : 1);
  // Persons come first and ids rise within each kind: the number breaks every tie.
  const byRank = (a: number, b: number) => score(b) - score(a) || a - b;
  const year = (n: number) => (n < split ? noYear : werke.jahr.get(id(n)));
  const byYear = (direction: 1 | -1) => (a: number, b: number) => {
    const x = year(a);
    const y = year(b);
    // Works without a year after those with one, in both directions.
    return (x === noYear ? 1 : 0) - (y === noYear ? 1 : 0) || direction * (x - y) || byRank(a, b);
  };
  const titles = new Map<number, string>();
  const title = (n: number) => {
    let text = titles.get(n);
    if (text === undefined) titles.set(n, (text = n < split ? personen.folded.get(id(n)) : werke.titel.get(id(n))));
    return text;
  };
  const authors = new Map<number, string>();
  const author = (n: number) => {
    let text = authors.get(n);
    if (text === undefined) authors.set(n, (text = personen.author.get(n < split ? id(n) : werke.person.get(id(n)))));
    return text;
  };
  const orders: Record<Sort, (a: number, b: number) => number> = {
    rank: byRank,
    title: (a, b) => compareFolded(title(a), title(b)) || a - b,
    author: (a, b) => compareFolded(author(a), author(b)) || kindOf(a) - kindOf(b) || compareFolded(title(a), title(b)) || a - b,
    date_d: byYear(-1),
    date_a: byYear(1),
  };
  const order = orders[spec.sort];
  const end = Math.min(count, spec.offset + spec.size);
  const best: number[] = [];
  for (let n = 0; n < count; n++) {
    if (best.length === end && order(n, best[end - 1] as number) >= 0) continue;
    let at = best.length;
    while (at > 0 && order(n, best[at - 1] as number) < 0) at--;
    best.splice(at, 0, n);
    if (best.length > end) best.pop();
  }
  return best.slice(spec.offset).map((n) => ({ typ: n < split ? 'person' : 'werk', id: id(n), score: score(n) }));
}

/** The facets over the hits taken: types (20), creators (10) and decades. */
/**
 * How often each code comes among a search's hits, counted in an array by code: the codes of a
 * process are a few thousand types and names (and decades). Shared by the searches of the
 * process, each of which counts and reads its counts without awaiting anything in between, and
 * sets back to zero what it counted.
 */
class Counter {
  private counts = new Int32Array(1024);
  private readonly seen: number[] = [];

  add(code: number): void {
    // A row taken out while the search awaited the page has no code left.
    if (code < 0) return;
    if (code >= this.counts.length) {
      const grown = new Int32Array(Math.max(code + 1, this.counts.length * 2));
      grown.set(this.counts);
      this.counts = grown;
    }
    const count = this.counts[code] as number;
    this.counts[code] = count + 1;
    if (count === 0) this.seen.push(code);
  }

  /** Each code counted with its count, in the order first counted; the counts are cleared. */
  take(): [code: number, count: number][] {
    const counted = this.seen.map((code): [number, number] => [code, this.counts[code] as number]);
    for (const code of this.seen) this.counts[code] = 0;
    this.seen.length = 0;
    return counted;
  }
}

const counters = { creators: new Counter(), arts: new Counter(), decades: new Counter() };
/** Decades are counted by their number from the earliest a work may have (sql/001_schema.sql: -3000). */
const firstDecade = -3000;

function facetsOf(hits: Hits, index: WordIndex): Found['facets'] {
  const { personen, werke } = index;
  const { creators, arts, decades } = counters;
  for (const id of hits.person.ids) creators.add(personen.name.get(id));
  for (const id of hits.werk.ids) {
    creators.add(werke.creator.get(id));
    arts.add(werke.art.get(id));
    const jahr = werke.jahr.get(id);
    if (jahr !== noYear) decades.add((decadeOf(jahr) - firstDecade) / 10);
  }
  return {
    rtype: top(arts.take(), index.werke.arts, 20),
    // Codes stand for one text each: two persons of one name are one creator.
    creator: top(creators.take(), index.names, 10),
    decade: decades.take().sort(([a], [b]) => b - a).map(([n, count]) => ({ value: String(n * 10 + firstDecade), count })),
  };
}

/**
 * The `limit` codes that come most often, then by text (the empty text left out); a code that
 * comes less often than the last of those is passed by without reading its text.
 */
function top(counted: readonly [code: number, count: number][], texts: Interned, limit: number): FacetValue[] {
  const best: [code: number, count: number][] = [];
  for (const entry of counted) {
    const [code, count] = entry;
    const last = best[limit - 1];
    if (last && count < last[1]) continue;
    if (texts.text(code) === '') continue;
    let at = best.length;
    while (at > 0) {
      const [other, times] = best[at - 1] as [number, number];
      if (count < times || (count === times && texts.order(code) > texts.order(other))) break;
      at--;
    }
    if (at === limit) continue;
    best.splice(at, 0, entry);
    if (best.length > limit) best.pop();
  }
  return best.map(([code, count]) => ({ value: texts.text(code), count }));
}

/** A kind's rows narrowed by the facets: values of one facet widen, facets together narrow. */
function withFacets(rows: Query, kind: Kind, facets: readonly FacetFilter[], index: WordIndex): Query {
  const parts: Query[] = [rows];
  for (const name of facetNames) {
    if (kind === 'person' && name !== 'creator') continue;
    const includes = facets.filter((f) => f.name === name && f.mode === 'include');
    const excludes = facets.filter((f) => f.name === name && f.mode === 'exclude');
    if (includes.length > 0) parts.push({ t: 'sets', sets: includes.flatMap((f) => facetSets(kind, f, index)) });
    for (const f of excludes) parts.push({ t: 'not', part: { t: 'sets', sets: facetSets(kind, f, index) } });
  }
  return parts.length === 1 ? rows : { t: 'and', parts };
}

function facetSets(kind: Kind, facet: FacetFilter, index: WordIndex): IdSet[] {
  const { personen, werke, names } = index;
  let set: IdSet | undefined;
  switch (facet.name) {
    case 'rtype': {
      const code = werke.arts.find(facet.value);
      set = code === undefined ? undefined : werke.byArt.of(code);
      break;
    }
    case 'decade': set = werke.byDecade.of(Number(facet.value)); break;
    case 'creator': {
      const code = names.find(facet.value);
      set = code === undefined ? undefined : kind === 'person' ? personen.byName.of(code) : werke.byCreator.of(code);
      break;
    }
  }
  return set ? [set] : [];
}

/** The folded words the HTML list marks: the query's words, their stems and the words they stood for. */
function marksOf(lines: readonly ParsedLine[], words: Map<string, WordInfo>): string[] {
  // Stop words (no stem) count nothing and are no compound parts: marked, der would mark
  // Wanderung and Felder.
  const stops = stopWordsOf(words);
  const marks = new Set<string>();
  for (const atom of lines.flatMap((l) => l.clauses.flat())) {
    if (atom.negated) continue;
    for (const word of atom.words) if (!/[*?]/.test(word) && !stops.has(word)) marks.add(word);
  }
  for (const info of words.values()) {
    if (info.stem) marks.add(info.stem);
    if (!info.more) for (const e of info.expansions) marks.add(e);
  }
  return [...marks];
}
