// The search result list: /search and search.php in Primo's deep-link format (docs/interface.md,
// Search): query=<field>,<match>,<term>[,AND|OR|NOT] (repeatable), tab, search_scope, vid,
// sortby, facet (repeatable) and offset. The URL alone decides the result: no session, and the
// same order every time. Its URL and representations are lib/page's (search-url.ts,
// search-list.ts); words, ranking, facets and the cost bound live in lib/search.
import type {
  ApiFragment,
  Document,
  FacetView,
  Paging,
  ScriptRequest,
  SearchResult,
  SearchSettings,
} from '../lib/page/index.ts';
import {
  buildQuery,
  checkSearchPath,
  clip,
  conditionsFromForm,
  HttpError,
  pageLinks,
  pagingOf,
  personsKey,
  readNonNegativeInteger,
  readSearchSettings,
  Redirect,
  search,
  searchPath,
  searchPathFrom,
  searchPathStart,
  searchViews,
  worksKey,
} from '../lib/page/index.ts';

export { searchView as view } from '../lib/page/index.ts';

type Condition = search.Condition;
type Sort = search.Sort;

const sortLabels: Record<Sort, string> = {
  rank: 'relevance',
  title: 'title',
  author: 'creator',
  date_d: 'newest',
  date_a: 'oldest',
};
const maxQueries = 5;
const pageSize = 10;

// The URL and the data decide the result: each page is kept rendered until persons or works change.
export const cacheable = true;

export async function GET(req: ScriptRequest): Promise<Document<SearchResult>> {
  const { query } = req;
  const replaced: SearchResult['replaced'] = [];
  // The search form sends field, match and term; answer with the canonical URL.
  if (query.has('term'))
    throw new Redirect(
      checkSearchPath(searchPath(conditionsFromForm(query), readSearchSettings(req, replaced), 0)),
      303,
    );

  const settings = readSearchSettings(req, replaced);
  const conditions = query.getAll('query').map(search.parseCondition);
  if (conditions.length > maxQueries)
    throw new HttpError(400, `Parameter query may be given at most ${maxQueries} times.`);
  const lines = search.parseLines(conditions);
  const offset = readNonNegativeInteger(query, 'offset', 0);
  const path = checkSearchPath(searchPath(conditions, settings, offset));
  const view = searchViews[settings.vid] as { title: string; stylesheet: string };
  const result: SearchResult = {
    conditions,
    ...settings,
    replaced,
    offset,
    size: pageSize,
    total: 0,
    exact: true,
    previous: null,
    next: null,
    hits: [],
    facets: { rtype: [], creator: [], decade: [] },
    applied: [],
    suggestion: null,
    marks: [],
    described: describe(conditions),
    orders: [],
    pages: { previous: null, next: null },
  };

  let paging: Paging | null = null;
  if (conditions.length > 0) {
    const spec: search.SearchSpec = {
      lines,
      scope: settings.scope as search.SearchSpec['scope'],
      facets: settings.filters,
      sort: settings.sort,
      offset,
      size: pageSize,
    };
    const key = JSON.stringify([conditions, settings.scope, settings.filters, settings.sort]);
    // A search refused for what it asks (400) is kept as its hits would be: asked again, it costs nothing.
    const kept = await req.remember(`search:${offset}:${key}`, async () => {
      try {
        const hits = await req.searcher.find(spec);
        const suggestion = hits.total === 0 ? await req.searcher.suggest(conditions, lines) : null;
        return { ...hits, suggestion };
      } catch (err) {
        if (err instanceof HttpError && err.status === 400) return { refused: err };
        throw err;
      }
    });
    if ('refused' in kept) throw kept.refused;
    const found = kept;
    // The fifty-odd links of the page share their start, written once.
    const start = searchPathStart(conditions, settings);
    const pathAt = (at: number, filters = settings.filters) => searchPathFrom(start, { ...settings, filters }, at);
    const links = facetLinks(start, settings, pathAt(0));
    Object.assign(result, {
      total: found.total,
      exact: found.exact,
      marks: found.marks,
      hits: found.hits.map((h) => ({
        typ: h.typ,
        id: h.id,
        titel: h.titel,
        slug: h.slug,
        person: h.person,
        rank: h.score,
        art: h.art,
        jahr: h.jahr,
        excerpt: h.beschreibung ? search.excerpt(h.beschreibung, found.marks, { marked: req.format === 'html' }) : null,
        marked:
          req.format === 'html'
            ? { titel: search.highlight(h.titel, found.marks), person: search.highlight(h.person ?? '', found.marks) }
            : null,
      })),
      facets: {
        rtype: found.facets.rtype.map((f) => facetView('rtype', f, settings, links)),
        creator: found.facets.creator.map((f) => facetView('creator', f, settings, links)),
        decade: found.facets.decade.map((f) => facetView('decade', f, settings, links)),
      },
      applied: settings.filters.map((f, i) => ({
        ...f,
        remove: pathAt(
          0,
          settings.filters.filter((_, j) => j !== i),
        ),
      })),
      orders: search.sorts.map((sort) => ({
        sort,
        label: sortLabels[sort],
        path: searchPathFrom(start, { ...settings, sort }, 0),
      })),
      suggestion: found.suggestion
        ? { conditions: found.suggestion, path: searchPath(found.suggestion, settings, 0) }
        : null,
    });
    Object.assign(result, pageLinks(offset, pageSize, result.total));
    paging = pagingOf(offset, pageSize, result.total, pathAt);
    // The HTML pager links relative to <base href>: the same paths without their leading slash.
    result.pages = { previous: paging.previous?.slice(1) ?? null, next: paging.next?.slice(1) ?? null };
  }
  return {
    path,
    title: conditions.length ? `${view.title}: ${clip(result.described)}` : view.title,
    description:
      conditions.length === 0
        ? 'Search the persons and works of the portfolio by name, title, description, type and year.'
        : `${result.total === 0 ? 'No' : `${result.exact ? '' : 'At least '}${result.total}`} ${result.total === 1 ? 'result' : 'results'} for ${result.described}.`,
    data: result,
    // Persons and works as hits, facets and counts.
    keys: [personsKey, worksKey],
    stylesheet: view.stylesheet,
    ...(paging ? { pages: paging } : {}),
  };
}

function facetView(
  name: search.FacetName,
  f: search.FacetValue,
  settings: SearchSettings,
  links: FacetLinks,
): FacetView {
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
function facetLinks(start: string, settings: SearchSettings, current: string): FacetLinks {
  const head = searchPathFrom(start, { ...settings, lang: null }, 0);
  const tail = settings.lang ? `&${buildQuery([['lang', settings.lang]])}` : '';
  return {
    current,
    adding: (name, value) => `${head}&${buildQuery([['facet', `${name},include,${value}`]])}${tail}`,
  };
}

export function describe(conditions: readonly Condition[]): string {
  return conditions
    .map((c, i) => {
      const joined = i === 0 ? '' : ` ${(conditions[i - 1]?.operator ?? 'AND').toLowerCase()} `;
      return `${joined}${c.field} ${c.match.replace('_', ' ')} "${c.term}"`;
    })
    .join('');
}

/** Its addresses in /openapi.json (lib/page/api-description.ts). */
export const api: ApiFragment = ({ params, ok, notModified }) => [
  {
    path: '/search',
    query: [
      params.query,
      params.tab,
      params.scope,
      params.vid,
      params.sortby,
      params.facet,
      params.lang,
      params.offset,
      params.term,
      params.field,
      params.match,
    ],
    operations: {
      get: {
        summary: "Search, in Primo's deep-link format: 10 hits a page, by rank, with facets.",
        responses: {
          200: ok('A page of the search result list.', 'search'),
          303: { description: "The search form's term, field and match: Location is the search's own address." },
          304: notModified,
        },
      },
    },
  },
];
