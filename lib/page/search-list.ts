// The search result list as a document: what its page holds, and its JSON and XML (shapes in
// docs/interface.md, Search). Its URLs are search-url.ts's.
import type { Condition, FacetFilter, FacetName, Piece, Sort } from '../search/index.ts';
import { facetNames } from '../search/index.ts';
import type { LinkFn, View } from './script-request.ts';
import type { Replaced } from './search-url.ts';
import { facetText, joining, queryText, searchPath } from './search-url.ts';

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
  excerpt: Piece[] | null;
  /** Title and person with the matched words marked, for the HTML list (null in JSON and XML). */
  marked: { titel: Piece[]; person: Piece[] } | null;
}

export interface FacetView {
  value: string;
  count: number;
  path: string;
}

export interface SearchResult {
  conditions: Condition[];
  tab: string;
  scope: string;
  vid: string;
  sort: Sort;
  filters: FacetFilter[];
  lang: string | null;
  /** Parameters of another Primo installation this site does not have, and what it used instead. */
  replaced: Replaced;
  offset: number;
  size: number;
  total: number;
  exact: boolean;
  previous: number | null;
  next: number | null;
  hits: HitView[];
  facets: Record<FacetName, FacetView[]>;
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

function hitUrl(hit: HitView, link: LinkFn): string {
  return link(hit.typ === 'person' ? `/person/${hit.slug}` : `/werk/${hit.id}`);
}

function pageUrl(result: SearchResult, offset: number | null, link: LinkFn): string | null {
  return offset === null ? null : link(searchPath(result.conditions, result, offset));
}

const plain = (pieces: Piece[] | null) => (pieces ? pieces.map((p) => p.text).join('') : null);

function facetsJson(result: SearchResult, link: LinkFn) {
  const values = (list: FacetView[]) => list.map((f) => ({ value: f.value, count: f.count, url: link(f.path) }));
  return {
    rtype: values(result.facets.rtype),
    creator: values(result.facets.creator),
    decade: values(result.facets.decade),
  };
}

export function searchJson(result: SearchResult, link: LinkFn) {
  return {
    query: result.conditions.map((_, i) => queryText(result.conditions, i)),
    tab: result.tab,
    search_scope: result.scope,
    vid: result.vid,
    sortby: result.sort,
    facet: result.filters.map(facetText),
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
      ...(h.typ === 'werk'
        ? {
            person: { name: h.person, url: link(`/person/${h.slug}`) },
            art: h.art,
            jahr: h.jahr,
            excerpt: plain(h.excerpt),
          }
        : {}),
    })),
    facets: facetsJson(result, link),
    suggestion: result.suggestion
      ? {
          query: result.suggestion.conditions.map((_, i, all) => queryText(all, i)),
          url: link(result.suggestion.path),
        }
      : null,
  };
}

/** A condition as an XML query element: field, match and the operator joining it with the next. */
function queryXml(c: Condition, i: number, conditions: readonly Condition[]) {
  const operator = joining(conditions, i);
  return { '@_field': c.field, '@_match': c.match, ...(operator ? { '@_operator': operator } : {}), '#text': c.term };
}

export function searchXml(result: SearchResult, link: LinkFn) {
  const previous = pageUrl(result, result.previous, link);
  const next = pageUrl(result, result.next, link);
  const facet = (name: FacetName) => ({
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
      ...(result.filters.length
        ? { facet: result.filters.map((f) => ({ '@_name': f.name, '@_mode': f.mode, '#text': f.value })) }
        : {}),
      ...(result.replaced.length
        ? { replaced: result.replaced.map((r) => ({ '@_name': r.name, '@_used': r.used, '#text': r.requested })) }
        : {}),
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
      facets: { facet: facetNames.map(facet) },
      ...(result.suggestion
        ? { suggestion: { '@_ref': link(result.suggestion.path), query: result.suggestion.conditions.map(queryXml) } }
        : {}),
    },
  };
}

export const searchView: View = { template: 'search', toJson: searchJson, toXml: searchXml };
