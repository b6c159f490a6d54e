// How the person scripts find their person: by slug or id from the rewritten query, and what
// a miss means. An old slug moved (301, or 308 for a change, which must keep its method), a
// deleted person is gone (410), anything else was never here (404).
import type { Queryable } from './db.ts';
import { HttpError, Redirect } from './http-error.ts';
import { isGone, movedSlug } from './history.ts';
import type { Person } from './person-view.ts';
import { findPerson } from './person-view.ts';
import { readId } from './script.ts';

export type PersonKey = { slug: string } | { id: number };

const slugPattern = /^[a-z0-9]+(-[a-z0-9]+)*$/;

/** slug=… or pid=… from the query; 400 when neither or both, 404 for a slug that cannot exist. */
export function readPersonKey(query: URLSearchParams, script = 'person.php'): PersonKey {
  const slug = query.get('slug');
  const pid = query.has('pid') ? readId(query, 'pid') : null;
  if (slug === null && pid === null) {
    throw new HttpError(400, `${script} needs the parameter slug (e.g. slug=max-muster) or pid (e.g. pid=1).`);
  }
  if (slug !== null && pid !== null) throw new HttpError(400, 'Give either slug or pid, not both.');
  if (slug !== null && !slugPattern.test(slug)) throw new HttpError(404, `There is no person with the slug "${slug.slice(0, 60)}".`);
  return slug !== null ? { slug } : { id: pid as number };
}

/** /person/max-muster or /person/1 */
export function keyPath(key: PersonKey): string {
  return `/person/${'slug' in key ? key.slug : key.id}`;
}

/** The person, or the answer for a miss: Redirect to the current slug (rest: /bearbeiten …), 410 or 404. */
export async function resolvePerson(db: Queryable, key: PersonKey, options: { method: string; rest?: string }): Promise<Person> {
  const person = await findPerson(db, key);
  if (person) return person;
  throw await personMiss(db, key, options);
}

export async function personMiss(db: Queryable, key: PersonKey, options: { method: string; rest?: string }): Promise<Redirect | HttpError> {
  if ('slug' in key) {
    const current = await movedSlug(db, key.slug);
    const safe = options.method === 'GET' || options.method === 'HEAD';
    if (current) return new Redirect(`/person/${current}${options.rest ?? ''}`, safe ? 301 : 308);
  }
  if (await isGone(db, keyPath(key))) return new HttpError(410, `The person at ${keyPath(key)} has been deleted.`);
  return new HttpError(404, `There is no person ${'slug' in key ? `with the slug "${key.slug}"` : `with the id ${key.id}`}.`);
}
