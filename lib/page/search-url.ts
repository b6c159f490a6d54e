// The search list's URL in Primo's deep-link format (docs/interface.md, Search): its settings read
// from the query (tab, search_scope, vid, sortby, facet and lang; the search form's fields), and
// the links of one search written back, with the parameters always in the same order.
import { clip, controlCharacters, HttpError } from '../http/index.ts';
import type { Condition, FacetFilter, FacetName, Operator, Sort } from '../search/index.ts';
import { checkCondition, facetNames, sorts } from '../search/index.ts';
import type { ScriptRequest } from './script-request.ts';
import { buildQuery } from './script-request.ts';

const scopes = ['default_scope', 'personen', 'werke'] as const;
const tabs = ['default_tab'] as const;
/** vid selects the HTML page's title and stylesheet. */
export const searchViews: Record<string, { title: string; stylesheet: string }> = {
  portfolio: { title: 'Search', stylesheet: 'css/site.css' },
  druck: { title: 'Search (print)', stylesheet: 'css/druck.css' },
};
const maxFacets = 10;
/**
 * The longest value of each facet: what the data can hold (a type is up to 100 characters, a
 * creator's name up to 200 letters of first and last name each, with a space between); a longer
 * one matches nothing.
 */
const maxFacetValue: Record<FacetName, number> = { rtype: 100, creator: 401, decade: 5 };
/**
 * The longest site path of a search as its links write it, percent-encoded: with the origin, its
 * canonical URL fits the Link header (lib/http/header-budget.ts), and the page's fifty-odd links
 * stay short.
 */
const maxSearchPath = 1536;

/** Parameters of another Primo installation this site does not have, and what it used instead. */
export type Replaced = { name: string; requested: string; used: string }[];

export interface SearchSettings {
  tab: string;
  scope: string;
  vid: string;
  sort: Sort;
  filters: FacetFilter[];
  lang: string | null;
}

export function readSearchSettings(req: ScriptRequest, replaced: Replaced): SearchSettings {
  const { query } = req;
  const lang = query.get('lang');
  return {
    tab: readView(req, 'tab', tabs, 'default_tab', replaced),
    scope: readView(req, 'search_scope', scopes, 'default_scope', replaced),
    vid: readView(req, 'vid', Object.keys(searchViews), 'portfolio', replaced),
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
function readView(
  req: ScriptRequest,
  name: string,
  allowed: readonly string[],
  fallback: string,
  replaced: Replaced,
): string {
  const values = req.query.getAll(name);
  if (values.length > 1)
    throw new HttpError(400, `Parameter ${name} may be given once; allowed values: ${allowed.join(', ')}.`);
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
  if (!(sorts as readonly string[]).includes(sort)) {
    throw new HttpError(400, `Parameter sortby must be one of ${sorts.join(', ')}, not "${clip(sort)}".`);
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
  if (
    !(facetNames as readonly string[]).includes(name) ||
    (mode !== 'include' && mode !== 'exclude') ||
    value === '' ||
    controlCharacters.test(value)
  ) {
    throw new HttpError(
      400,
      `Parameter facet must read <name>,include,<value> or <name>,exclude,<value>, e.g. rtype,include,Roman; names: ${facetNames.join(', ')}.`,
    );
  }
  if (name === 'decade' && !/^(0|-?[1-9][0-9]{0,3}0)$/.test(value)) {
    throw new HttpError(
      400,
      `A decade facet's value is the decade's first year, e.g. decade,include,1990, not "${clip(value)}".`,
    );
  }
  const length = [...value].length;
  const max = maxFacetValue[name as FacetName];
  if (length > max)
    throw new HttpError(400, `Parameter facet: a value of ${name} is at most ${max} characters, not ${length}.`);
  return { name: name as FacetName, mode, value };
}

/** A facet as its parameter writes it, what parseFacet reads: <name>,include|exclude,<value>. */
export function facetText(f: FacetFilter): string {
  return `${f.name},${f.mode},${f.value}`;
}

/** The search form's field, match and term as a condition; none for an empty term. */
export function conditionsFromForm(query: URLSearchParams): Condition[] {
  const term = query.get('term') ?? '';
  if (term.trim() === '') return [];
  return [checkCondition(query.get('field') ?? 'any', query.get('match') ?? 'contains', term, 'term')];
}

/** The operator joining a condition with the next one; none on the last, where it joins nothing. */
export function joining(conditions: readonly Condition[], i: number): Operator | null {
  return i < conditions.length - 1 ? (conditions[i]?.operator ?? null) : null;
}

/** A condition as its query parameter writes it: field,match,term[,operator]. */
export function queryText(conditions: readonly Condition[], i: number): string {
  const c = conditions[i] as Condition;
  // A term that itself ends in ,AND (the form's "haus,AND") would read as its operator: the
  // operator is written after it then, even where it joins nothing.
  const operator = joining(conditions, i) ?? (/,(AND|OR|NOT)$/.test(c.term) ? (c.operator ?? 'AND') : null);
  return `${c.field},${c.match},${c.term}${operator ? `,${operator}` : ''}`;
}

type PathSettings = Omit<SearchSettings, 'sort' | 'filters' | 'lang'> & Partial<SearchSettings>;

export function searchPath(conditions: readonly Condition[], settings: PathSettings, offset: number): string {
  return searchPathFrom(searchPathStart(conditions, settings), settings, offset);
}

/** A search's path, read from the request: 400 when its links would be longer than maxSearchPath. */
export function checkSearchPath(path: string): string {
  if (path.length > maxSearchPath) {
    throw new HttpError(
      400,
      `The parameters query and facet make this search ${path.length} characters long as its links write it, more than ${maxSearchPath}; use fewer or shorter terms and facet values.`,
    );
  }
  return path;
}

/** The start every link of one search shares: its conditions, tab, scope and view. */
export function searchPathStart(conditions: readonly Condition[], settings: PathSettings): string {
  const pairs: [string, string][] = conditions.map((c, i) => ['query', queryText(conditions, i)]);
  pairs.push(['tab', settings.tab], ['search_scope', settings.scope], ['vid', settings.vid]);
  return `/search?${buildQuery(pairs)}`;
}

/** A search's link from its start: order, facets, language and offset. */
export function searchPathFrom(start: string, settings: PathSettings, offset: number): string {
  const pairs: [string, string | number][] = [];
  if (settings.sort && settings.sort !== 'rank') pairs.push(['sortby', settings.sort]);
  for (const f of settings.filters ?? []) pairs.push(['facet', facetText(f)]);
  if (settings.lang) pairs.push(['lang', settings.lang]);
  if (offset > 0) pairs.push(['offset', offset]);
  return pairs.length === 0 ? start : `${start}&${buildQuery(pairs)}`;
}
