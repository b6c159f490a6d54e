// A person: found by slug or id, represented (shapes in docs/interface.md, Person: no username in
// JSON), read from a request body, and edited in a form. Writing is person-store.ts.
import { usernamePattern } from '../auth/index.ts';
import type { Queryable } from '../db/index.ts';
import type { Body, FieldError } from '../http/index.ts';
import { HttpError, Redirect } from '../http/index.ts';
import type { FormField, FormPage, FormState } from './form.ts';
import { fieldOf, stateOf } from './form.ts';
import { isGone, movedSlug } from './history.ts';
import type { RawFields, Shape } from './input.ts';
import { checkText, readFields } from './input.ts';
import type { LinkFn, View } from './script-request.ts';
import { readId } from './script-request.ts';

export interface Person {
  id: number;
  slug: string;
  vorname: string;
  nachname: string;
  username: string;
  image: string;
  werke: { id: number; titel: string }[];
}

export type PersonKey = { slug: string } | { id: number };

/**
 * One query for a person and the titles of their works, in the order of the index on
 * (person_id, titel, id); json_agg keeps that order (docs/performance.md, The person query).
 * Prepared once per connection and pipelined: the hot path of every person page.
 */
export async function findPerson(db: Queryable, key: PersonKey): Promise<Person | null> {
  const [person] = await db.query<Person>(
    `SELECT p.id, p.slug, p.vorname, p.nachname, p.username, p.image,
            coalesce((SELECT json_agg(w)
                        FROM (SELECT w.id, w.titel FROM werk w WHERE w.person_id = p.id ORDER BY w.titel, w.id) w), '[]') AS werke
       FROM person p
      WHERE ${'slug' in key ? 'p.slug = $1' : 'p.id = $1'}`,
    ['slug' in key ? key.slug : key.id],
    { name: 'slug' in key ? 'person-by-slug' : 'person-by-id', pipeline: true },
  );
  return person ?? null;
}

const slugPattern = /^[a-z0-9]+(-[a-z0-9]+)*$/;

/** slug=… or pid=… from the query; 400 when neither or both, 404 for a slug that cannot exist. */
export function readPersonKey(query: URLSearchParams, script = 'person.php'): PersonKey {
  const slug = query.get('slug');
  const pid = query.has('pid') ? readId(query, 'pid') : null;
  if (slug === null && pid === null) {
    throw new HttpError(400, `${script} needs the parameter slug (e.g. slug=max-muster) or pid (e.g. pid=1).`);
  }
  if (slug !== null && pid !== null) throw new HttpError(400, 'Give either slug or pid, not both.');
  if (slug !== null && !slugPattern.test(slug))
    throw new HttpError(404, `There is no person with the slug "${slug.slice(0, 60)}".`);
  return slug !== null ? { slug } : { id: pid as number };
}

/** /person/max-muster or /person/1 */
export function keyPath(key: PersonKey): string {
  return `/person/${'slug' in key ? key.slug : key.id}`;
}

/**
 * The person, or the answer for a miss: an old slug moved (301, or 308 for a change, which must
 * keep its method; `rest` follows the slug: /bearbeiten …), a deleted person is gone (410),
 * anything else was never here (404). The history is read only after a miss.
 */
export async function resolvePerson(
  db: Queryable,
  key: PersonKey,
  options: { method: string; rest?: string },
): Promise<Person> {
  const person = await findPerson(db, key);
  if (person) return person;
  if ('slug' in key) {
    const current = await movedSlug(db, key.slug);
    const safe = options.method === 'GET' || options.method === 'HEAD';
    if (current) throw new Redirect(`/person/${current}${options.rest ?? ''}`, safe ? 301 : 308);
  }
  if (await isGone(db, keyPath(key))) throw new HttpError(410, `The person at ${keyPath(key)} has been deleted.`);
  throw new HttpError(
    404,
    `There is no person ${'slug' in key ? `with the slug "${key.slug}"` : `with the id ${key.id}`}.`,
  );
}

export function personJson(person: Person, link: LinkFn) {
  return {
    image: absolute(person.image, link),
    vorname: person.vorname,
    nachname: person.nachname,
    werk: person.werke.map((w) => ({ titel: w.titel, url: link(`/werk/${w.id}`) })),
  };
}

export function personXml(person: Person, link: LinkFn) {
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

export const personView: View = { template: 'person', toJson: personJson, toXml: personXml };

/** Pictures served by this site are stored as paths; XML and JSON carry absolute URLs. */
function absolute(url: string, link: LinkFn): string {
  return url.startsWith('/') ? link(url) : url;
}

/** The picture of a person who gave none. */
const defaultImage = '/img/person.svg';

/** A person as a request body states it. */
export interface PersonInput {
  vorname: string;
  nachname: string;
  /** null: keep the current one (the JSON representation has no username). */
  username: string | null;
  /** A URL, or a path on this site. */
  image: string;
}

// The works listed in a person's body are ignored: works change at their own URLs.
const personShape: Shape = {
  root: 'person',
  fields: [
    { name: 'vorname' },
    { name: 'nachname' },
    { name: 'username' },
    { name: 'image', xml: { element: 'image', attribute: 'ref' } },
  ],
};

/**
 * Reads and checks a person (form, JSON or XML in the shape of the representation); errors lists
 * one message per invalid field. `site` is the absolute URL of the site root without the slash:
 * an image URL on it is stored as a path, so a representation sent back stays the same.
 */
export function readPerson(
  body: Body,
  options: { creating: boolean; site: string },
): { input: PersonInput; errors: FieldError[] } {
  const { raw, errors } = readFields(body, personShape);
  const input: PersonInput = {
    vorname: checkText(raw.vorname ?? null, { field: 'vorname', max: 200, required: true }, errors),
    nachname: checkText(raw.nachname ?? null, { field: 'nachname', max: 200, required: true }, errors),
    username: checkUsername(raw.username ?? null, options.creating, errors),
    image: checkImage(raw.image ?? null, options.site, errors),
  };
  return { input, errors };
}

function checkUsername(value: string | null, creating: boolean, errors: FieldError[]): string | null {
  if (value === null && !creating) return null;
  const username = (value ?? '').trim().toLowerCase();
  if (username === '') errors.push({ field: 'username', message: 'Required: a new person needs a user name.' });
  else if (!usernamePattern.test(username)) {
    errors.push({
      field: 'username',
      message:
        'Use 1 to 64 lower-case letters, digits, dots, hyphens or underscores, beginning with a letter or digit.',
    });
  }
  return username;
}

function checkImage(value: string | null, site: string, errors: FieldError[]): string {
  const text = (value ?? '').trim();
  if (text === '') return defaultImage;
  if (text.length > 2000) {
    errors.push({ field: 'image', message: `At most 2000 characters, not ${text.length}.` });
    return '';
  }
  if (text.startsWith(`${site}/`)) return text.slice(site.length);
  if (/^\/(?![/\\])[^\s\\]*$/.test(text)) return text;
  if (/^https?:\/\/[^\s\\]+$/i.test(text) && URL.canParse(text) && new URL(text).hostname !== '') return text;
  errors.push({
    field: 'image',
    message: 'Must be an http or https URL (https://example.org/bild.jpg) or a path on this site (/img/name.svg).',
  });
  return '';
}

/** The stored person as form values. */
export function personValues(person: Person): RawFields {
  return { vorname: person.vorname, nachname: person.nachname, username: person.username, image: person.image };
}

/** The edit form of the person at path (/person/max-muster), with the delete button. */
export function editPersonPage(path: string, name: string, state: FormState): FormPage {
  const action = path.slice(1);
  return {
    heading: `Edit ${name}`,
    action,
    method: 'PUT',
    submit: 'Save',
    fields: personFields(state),
    ...stateOf(state),
    cancel: { href: action, label: 'Back to the person' },
    remove: { href: `${action}/loeschen`, label: 'Delete this person and all their works' },
  };
}

/** The form that creates a person (POST /personen). */
export function newPersonPage(state: FormState): FormPage {
  return {
    heading: 'New person',
    action: 'personen',
    method: 'POST',
    submit: 'Create',
    fields: personFields(state),
    ...stateOf(state),
    cancel: { href: 'personen', label: 'Back to the persons' },
    remove: null,
  };
}

function personFields(state: FormState): FormField[] {
  return [
    fieldOf(state, { name: 'vorname', label: 'First name(s)', type: 'text', maxlength: 200, required: true }),
    fieldOf(state, { name: 'nachname', label: 'Last name', type: 'text', maxlength: 200, required: true }),
    fieldOf(state, {
      name: 'username',
      label: 'User name',
      type: 'text',
      maxlength: 64,
      required: true,
      hint: 'Lower-case letters, digits, dots, hyphens, underscores.',
    }),
    fieldOf(state, {
      name: 'image',
      label: 'Picture (URL)',
      type: 'text',
      maxlength: 2000,
      required: false,
      hint: 'An http(s) URL or a path on this site; empty for the placeholder.',
    }),
  ];
}
