// A work's representations, shared by GET /werk/<id>, the 200 of a PUT and the 201 of
// POST /person/<slug>/werke.
import type { Queryable } from './db.ts';
import type { LinkFn, View } from './script.ts';

export interface Werk {
  id: number;
  titel: string;
  jahr: number | null;
  art: string;
  beschreibung: string;
  person: { id: number; slug: string; vorname: string; nachname: string; image: string };
}

export async function findWerk(db: Queryable, id: number): Promise<Werk | null> {
  const [werk] = await db.query<Werk>(
    `SELECT w.id, w.titel, w.jahr, w.art, w.beschreibung,
            json_build_object('id', p.id, 'slug', p.slug, 'vorname', p.vorname, 'nachname', p.nachname, 'image', p.image) AS person
       FROM werk w JOIN person p ON p.id = w.person_id
      WHERE w.id = $1`,
    [id],
    { name: 'werk-by-id', pipeline: true },
  );
  return werk ?? null;
}

export function werkJson(werk: Werk, link: LinkFn) {
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

export function werkXml(werk: Werk, link: LinkFn) {
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

export const werkView: View = { template: 'werk', toJson: werkJson, toXml: werkXml };
