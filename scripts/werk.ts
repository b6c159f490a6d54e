// One work: /werk/<id> and werk.php?id=<id>, linking its person and the person list.
import { HttpError } from '../lib/http-error.ts';
import type { Document, LinkFn, ScriptRequest } from '../lib/script.ts';
import { readId } from '../lib/script.ts';

export interface Werk {
  id: number;
  titel: string;
  jahr: number | null;
  art: string;
  beschreibung: string;
  person: { slug: string; vorname: string; nachname: string; image: string };
}

export async function GET({ query, db }: ScriptRequest): Promise<Document<Werk>> {
  const id = readId(query, 'id');

  const [werk] = await db.query<Werk>(
    `SELECT w.id, w.titel, w.jahr, w.art, w.beschreibung,
            json_build_object('slug', p.slug, 'vorname', p.vorname, 'nachname', p.nachname, 'image', p.image) AS person
       FROM werk w JOIN person p ON p.id = w.person_id
      WHERE w.id = $1`,
    [id],
    { name: 'werk-by-id' },
  );
  if (!werk) throw new HttpError(404, `There is no work with the id ${id}.`);

  return { path: `/werk/${werk.id}`, title: werk.titel, data: werk };
}

export function toJson(werk: Werk, link: LinkFn) {
  return {
    titel: werk.titel,
    url: link(`/werk/${werk.id}`),
    jahr: werk.jahr,
    art: werk.art,
    beschreibung: werk.beschreibung,
    person: { vorname: werk.person.vorname, nachname: werk.person.nachname, url: link(`/person/${werk.person.slug}`) },
    personen: link('/personen'),
  };
}

export function toXml(werk: Werk, link: LinkFn) {
  return {
    werk: {
      '@_ref': link(`/werk/${werk.id}`),
      titel: werk.titel,
      jahr: werk.jahr ?? '',
      art: werk.art,
      beschreibung: werk.beschreibung,
      person: { '@_ref': link(`/person/${werk.person.slug}`), vorname: werk.person.vorname, nachname: werk.person.nachname },
      personen: { '@_ref': link('/personen') },
    },
  };
}
