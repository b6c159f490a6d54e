// The surrogate keys of public documents (docs/interface.md, Caching): each document names what it
// shows, and each change names what it touched, so that a cache in front (Varnish's xkey, a CDN's
// Surrogate-Key) keeps pages for long and drops exactly those a change made stale. A change that
// shows in many documents (a person renamed: their page, their works' pages, the lists and
// searches) purges by the broader key instead of enumerating them.

/** Every public document: a purge of it empties the cache (after a deployment, say). */
export const allKey = 'all';
/** Documents that list persons: the person list's pages, the start page, search results, the sitemap. */
export const personsKey = 'persons';
/** Documents that list works of many persons: search results, the feeds, the start page, the sitemap. */
export const worksKey = 'works';

/** A person's page and list of works, and the pages of their works, which show the person's name. */
export function personKey(id: number): string {
  return `person-${id}`;
}

/** A work's page. */
export function werkKey(id: number): string {
  return `werk-${id}`;
}

/** What a change touched, to be purged once it has committed. */
export const touched = {
  /** A new person shows in the lists of persons. */
  newPerson: (): string[] => [personsKey],
  /** A person's name or fields: their pages, their works' pages, every list that names them. */
  person: (id: number): string[] => [personKey(id), personsKey, worksKey],
  /** A person's picture: their pages and the person list, which shows it small. */
  picture: (id: number): string[] => [personKey(id), personsKey],
  /** A work added, changed or deleted: its page, its person's pages, the lists (the person list counts works). */
  werk: (id: number, personId: number): string[] => [werkKey(id), personKey(personId), personsKey, worksKey],
  /** Loans show in no public document. */
  nothing: (): string[] => [],
};
