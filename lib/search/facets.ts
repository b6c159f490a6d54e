// The facets of a search (docs/interface.md, Search): the hits taken counted by type, creator and
// decade, and a facet asked for as the rows it keeps.
import type { IdSet } from './id-set.ts';
import type { Query } from './set-query.ts';
import type { Kind } from './texts.ts';
import type { FacetFilter, FacetValue, Found, Hits } from './spec.ts';
import { facetNames } from './spec.ts';
import type { Interned } from './columns.ts';
import type { WordIndex } from './word-index.ts';
import { decadeOf, noYear, Werke } from './word-index.ts';

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

  /**
   * The `limit` codes counted most often, then by text (the empty text left out), as facet
   * values; the counts are cleared. A code counted less often than the last of those is passed
   * by without reading its text.
   */
  top(texts: Interned, limit: number): FacetValue[] {
    const best: number[] = [];
    const { counts } = this;
    for (const code of this.seen) {
      const count = counts[code] as number;
      const last = best[limit - 1];
      if (last !== undefined && count < (counts[last] as number)) continue;
      if (texts.text(code) === '') continue;
      let at = best.length;
      while (at > 0) {
        const other = best[at - 1] as number;
        const times = counts[other] as number;
        if (count < times || (count === times && texts.order(code) > texts.order(other))) break;
        at--;
      }
      if (at === limit) continue;
      best.splice(at, 0, code);
      if (best.length > limit) best.pop();
    }
    const values = best.map((code) => ({ value: texts.text(code), count: counts[code] as number }));
    this.clear();
    return values;
  }

  /** Each code counted with its count, by code from the highest; the counts are cleared. */
  all(): [code: number, count: number][] {
    const counted = this.seen
      .sort((a, b) => b - a)
      .map((code): [number, number] => [code, this.counts[code] as number]);
    this.clear();
    return counted;
  }

  private clear(): void {
    for (const code of this.seen) this.counts[code] = 0;
    this.seen.length = 0;
  }
}

const counters = { creators: new Counter(), arts: new Counter(), decades: new Counter() };
/** The facts of a search's hits, gathered (shared as the counters are). */
let gathered = new Int32Array(4 * 1024);
/** Decades are counted by their number from the earliest a work may have (sql/001_schema.sql: -3000). */
const firstDecade = -3000;

/** The facets over the hits taken: types (20), creators (10) and decades. */
export function facetsOf(hits: Hits, index: WordIndex): Found['facets'] {
  const { personen, werke } = index;
  const { creators, arts, decades } = counters;
  for (const id of hits.person.ids) creators.add(personen.name.get(id));
  const { width } = werke.facts;
  if (gathered.length < hits.werk.ids.length * width) gathered = new Int32Array(hits.werk.ids.length * width);
  werke.facts.gather(hits.werk.ids, gathered);
  for (let at = 0; at < hits.werk.ids.length * width; at += width) {
    creators.add(gathered[at + Werke.creatorField]!);
    arts.add(gathered[at + Werke.artField]!);
    const jahr = gathered[at + Werke.jahrField]!;
    if (jahr !== noYear) decades.add((decadeOf(jahr) - firstDecade) / 10);
  }
  return {
    rtype: arts.top(index.werke.arts, 20),
    // Codes stand for one text each: two persons of one name are one creator.
    creator: creators.top(index.names, 10),
    decade: decades.all().map(([n, count]) => ({ value: String(n * 10 + firstDecade), count })),
  };
}

/** A kind's rows narrowed by the facets: values of one facet widen, facets together narrow. */
export function withFacets(rows: Query, kind: Kind, facets: readonly FacetFilter[], index: WordIndex): Query {
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
    case 'decade':
      set = werke.byDecade.of(Number(facet.value));
      break;
    case 'creator': {
      const code = names.find(facet.value);
      set = code === undefined ? undefined : kind === 'person' ? personen.byName.of(code) : werke.byCreator.of(code);
      break;
    }
  }
  return set ? [set] : [];
}
