// The search result list: /search and search.php in Primo's deep-link format (docs/interface.md,
// Search): query=<field>,<match>,<term>[,AND|OR|NOT] (repeatable), tab, search_scope, vid,
// sortby, facet (repeatable) and offset. The URL alone decides the result: no session, and the
// same order every time. Words, ranking, facets and the cost bound live in lib/search.
import type { Document, LinkFn, Paging, ScriptRequest } from '../lib/page/index.ts';
import { buildQuery, clip, controlCharacters, HttpError, pageLinks, pagingOf, readNonNegativeInteger, Redirect, search } from '../lib/page/index.ts';

type Condition = search.Condition;
type FacetFilter = search.FacetFilter;
type Sort = search.Sort;

const scopes = ['default_scope', 'personen', 'werke'] as const;
const tabs = ['default_tab'] as const;
/** vid selects the HTML page's title and stylesheet. */
export const views: Record<string, { title: string; stylesheet: string }> = {
  portfolio: { title: 'Search', stylesheet: 'css/site.css' },
  druck: { title: 'Search (print)', stylesheet: 'css/druck.css' },
};
const sortLabels: Record<Sort, string> = { rank: 'relevance', title: 'title', author: 'creator', date_d: 'newest', date_a: 'oldest' };
const maxQueries = 5;
const maxFacets = 10;
const pageSize = 10;

export interface HitView {
  typ: 'person' | 'werk';
  id: number;
  titel: string;
  slug: string;
  person: string | null;
  rank: number;
  art: string | null;
  jahr: number | null;
  /** The text around the first match in the description; null when it has none. */
  excerpt: search.Piece[] | null;
  /** Title and person with the matched words marked, for the HTML list (null in JSON and XML). */
  marked: { titel: search.Piece[]; person: search.Piece[] } | null;
}

export interface FacetView { value: string; count: number; path: string }

export interface SearchResult {
  conditions: Condition[];
  tab: string;
  scope: string;
  vid: string;
  sort: Sort;
  filters: FacetFilter[];
  lang: string | null;
  /** Parameters of another Primo installation this site does not have, and what it used instead. */
  replaced: { name: string; requested: string; used: string }[];
  offset: number;
  size: number;
  total: number;
  exact: boolean;
  previous: number | null;
  next: number | null;
  hits: HitView[];
  facets: Record<search.FacetName, FacetView[]>;
  /** The applied facets, each with the path that removes it. */
  applied: (FacetFilter & { remove: string })[];
  /** The closest spellings the index has, when nothing was found. */
  suggestion: { conditions: Condition[]; path: string } | null;
  /** Folded words the HTML list marks. */
  marks: string[];
  /** The conditions in words: anything contains "nebel" and title begins with "der". */
  described: string;
  /** This search in each order, for the HTML list's sort links. */
  orders: { sort: Sort; label: string; path: string }[];
  /** Neighbouring pages as paths relative to the site root, for the HTML pager. */
  pages: { previous: string | null; next: string | null };
}

// The URL and the data decide the result: each page is kept rendered until persons or works change.
export const cacheable = true;

export async function GET(req: ScriptRequest): Promise<Document<SearchResult>> {
  const { query } = req;
  const replaced: SearchResult['replaced'] = [];
  // The search form sends field, match and term; answer with the canonical URL.
  if (query.has('term')) throw new Redirect(searchPath(conditionsFromForm(query), readSettings(req, replaced), 0), 303);

  const settings = readSettings(req, replaced);
  const conditions = query.getAll('query').map(search.parseCondition);
  if (conditions.length > maxQueries) throw new HttpError(400, `Parameter query may be given at most ${maxQueries} times.`);
  const lines = search.parseLines(conditions);
  const offset = readNonNegativeInteger(query, 'offset', 0);
  const view = views[settings.vid] as { title: string; stylesheet: string };
  const result: SearchResult = {
    conditions, ...settings, replaced, offset, size: pageSize, total: 0, exact: true, previous: null, next: null, hits: [],
    facets: { rtype: [], creator: [], decade: [] }, applied: [], suggestion: null, marks: [], described: describe(conditions), orders: [], pages: { previous: null, next: null },
  };

  let paging: Paging | null = null;
  if (conditions.length > 0) {
    const spec: search.SearchSpec = { lines, scope: settings.scope as search.SearchSpec['scope'], facets: settings.filters, sort: settings.sort, offset, size: pageSize };
    const key = JSON.stringify([conditions, settings.scope, settings.filters, settings.sort]);
    const found = await req.remember(`search:${offset}:${key}`, async () => {
      const hits = await req.searcher.find(spec);
      const suggestion = hits.total === 0 ? await req.searcher.suggest(conditions, lines) : null;
      return { ...hits, suggestion };
    });
    // The fifty-odd links of the page share their start, written once.
    const start = searchPathStart(conditions, settings);
    const pathAt = (at: number, filters = settings.filters) => searchPathFrom(start, { ...settings, filters }, at);
    const links = facetLinks(start, settings, pathAt(0));
    Object.assign(result, {
      total: found.total,
      exact: found.exact,
      marks: found.marks,
      hits: found.hits.map((h) => ({
        typ: h.typ, id: h.id, titel: h.titel, slug: h.slug, person: h.person, rank: h.score, art: h.art, jahr: h.jahr,
        excerpt: h.beschreibung ? search.excerpt(h.beschreibung, found.marks, { marked: req.format === 'html' }) : null,
        marked: req.format === 'html' ? { titel: search.highlight(h.titel, found.marks), person: search.highlight(h.person ?? '', found.marks) } : null,
      })),
      facets: {
        rtype: found.facets.rtype.map((f) => facetView('rtype', f, settings, links)),
        creator: found.facets.creator.map((f) => facetView('creator', f, settings, links)),
        decade: found.facets.decade.map((f) => facetView('decade', f, settings, links)),
      },
      applied: settings.filters.map((f, i) => ({ ...f, remove: pathAt(0, settings.filters.filter((_, j) => j !== i)) })),
      orders: search.sorts.map((sort) => ({ sort, label: sortLabels[sort], path: searchPathFrom(start, { ...settings, sort }, 0) })),
      suggestion: found.suggestion ? { conditions: found.suggestion, path: searchPath(found.suggestion, settings, 0) } : null,
    });
    Object.assign(result, pageLinks(offset, pageSize, result.total));
    paging = pagingOf(offset, pageSize, result.total, pathAt);
    // The HTML pager links relative to <base href>: the same paths without their leading slash.
    result.pages = { previous: paging.previous?.slice(1) ?? null, next: paging.next?.slice(1) ?? null };
  }
  return {
    path: searchPath(conditions, settings, offset),
    title: conditions.length ? `${view.title}: ${clip(result.described)}` : view.title,
    data: result,
    stylesheet: view.stylesheet,
    ...(paging ? { pages: paging } : {}),
  };
}

function facetView(name: search.FacetName, f: search.FacetValue, settings: Settings, links: FacetLinks): FacetView {
  // A value already applied links to the list as it is, not to the facet given twice.
  const applied = settings.filters.some((a) => a.name === name && a.mode === 'include' && a.value === f.value);
  return { value: f.value, count: f.count, path: applied ? links.current : links.adding(name, f.value) };
}

interface FacetLinks {
  /** The search at its first page. */
  current: string;
  /** The search at its first page with one facet more. */
  adding(name: search.FacetName, value: string): string;
}

/**
 * The links of a search's facet values. A facet added comes after those applied and before the
 * language: what comes before and after it is written once for the page's fifty-odd links.
 */
function facetLinks(start: string, settings: Settings, current: string): FacetLinks {
  const head = searchPathFrom(start, { ...settings, lang: null }, 0);
  const tail = settings.lang ? `&${buildQuery([['lang', settings.lang]])}` : '';
  return {
    current,
    adding: (name, value) => `${head}&${buildQuery([['facet', `${name},include,${value}`]])}${tail}`,
  };
}

export function describe(conditions: readonly Condition[]): string {
  return conditions.map((c, i) => {
    const joined = i === 0 ? '' : ` ${(conditions[i - 1]?.operator ?? 'AND').toLowerCase()} `;
    return `${joined}${c.field} ${c.match.replace('_', ' ')} "${c.term}"`;
  }).join('');
}

interface Settings { tab: string; scope: string; vid: string; sort: Sort; filters: FacetFilter[]; lang: string | null }

function readSettings(req: ScriptRequest, replaced: SearchResult['replaced']): Settings {
  const { query } = req;
  const lang = query.get('lang');
  return {
    tab: readView(req, 'tab', tabs, 'default_tab', replaced),
    scope: readView(req, 'search_scope', scopes, 'default_scope', replaced),
    vid: readView(req, 'vid', Object.keys(views), 'portfolio', replaced),
    sort: readSort(query),
    filters: readFacets(query),
    // Kept in the links, so a deep link's language survives paging; the page is in English.
    lang: lang && /^[a-z]{2}(_[A-Z]{2})?$/.test(lang) ? lang : null,
  };
}

/**
 * A view, tab or scope: ours, one SEARCH_VIEW_ALIASES maps to ours, or another Primo
 * installation's (01XYZ_INST:MAIN), answered with our default and said so on the page.
 */
function readView(req: ScriptRequest, name: string, allowed: readonly string[], fallback: string, replaced: SearchResult['replaced']): string {
  const values = req.query.getAll(name);
  if (values.length > 1) throw new HttpError(400, `Parameter ${name} may be given once; allowed values: ${allowed.join(', ')}.`);
  const value = values[0];
  if (value === undefined || value === '') return fallback;
  if (allowed.includes(value)) return value;
  const alias = req.searchAliases[value];
  const used = alias !== undefined && allowed.includes(alias) ? alias : fallback;
  replaced.push({ name, requested: clip(value, 100), used });
  return used;
}

function readSort(query: URLSearchParams): Sort {
  const sort = query.get('sortby');
  if (sort === null || sort === '') return 'rank';
  if (!(search.sorts as readonly string[]).includes(sort)) {
    throw new HttpError(400, `Parameter sortby must be one of ${search.sorts.join(', ')}, not "${clip(sort)}".`);
  }
  return sort as Sort;
}

function readFacets(query: URLSearchParams): FacetFilter[] {
  const raw = query.getAll('facet');
  if (raw.length > maxFacets) throw new HttpError(400, `Parameter facet may be given at most ${maxFacets} times.`);
  return raw.map(parseFacet);
}

/** facet=<name>,include|exclude,<value>, as Primo deep links write it. */
function parseFacet(raw: string): FacetFilter {
  const [name = '', mode = '', ...rest] = raw.split(',');
  const value = rest.join(',').trim();
  // A creator's name is up to 200 letters of first and last name each, with a space between.
  if (!(search.facetNames as readonly string[]).includes(name) || (mode !== 'include' && mode !== 'exclude') || value === '' || [...value].length > 401 || controlCharacters.test(value)) {
    throw new HttpError(400, `Parameter facet must read <name>,include,<value> or <name>,exclude,<value>, e.g. rtype,include,Roman; names: ${search.facetNames.join(', ')}.`);
  }
  if (name === 'decade' && !/^(0|-?[1-9][0-9]{0,3}0)$/.test(value)) {
    throw new HttpError(400, `A decade facet's value is the decade's first year, e.g. decade,include,1990, not "${clip(value)}".`);
  }
  return { name: name as search.FacetName, mode, value };
}

function conditionsFromForm(query: URLSearchParams): Condition[] {
  const term = query.get('term') ?? '';
  if (term.trim() === '') return [];
  return [search.checkCondition(query.get('field') ?? 'any', query.get('match') ?? 'contains', term, 'term')];
}

/** The operator joining a condition with the next one; none on the last, where it joins nothing. */
function joining(conditions: readonly Condition[], i: number): search.Operator | null {
  return i < conditions.length - 1 ? conditions[i]?.operator ?? null : null;
}

/** A condition as its query parameter writes it: field,match,term[,operator]. */
function queryText(conditions: readonly Condition[], i: number): string {
  const c = conditions[i] as Condition;
  // A term that itself ends in ,AND (the form's "haus,AND") would read as its operator: the
  // operator is written after it then, even where it joins nothing.
  const operator = joining(conditions, i) ?? (/,(AND|OR|NOT)$/.test(c.term) ? c.operator ?? 'AND' : null);
  return `${c.field},${c.match},${c.term}${operator ? `,${operator}` : ''}`;
}

type PathSettings = Omit<Settings, 'sort' | 'filters' | 'lang'> & Partial<Settings>;

export function searchPath(conditions: readonly Condition[], settings: PathSettings, offset: number): string {
  return searchPathFrom(searchPathStart(conditions, settings), settings, offset);
}

/** The start every link of one search shares: its conditions, tab, scope and view. */
function searchPathStart(conditions: readonly Condition[], settings: PathSettings): string {
  const pairs: [string, string][] = conditions.map((c, i) => ['query', queryText(conditions, i)]);
  pairs.push(['tab', settings.tab], ['search_scope', settings.scope], ['vid', settings.vid]);
  return `/search?${buildQuery(pairs)}`;
}

/** A search's link from its start: order, facets, language and offset. */
function searchPathFrom(start: string, settings: PathSettings, offset: number): string {
  const pairs: [string, string | number][] = [];
  if (settings.sort && settings.sort !== 'rank') pairs.push(['sortby', settings.sort]);
  for (const f of settings.filters ?? []) pairs.push(['facet', `${f.name},${f.mode},${f.value}`]);
  if (settings.lang) pairs.push(['lang', settings.lang]);
  if (offset > 0) pairs.push(['offset', offset]);
  return pairs.length === 0 ? start : `${start}&${buildQuery(pairs)}`;
}

// --- Representations -------------------------------------------------------------------

function hitUrl(hit: HitView, link: LinkFn): string {
  return link(hit.typ === 'person' ? `/person/${hit.slug}` : `/werk/${hit.id}`);
}

function pageUrl(result: SearchResult, offset: number | null, link: LinkFn): string | null {
  return offset === null ? null : link(searchPath(result.conditions, result, offset));
}

const plain = (pieces: search.Piece[] | null) => (pieces ? pieces.map((p) => p.text).join('') : null);

function facetsJson(result: SearchResult, link: LinkFn) {
  const values = (list: FacetView[]) => list.map((f) => ({ value: f.value, count: f.count, url: link(f.path) }));
  return { rtype: values(result.facets.rtype), creator: values(result.facets.creator), decade: values(result.facets.decade) };
}

export function toJson(result: SearchResult, link: LinkFn) {
  return {
    query: result.conditions.map((_, i) => queryText(result.conditions, i)),
    tab: result.tab,
    search_scope: result.scope,
    vid: result.vid,
    sortby: result.sort,
    facet: result.filters.map((f) => `${f.name},${f.mode},${f.value}`),
    ...(result.replaced.length ? { replaced: result.replaced } : {}),
    total: result.total,
    total_is_exact: result.exact,
    offset: result.offset,
    limit: result.size,
    url: link(searchPath(result.conditions, result, result.offset)),
    previous: pageUrl(result, result.previous, link),
    next: pageUrl(result, result.next, link),
    treffer: result.hits.map((h) => ({
      typ: h.typ,
      titel: h.titel,
      url: hitUrl(h, link),
      rank: h.rank,
      ...(h.typ === 'werk' ? { person: { name: h.person, url: link(`/person/${h.slug}`) }, art: h.art, jahr: h.jahr, excerpt: plain(h.excerpt) } : {}),
    })),
    facets: facetsJson(result, link),
    suggestion: result.suggestion ? {
      query: result.suggestion.conditions.map((_, i, all) => queryText(all, i)),
      url: link(result.suggestion.path),
    } : null,
  };
}

/** A condition as an XML query element: field, match and the operator joining it with the next. */
function queryXml(c: Condition, i: number, conditions: readonly Condition[]) {
  const operator = joining(conditions, i);
  return { '@_field': c.field, '@_match': c.match, ...(operator ? { '@_operator': operator } : {}), '#text': c.term };
}

export function toXml(result: SearchResult, link: LinkFn) {
  const previous = pageUrl(result, result.previous, link);
  const next = pageUrl(result, result.next, link);
  const facet = (name: search.FacetName) => ({
    '@_name': name,
    wert: result.facets[name].map((f) => ({ '@_count': f.count, '@_ref': link(f.path), '#text': f.value })),
  });
  return {
    suche: {
      '@_ref': link(searchPath(result.conditions, result, result.offset)),
      '@_tab': result.tab,
      '@_search_scope': result.scope,
      '@_vid': result.vid,
      '@_sortby': result.sort,
      '@_total': result.total,
      '@_total_is_exact': result.exact,
      '@_offset': result.offset,
      '@_limit': result.size,
      query: result.conditions.map(queryXml),
      ...(result.filters.length ? { facet: result.filters.map((f) => ({ '@_name': f.name, '@_mode': f.mode, '#text': f.value })) } : {}),
      ...(result.replaced.length ? { replaced: result.replaced.map((r) => ({ '@_name': r.name, '@_used': r.used, '#text': r.requested })) } : {}),
      ...(previous ? { previous: { '@_ref': previous } } : {}),
      ...(next ? { next: { '@_ref': next } } : {}),
      treffer: result.hits.map((h) => ({
        '@_typ': h.typ,
        '@_ref': hitUrl(h, link),
        '@_rank': h.rank,
        titel: h.titel,
        ...(h.typ === 'werk' ? { person: { '@_ref': link(`/person/${h.slug}`), '#text': h.person } } : {}),
        ...(h.excerpt ? { excerpt: plain(h.excerpt) } : {}),
      })),
      facets: { facet: search.facetNames.map(facet) },
      ...(result.suggestion ? { suggestion: { '@_ref': link(result.suggestion.path), query: result.suggestion.conditions.map(queryXml) } } : {}),
    },
  };
}
