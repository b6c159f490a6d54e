// Runs a search (docs/interface.md, Search): one statement looks the query's words up in the
// index's vocabulary (stems, compound parts, wildcards), one finds, ranks, counts and pages the
// hits with their facets. Both run within the share of connections searches may take, under
// a statement time-out of their own: a search that runs into it is 503, never 500.
import type { Db } from '../db/index.ts';
import { HttpError } from '../http/index.ts';
import type { Condition, ParsedLine } from './language.ts';
import { maxTermLength } from './language.ts';
import type { KindQuery, WordInfo } from './plan.ts';
import { kindQuery, lookupKey, lookupsOf, Params, stopWordsOf } from './plan.ts';

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

export class Searcher {
  private running = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(private readonly limits: SearchLimits) {}

  get cap(): number {
    return this.limits.cap;
  }

  /** The words of the lines as the index knows them. */
  async words(db: Db, lines: readonly ParsedLine[]): Promise<Map<string, WordInfo>> {
    const lookups = lookupsOf(lines);
    // Twelve one-letter wildcards share what one may have: the query stays a few hundred lexemes.
    const patterns = lookups.filter((l) => l.pattern !== null).length;
    const limit = Math.max(8, Math.min(maxExpansions, Math.floor(expansionBudget / Math.max(1, patterns))));
    const rows = await this.within(() => db.query<{ i: number; stem: string | null; expansions: string[] }>(
      // The compounds a word is part of leave out those with its own stem (kalter for kalte),
      // which its stem's entry finds and ranks already, and stop words (oder for ode).
      `SELECT q.i::int AS i, s.stem,
              CASE WHEN q.pattern IS NULL THEN '{}'::text[] ELSE ARRAY(
                SELECT v.word FROM search_word v WHERE v.word LIKE q.pattern AND v.word <> q.word
                   AND (q.pattern <> '%' || q.word || '%'
                        OR coalesce((tsvector_to_array(to_tsvector('german', v.word)))[1] NOT IN (s.stem), false))
                 ORDER BY length(v.word), v.word COLLATE "C" LIMIT $3) END AS expansions
         FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS q(word, pattern, i),
              LATERAL (SELECT (tsvector_to_array(to_tsvector('german', q.word)))[1] AS stem) s`,
      // Short (a few rows of the vocabulary), but a search's like the rest: on the searches'
      // connections, under their time-out, with BEGIN and COMMIT in the same write.
      [lookups.map((l) => l.word), lookups.map((l) => l.pattern), limit + 1],
      { name: 'search-words', timeoutMs: this.limits.timeoutMs, genericPlan: true },
    ));
    const words = new Map<string, WordInfo>();
    for (const row of rows) {
      const lookup = lookups[row.i - 1];
      if (!lookup) continue;
      const expansions = row.expansions ?? [];
      words.set(lookupKey(lookup.word, lookup.pattern), {
        stem: row.stem ?? null,
        expansions: expansions.slice(0, limit),
        more: expansions.length > limit,
      });
    }
    return words;
  }

  async find(db: Db, spec: SearchSpec, words: Map<string, WordInfo>): Promise<Found> {
    const { cap } = this.limits;
    const params = new Params();
    const parts: string[] = [];
    // Persons have no type and no year: a facet that asks for one leaves them out.
    const noPersons = spec.scope === 'werke' || spec.facets.some((f) => f.mode === 'include' && f.name !== 'creator');
    const person = noPersons ? null : withFacets(kindQuery(spec.lines, 'person', words, params), 'person', spec.facets, params);
    const werk = spec.scope === 'personen' ? null : withFacets(kindQuery(spec.lines, 'werk', words, params), 'werk', spec.facets, params);
    // One row more than it takes tells that there were more; only the rows taken (cap of each
    // kind) are ranked, counted and paged. The same rows for all of them: hits is materialized.
    const limit = params.add(cap + 1);
    const taken = params.add(cap);
    if (person) {
      parts.push(`(SELECT 'person'::text AS typ, p.id, p.id AS person_id, p.vorname || ' ' || p.nachname AS urheber,
                          NULL::text AS art, NULL::integer AS jahr, p.suche_name AS sort_title, ${person.score} AS score
                     FROM ${rowsFound('person', 'p', person)} LIMIT ${limit})`);
    }
    if (werk) {
      parts.push(`(SELECT 'werk'::text AS typ, w.id, w.person_id, w.urheber, w.art, w.jahr, w.suche_titel AS sort_title, ${werk.score} AS score
                     FROM ${rowsFound('werk', 'w', werk)} LIMIT ${limit})`);
    }
    const found: Found = { total: 0, exact: true, hits: [], facets: { rtype: [], creator: [], decade: [] }, marks: marksOf(spec.lines, words) };
    if (parts.length === 0) return found;
    const text = `WITH found AS MATERIALIZED (${parts.join(' UNION ALL ')}),
            hits AS MATERIALIZED ((SELECT * FROM found WHERE typ = 'person' LIMIT ${taken}) UNION ALL (SELECT * FROM found WHERE typ = 'werk' LIMIT ${taken}))
       SELECT (SELECT count(*) FILTER (WHERE typ = 'person')::int FROM found) AS personen,
              (SELECT count(*) FILTER (WHERE typ = 'werk')::int FROM found) AS werke,
              (SELECT coalesce(json_agg(f ORDER BY f.count DESC, f.value COLLATE "C"), '[]'::json) FROM (
                 SELECT art COLLATE "C" AS value, count(*)::int AS count FROM hits WHERE typ = 'werk' AND art <> ''
                  GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT 20) f) AS rtype,
              (SELECT coalesce(json_agg(f ORDER BY f.count DESC, f.value COLLATE "C"), '[]'::json) FROM (
                 -- By name, as the hits carry it: two persons of one name are one value.
                 SELECT urheber COLLATE "C" AS value, count(*)::int AS count FROM hits
                  GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT 10) f) AS creator,
              (SELECT coalesce(json_agg(f ORDER BY f.value DESC), '[]'::json) FROM (
                 -- Integers only (floor of a division is numeric); -5 is in the decade -10.
                 SELECT jahr - (jahr % 10 + 10) % 10 AS value, count(*)::int AS count FROM hits
                  WHERE jahr IS NOT NULL GROUP BY 1) f) AS decade,
              (SELECT coalesce(json_agg(x ORDER BY x.n), '[]'::json) FROM (
                 -- The page first, in the hits' own order (names as the hits carry them), then the ten rows' titles and slugs.
                 SELECT h.n, h.typ, h.id, h.score,
                        CASE WHEN h.typ = 'person' THEN h.urheber ELSE w.titel END AS titel, p.slug,
                        CASE WHEN h.typ = 'werk' THEN h.urheber END AS person,
                        w.beschreibung, h.art, h.jahr
                   FROM (SELECT row_number() OVER (ORDER BY ${orderBy[spec.sort]}) AS n, h.*
                           FROM (SELECT h.* FROM hits h ${spec.sort === 'author' ? authorOf : ''}
                                  ORDER BY ${orderBy[spec.sort]} LIMIT ${params.add(spec.size)} OFFSET ${params.add(spec.offset)}) h
                           ${spec.sort === 'author' ? authorOf : ''}) h
                   -- Looked up row by row, as authorOf is.
                   CROSS JOIN LATERAL (SELECT p.slug FROM person p WHERE p.id = h.person_id OFFSET 0) p
                   LEFT JOIN LATERAL (SELECT w.titel, w.beschreibung FROM werk w WHERE h.typ = 'werk' AND w.id = h.id OFFSET 0) w ON TRUE) x) AS page`;
    const [row] = await this.within(() => db.query<Row>(
      text,
      params.values,
      // Its plan is kept: the values (the words, the page) do not change what the best one is,
      // and planning it again for each search cost about a seventh of the statement's time. The
      // text decides indexScans, and the name is the text's (genericPlan, lib/db/db.ts).
      { timeoutMs: this.limits.timeoutMs, indexScans: person?.probe !== null && werk?.probe !== null, name: nameOf(text), genericPlan: true },
    ));
    if (!row) return found;
    const exact = row.personen <= cap && row.werke <= cap;
    const total = Math.min(row.personen, cap) + Math.min(row.werke, cap);
    // Past the end of a search whose hits were all taken: an empty page, as any list has. Past
    // the hits taken by one that had more: those were never taken.
    if (!exact && spec.offset >= total) {
      throw new HttpError(400, `Parameter offset is ${spec.offset}; a search pages through the first ${cap} hits of each kind only (${total} here). Add words or a facet to narrow it.`);
    }
    return {
      ...found,
      total,
      exact,
      hits: parseJson<(Hit & { n: number })[]>(row.page).map(({ n: _n, ...hit }) => hit),
      facets: {
        rtype: parseJson<FacetValue[]>(row.rtype),
        creator: parseJson<FacetValue[]>(row.creator),
        decade: parseJson<{ value: number; count: number }[]>(row.decade).map((d) => ({ value: String(d.value), count: d.count })),
      },
    };
  }

  /**
   * For a search without hits: each word the index does not have, replaced by the closest one
   * it has (trigram similarity), as the lines to search instead; null when nothing is closer.
   */
  async suggest(db: Db, conditions: readonly Condition[], lines: readonly ParsedLine[]): Promise<Condition[] | null> {
    // Each word searched for as written (no wildcard, not after NOT), once.
    const words = new Map(lines.flatMap((l) => l.clauses.flat())
      .filter((a) => !a.negated && a.kind === 'word' && !/[*?]/.test(a.raw) && (a.words[0] ?? '').length >= 3)
      .map((a) => [a.raw, a.words[0] as string]));
    const candidates = [...words].map(([raw, word]) => ({ raw, word }));
    if (candidates.length === 0) return null;
    const rows = await this.within(() => db.query<{ i: number; shown: string | null }>(
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

  /**
   * fn within the searches' share of connections: beyond it a search waits for its turn, at most
   * waitMs, then it is 503; a statement stopped by the time-out (57014) is 503 as well.
   */
  async within<T>(fn: () => Promise<T>): Promise<T> {
    if (this.running >= this.limits.concurrency) {
      if (this.waiting.length >= maxWaiting) throw busy('Too many searches are waiting; try again in a moment.');
      // A search that finishes hands its place to the first waiting one (running stays as it
      // is), so no search that comes later takes it in between: while any waits, all places
      // are taken.
      await new Promise<void>((resolve, reject) => {
        const turn = () => {
          clearTimeout(timer);
          resolve();
        };
        // A search that waited too long gives up: its client hears so in time.
        const timer = setTimeout(() => {
          this.waiting.splice(this.waiting.indexOf(turn), 1);
          reject(busy('Too many searches are running; try again in a moment.'));
        }, this.limits.waitMs);
        this.waiting.push(turn);
      });
    } else {
      this.running++;
    }
    try {
      return await fn();
    } catch (err) {
      if ((err as { code?: string }).code === '57014') throw busy('The search took too long and was stopped; try again in a moment, or with fewer or longer words.', err);
      throw err;
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.running--;
    }
  }
}

/** Search statement shapes a process names, each with one name whichever Searcher runs it. */
const maxNames = 100;
const names = new Map<string, string>();

/**
 * A name for a search statement, so that each connection parses it once: the usual searches
 * have a few shapes (one word, two …). Past maxNames shapes, the rest go unnamed, so that no
 * client can make the connections keep a statement for every shape there is.
 */
function nameOf(text: string): string | undefined {
  let name = names.get(text);
  if (name === undefined && names.size < maxNames) {
    name = `search-${names.size + 1}`;
    names.set(text, name);
  }
  return name;
}

/** Searches of one process that may wait for their turn at once: each holds only its request. */
const maxWaiting = 1000;

function busy(message: string, cause?: unknown): HttpError {
  return new HttpError(503, message, { headers: { 'Retry-After': '2' }, cause });
}

interface Row {
  personen: number;
  werke: number;
  rtype: unknown;
  creator: unknown;
  decade: unknown;
  page: unknown;
}

/** json columns arrive parsed from node-postgres and PGlite alike; text only if a driver leaves them so. */
function parseJson<T>(value: unknown): T {
  return (typeof value === 'string' ? JSON.parse(value) : value) as T;
}

/**
 * The hit's person as p, for the order by author: looked up row by row (OFFSET 0 keeps it so),
 * where a plan kept for every search would hash the whole person table.
 */
const authorOf = 'CROSS JOIN LATERAL (SELECT p.vorname, p.nachname FROM person p WHERE p.id = h.person_id OFFSET 0) p';

/** A total order in each: ties go to persons, then the lower id, so pages never overlap. */
const orderBy: Record<Sort, string> = {
  rank: 'h.score DESC, h.typ COLLATE "C", h.id',
  title: 'h.sort_title COLLATE "C", h.typ COLLATE "C", h.id',
  author: `search_fold(p.nachname || ' ' || p.vorname) COLLATE "C", h.typ COLLATE "C", h.sort_title COLLATE "C", h.id`,
  date_d: 'h.jahr DESC NULLS LAST, h.score DESC, h.typ COLLATE "C", h.id',
  date_a: 'h.jahr ASC NULLS LAST, h.score DESC, h.typ COLLATE "C", h.id',
};

/**
 * The rows of a kind a query finds, as a FROM clause. The index has each row's lexemes in the
 * block of 65,536 ids it is in (sql/010_search_index.sql): the blocks are probed in order, and
 * the LIMIT above stops that as soon as it has its rows. A frequent word's first block is a
 * few thousand entries, where its whole entry was tens of thousands, read before any LIMIT.
 */
export function rowsFound(table: 'person' | 'werk', alias: string, query: KindQuery): string {
  if (query.probe === null) return `${table} ${alias} WHERE ${query.where}`;
  return `generate_series((SELECT min(id) FROM ${table}) >> 16, (SELECT max(id) FROM ${table}) >> 16) AS b(n)
          CROSS JOIN LATERAL (SELECT * FROM ${table} ${alias}
                               WHERE search_blocked(${alias}.suche, ${alias}.id) @@ search_block(${query.probe}, b.n)
                                 AND ${query.where}) ${alias}`;
}

/** A kind's query narrowed by the facets. */
function withFacets(query: KindQuery | null, kind: 'person' | 'werk', facets: readonly FacetFilter[], params: Params): KindQuery | null {
  if (!query) return null;
  const conditions: string[] = [];
  for (const name of facetNames) {
    const includes = facets.filter((f) => f.name === name && f.mode === 'include');
    const excludes = facets.filter((f) => f.name === name && f.mode === 'exclude');
    if (kind === 'person' && name !== 'creator') continue;
    const test = (f: FacetFilter) => facetTest(kind, f, params);
    // Values of one facet widen the hits (this type or that); facets together narrow them.
    if (includes.length > 0) conditions.push(`(${includes.map(test).join(' OR ')})`);
    for (const f of excludes) conditions.push(`NOT ${test(f)}`);
  }
  return conditions.length === 0 ? query : { ...query, where: `${query.where} AND ${conditions.join(' AND ')}` };
}

function facetTest(kind: 'person' | 'werk', facet: FacetFilter, params: Params): string {
  const value = params.add(facet.value);
  switch (facet.name) {
    case 'rtype': return `w.art = ${value}`;
    case 'decade': return `coalesce(w.jahr >= ${value}::int AND w.jahr < ${value}::int + 10, false)`;
    case 'creator': return kind === 'person'
      ? `(p.vorname || ' ' || p.nachname = ${value})`
      : `w.urheber = ${value}`;
  }
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
