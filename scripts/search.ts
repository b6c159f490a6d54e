// The search result list: /search and search.php with query=<field>,<match>,<term>
// (repeatable, ANDed), tab, search_scope, vid and offset (docs/interface.md, Search). The URL
// alone decides the result: no session, and the same order every time.
import type { Db, Document, LinkFn, Paging, ScriptRequest } from '../lib/page/index.ts';
import { buildQuery, clip, HttpError, pageLinks, pagingOf, readNonNegativeInteger, Redirect } from '../lib/page/index.ts';

const fields = ['any', 'title', 'creator'] as const;
const matches = ['contains', 'exact', 'begins_with'] as const;
const scopes = ['default_scope', 'personen', 'werke'] as const;
const tabs = ['default_tab'] as const;
/** vid selects the HTML page's title and stylesheet. */
export const views: Record<string, { title: string; stylesheet: string }> = {
  portfolio: { title: 'Search', stylesheet: 'css/site.css' },
  druck: { title: 'Search (print)', stylesheet: 'css/druck.css' },
};
const maxTermLength = 200;
const maxQueries = 5;
const pageSize = 10;

type Field = (typeof fields)[number];
type Match = (typeof matches)[number];
export interface Condition { field: Field; match: Match; term: string }

export interface Hit {
  typ: 'person' | 'werk';
  id: number;
  titel: string;
  slug: string;
  person: string | null;
}

export interface SearchResult {
  conditions: Condition[];
  tab: string;
  scope: string;
  vid: string;
  offset: number;
  size: number;
  total: number;
  previous: number | null;
  next: number | null;
  hits: Hit[];
  /** Neighbouring pages as paths relative to the site root, for the HTML pager. */
  pages: { previous: string | null; next: string | null };
}

// The URL and the data decide the result: each page is kept rendered until persons or works change.
export const cacheable = true;

export async function GET(req: ScriptRequest): Promise<Document<SearchResult>> {
  const { query } = req;
  // The search form sends field, match and term; answer with the canonical URL.
  if (query.has('term')) throw new Redirect(searchPath(conditionsFromForm(query), readSettings(query), 0), 303);

  const settings = readSettings(query);
  const conditions = query.getAll('query').map(parseCondition);
  if (conditions.length > maxQueries) throw new HttpError(400, `Parameter query may be given at most ${maxQueries} times.`);
  const offset = readNonNegativeInteger(query, 'offset', 0);
  const view = views[settings.vid] as { title: string; stylesheet: string };
  const result: SearchResult = { conditions, ...settings, offset, size: pageSize, total: 0, previous: null, next: null, hits: [], pages: { previous: null, next: null } };

  let paging: Paging | null = null;
  if (conditions.length > 0) {
    Object.assign(result, await search(req, conditions, settings.scope, offset));
    Object.assign(result, pageLinks(offset, pageSize, result.total));
    paging = pagingOf(offset, pageSize, result.total, (at) => searchPath(conditions, settings, at));
    // The HTML pager links relative to <base href>: the same paths without their leading slash.
    result.pages = { previous: paging.previous?.slice(1) ?? null, next: paging.next?.slice(1) ?? null };
  }
  const described = conditions.map((c) => `${c.field} ${c.match.replace('_', ' ')} "${c.term}"`).join(' and ');
  return {
    path: searchPath(conditions, settings, offset),
    title: described ? `${view.title}: ${clip(described)}` : view.title,
    data: result,
    stylesheet: view.stylesheet,
    ...(paging ? { pages: paging } : {}),
  };
}

interface Settings { tab: string; scope: string; vid: string }

function readSettings(query: URLSearchParams): Settings {
  return {
    tab: readChoice(query, 'tab', tabs, 'default_tab'),
    scope: readChoice(query, 'search_scope', scopes, 'default_scope'),
    vid: readChoice(query, 'vid', Object.keys(views), 'portfolio'),
  };
}

function readChoice(query: URLSearchParams, name: string, allowed: readonly string[], fallback: string): string {
  const values = query.getAll(name);
  if (values.length > 1) throw new HttpError(400, `Parameter ${name} may be given once; allowed values: ${allowed.join(', ')}.`);
  const value = values[0];
  if (value === undefined || value === '') return fallback;
  if (!allowed.includes(value)) throw new HttpError(400, `Parameter ${name} must be one of ${allowed.join(', ')}, not "${clip(value)}".`);
  return value;
}

/** query=<field>,<match>,<term>: split on the first two commas; the rest is the term. */
export function parseCondition(raw: string): Condition {
  const first = raw.indexOf(',');
  const second = first === -1 ? -1 : raw.indexOf(',', first + 1);
  if (second === -1) {
    throw new HttpError(400, `Parameter query must read <field>,<match>,<term>, e.g. any,contains,Müller; fields: ${fields.join(', ')}; match types: ${matches.join(', ')}.`);
  }
  return checkCondition(raw.slice(0, first), raw.slice(first + 1, second), raw.slice(second + 1), 'query');
}

function conditionsFromForm(query: URLSearchParams): Condition[] {
  const term = query.get('term') ?? '';
  if (term.trim() === '') return [];
  return [checkCondition(query.get('field') ?? 'any', query.get('match') ?? 'contains', term, 'term')];
}

function checkCondition(field: string, match: string, term: string, parameter: string): Condition {
  if (!(fields as readonly string[]).includes(field)) {
    throw new HttpError(400, `Unknown search field "${clip(field)}" in parameter ${parameter}; allowed fields: ${fields.join(', ')}.`);
  }
  if (!(matches as readonly string[]).includes(match)) {
    throw new HttpError(400, `Unknown match type "${clip(match)}" in parameter ${parameter}; allowed match types: ${matches.join(', ')}.`);
  }
  const trimmed = term.trim();
  if (trimmed === '') throw new HttpError(400, `The search term in parameter ${parameter} is empty.`);
  if ([...trimmed].length > maxTermLength) throw new HttpError(400, `The search term in parameter ${parameter} is longer than ${maxTermLength} characters.`);
  return { field: field as Field, match: match as Match, term: trimmed };
}

export function searchPath(conditions: readonly Condition[], settings: Settings, offset: number): string {
  const pairs: [string, string | number][] = conditions.map((c) => ['query', `${c.field},${c.match},${c.term}`]);
  pairs.push(['tab', settings.tab], ['search_scope', settings.scope], ['vid', settings.vid]);
  if (offset > 0) pairs.push(['offset', offset]);
  return `/search?${buildQuery(pairs)}`;
}

// --- SQL -------------------------------------------------------------------------------
// Persons match creator and any by name; works match title by title, creator by their
// person's name, any by either. contains is served by the trigram indexes of
// sql/002_search.sql, begins_with and exact on titles by werk_titel_sort (sql/005), on
// names by the trigram and lower() indexes; a work's creator goes through its person's id.
// Persons come first (by name), then works (by title): the totals of both decide which
// part a page takes, so each part is one query in its own index order that stops after a
// page instead of sorting every match. Totals and pages are remembered until the data
// changes (req.remember), because counting every match of a frequent word is the one
// expensive step at a million works.

const nameSql = `(p.vorname || ' ' || p.nachname)`;
// The key of werk_titel_sort (sql/005): search lists works in this order, and begins_with
// and exact on titles are ranges of it.
const titleKey = `lower(w.titel) COLLATE "C"`;

/** The SQL parameter of a term: a LIKE pattern for contains and begins_with. */
function patternOf(c: Condition): string {
  // LIKE treats % _ and \ specially; a term is matched literally.
  const literal = c.term.replace(/[\\%_]/g, '\\$&');
  return c.match === 'contains' ? `%${literal}%` : c.match === 'begins_with' ? `${literal}%` : c.term;
}

function nameMatch(match: Match, param: string): string {
  return match === 'exact' ? `lower(${nameSql}) = lower(${param})` : `${nameSql} ILIKE ${param}`;
}

function titleMatch(match: Match, param: string): string {
  switch (match) {
    case 'contains': return `w.titel ILIKE ${param}`;
    case 'begins_with': return `${titleKey} LIKE lower(${param})`;
    case 'exact': return `${titleKey} = lower(${param})`;
  }
}

interface Filters {
  params: string[];
  /** WHERE of persons (alias p); null when no person can match (a title condition, or scope werke). */
  person: string | null;
  /** WHERE of works (alias w); null when scope personen. */
  werk: string | null;
}

function buildFilters(conditions: readonly Condition[], scope: string): Filters {
  const params = conditions.map(patternOf);
  const person: string[] = [];
  const werk: string[] = [];
  conditions.forEach((c, i) => {
    const param = `$${i + 1}`;
    const byName = nameMatch(c.match, param);
    const byTitle = titleMatch(c.match, param);
    const byCreator = `w.person_id = ANY (ARRAY(SELECT p.id FROM person p WHERE ${byName}))`;
    if (c.field !== 'title') person.push(byName);
    werk.push(c.field === 'title' ? byTitle : c.field === 'creator' ? byCreator : `(${byTitle} OR ${byCreator})`);
  });
  return {
    params,
    person: scope === 'werke' || person.length < conditions.length ? null : person.join(' AND '),
    werk: scope === 'personen' ? null : werk.join(' AND '),
  };
}

interface Totals { personen: number; werke: number }

/** Up to this many matching works a page sorts them all (cheap); beyond, it walks the title index. */
const fewMatches = 5000;

async function countHits(db: Db, filters: Filters): Promise<Totals> {
  // A title condition in the scope personen: nothing can match, and no query would use the terms.
  if (filters.person === null && filters.werk === null) return { personen: 0, werke: 0 };
  const personen = filters.person === null ? '0' : `(SELECT count(*)::int FROM person p WHERE ${filters.person})`;
  const werke = filters.werk === null ? '0' : `(SELECT count(*)::int FROM werk w WHERE ${filters.werk})`;
  const [row] = await db.query<Totals>(`SELECT ${personen} AS personen, ${werke} AS werke`, filters.params);
  return row ?? { personen: 0, werke: 0 };
}

async function findPage(db: Db, filters: Filters, totals: Totals, offset: number): Promise<Hit[]> {
  const hits: Hit[] = [];
  const n = filters.params.length;
  if (filters.person !== null && offset < totals.personen) {
    hits.push(...await db.query<Hit>(
      `SELECT 'person' AS typ, p.id, ${nameSql} AS titel, p.slug, NULL AS person
         FROM person p WHERE ${filters.person}
        ORDER BY p.nachname, p.vorname, p.id
        LIMIT $${n + 1} OFFSET $${n + 2}`,
      [...filters.params, pageSize, offset],
    ));
  }
  const werkOffset = Math.max(0, offset - totals.personen);
  if (filters.werk !== null && hits.length < pageSize && werkOffset < totals.werke) {
    // Many matches: walk werk_titel_sort in order and stop after the page. Few: that walk would
    // pass nearly every work before it found them (a rare phrase took 1.3 s at a million works),
    // so they are taken through the trigram indexes and sorted; OFFSET 0 keeps the planner from
    // turning the subquery back into the walk.
    const works = totals.werke <= fewMatches ? `(SELECT * FROM werk w WHERE ${filters.werk} OFFSET 0) w` : `werk w`;
    const where = totals.werke <= fewMatches ? '' : `WHERE ${filters.werk}`;
    hits.push(...await db.query<Hit>(
      `SELECT 'werk' AS typ, w.id, w.titel, p.slug, ${nameSql} AS person
         FROM ${works} JOIN person p ON p.id = w.person_id ${where}
        ORDER BY ${titleKey}, w.id
        LIMIT $${n + 1} OFFSET $${n + 2}`,
      [...filters.params, pageSize - hits.length, werkOffset],
    ));
  }
  return hits;
}

async function search(req: ScriptRequest, conditions: readonly Condition[], scope: string, offset: number): Promise<{ total: number; hits: Hit[] }> {
  const filters = buildFilters(conditions, scope);
  const key = JSON.stringify([scope, conditions.map((c) => [c.field, c.match, c.term])]);
  const totals = await req.remember(`search:totals:${key}`, () => countHits(req.db, filters));
  const hits = await req.remember(`search:page:${offset}:${key}`, () => findPage(req.db, filters, totals, offset));
  return { total: totals.personen + totals.werke, hits };
}

// --- Representations -------------------------------------------------------------------

function hitUrl(hit: Hit, link: LinkFn): string {
  return link(hit.typ === 'person' ? `/person/${hit.slug}` : `/werk/${hit.id}`);
}

function pageUrl(result: SearchResult, offset: number | null, link: LinkFn): string | null {
  return offset === null ? null : link(searchPath(result.conditions, result, offset));
}

export function toJson(result: SearchResult, link: LinkFn) {
  return {
    query: result.conditions.map((c) => `${c.field},${c.match},${c.term}`),
    tab: result.tab,
    search_scope: result.scope,
    vid: result.vid,
    total: result.total,
    offset: result.offset,
    limit: result.size,
    url: link(searchPath(result.conditions, result, result.offset)),
    previous: pageUrl(result, result.previous, link),
    next: pageUrl(result, result.next, link),
    treffer: result.hits.map((h) => ({
      typ: h.typ,
      titel: h.titel,
      url: hitUrl(h, link),
      ...(h.typ === 'werk' ? { person: { name: h.person, url: link(`/person/${h.slug}`) } } : {}),
    })),
  };
}

export function toXml(result: SearchResult, link: LinkFn) {
  const previous = pageUrl(result, result.previous, link);
  const next = pageUrl(result, result.next, link);
  return {
    suche: {
      '@_ref': link(searchPath(result.conditions, result, result.offset)),
      '@_tab': result.tab,
      '@_search_scope': result.scope,
      '@_vid': result.vid,
      '@_total': result.total,
      '@_offset': result.offset,
      '@_limit': result.size,
      query: result.conditions.map((c) => ({ '@_field': c.field, '@_match': c.match, '#text': c.term })),
      ...(previous ? { previous: { '@_ref': previous } } : {}),
      ...(next ? { next: { '@_ref': next } } : {}),
      treffer: result.hits.map((h) => ({
        '@_typ': h.typ,
        '@_ref': hitUrl(h, link),
        titel: h.titel,
        ...(h.typ === 'werk' ? { person: { '@_ref': link(`/person/${h.slug}`), '#text': h.person } } : {}),
      })),
    },
  };
}
