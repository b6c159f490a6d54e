// One person with the links to their works: /person/<slug>, /person/<id>,
// person.php?slug=<slug> and person.php?pid=<id>. Shapes exactly as SEED.md prescribes.
import { HttpError } from '../lib/http-error.ts';
import type { Document, LinkFn, ScriptRequest } from '../lib/script.ts';
import { readId } from '../lib/script.ts';

export interface Person {
  id: number;
  slug: string;
  vorname: string;
  nachname: string;
  username: string;
  image: string;
  werke: { id: number; titel: string }[];
}

const slugPattern = /^[a-z0-9]+(-[a-z0-9]+)*$/;

export async function GET({ query, db }: ScriptRequest): Promise<Document<Person>> {
  const slug = query.get('slug');
  const pid = query.has('pid') ? readId(query, 'pid') : null;
  if (slug === null && pid === null) {
    throw new HttpError(400, 'person.php needs the parameter slug (e.g. slug=max-muster) or pid (e.g. pid=1).');
  }
  if (slug !== null && pid !== null) throw new HttpError(400, 'Give either slug or pid, not both.');
  if (slug !== null && !slugPattern.test(slug)) throw new HttpError(404, `There is no person with the slug "${slug.slice(0, 60)}".`);

  const [person] = await db.query<Person>(
    `SELECT p.id, p.slug, p.vorname, p.nachname, p.username, p.image,
            coalesce((SELECT json_agg(json_build_object('id', w.id, 'titel', w.titel) ORDER BY w.titel, w.id)
                        FROM werk w WHERE w.person_id = p.id), '[]') AS werke
       FROM person p
      WHERE ${slug !== null ? 'p.slug = $1' : 'p.id = $1'}`,
    [slug ?? pid],
    { name: slug !== null ? 'person-by-slug' : 'person-by-id' },
  );
  if (!person) throw new HttpError(404, `There is no person ${slug !== null ? `with the slug "${slug}"` : `with the id ${pid}`}.`);

  return { path: `/person/${person.slug}`, title: `${person.vorname} ${person.nachname}`, data: person };
}

export function toJson(person: Person, link: LinkFn) {
  return {
    image: absolute(person.image, link),
    vorname: person.vorname,
    nachname: person.nachname,
    werk: person.werke.map((w) => ({ titel: w.titel, url: link(`/werk/${w.id}`) })),
  };
}

export function toXml(person: Person, link: LinkFn) {
  return {
    person: {
      image: { '@_ref': absolute(person.image, link) },
      vorname: person.vorname,
      nachname: person.nachname,
      username: person.username,
      werke: { werk: person.werke.map((w) => ({ '@_ref': link(`/werk/${w.id}`), '#text': w.titel })) },
    },
  };
}

/** Pictures served by this site are stored as paths; XML and JSON carry absolute URLs. */
export function absolute(url: string, link: LinkFn): string {
  return url.startsWith('/') ? link(url) : url;
}
