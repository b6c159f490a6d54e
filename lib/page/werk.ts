// A work: found by id, represented (shapes in docs/interface.md, Work), read from a request body,
// and edited in a form. Writing is werk-store.ts.
import type { Queryable } from '../db/index.ts';
import type { Body, FieldError } from '../http/index.ts';
import { HttpError } from '../http/index.ts';
import type { FormField, FormPage, FormState } from './form.ts';
import { fieldOf, stateOf } from './form.ts';
import { isGone } from './history.ts';
import type { RawFields, Shape } from './input.ts';
import { checkText, readFields } from './input.ts';
import type { LinkFn, View } from './script-request.ts';

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

/** The work; a deleted one is 410, one that never was 404 (the history is read only after a miss). */
export async function resolveWerk(db: Queryable, id: number): Promise<Werk> {
  const werk = await findWerk(db, id);
  if (werk) return werk;
  if (await isGone(db, `/werk/${id}`)) throw new HttpError(410, `The work ${id} has been deleted.`);
  throw new HttpError(404, `There is no work with the id ${id}.`);
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
      person: {
        '@_ref': link(`/person/${werk.person.slug}`),
        vorname: werk.person.vorname,
        nachname: werk.person.nachname,
      },
      personen: { '@_ref': link('/personen') },
    },
  };
}

export const werkView: View = { template: 'werk', toJson: werkJson, toXml: werkXml };

/** A work as a request body states it. */
export interface WerkInput {
  titel: string;
  jahr: number | null;
  art: string;
  beschreibung: string;
}

// url, person and personen in a body are ignored: they are links, not fields of the work.
const werkShape: Shape = {
  root: 'werk',
  fields: [{ name: 'titel' }, { name: 'jahr' }, { name: 'art' }, { name: 'beschreibung' }],
};

/** Reads and checks a work (form, JSON or XML in the shape of the representation). */
export function readWerk(body: Body): { input: WerkInput; errors: FieldError[] } {
  const { raw, errors } = readFields(body, werkShape);
  const input: WerkInput = {
    titel: checkText(raw.titel ?? null, { field: 'titel', max: 300, required: true }, errors),
    jahr: checkYear(raw.jahr ?? null, errors),
    art: checkText(raw.art ?? null, { field: 'art', max: 100, required: false }, errors),
    beschreibung: checkText(
      raw.beschreibung ?? null,
      { field: 'beschreibung', max: 10000, required: false, multiline: true },
      errors,
    ),
  };
  return { input, errors };
}

function checkYear(value: string | null, errors: FieldError[]): number | null {
  const text = (value ?? '').trim();
  if (text === '') return null;
  if (/^-?[0-9]{1,4}$/.test(text) && Math.abs(Number(text)) <= 3000) return Number(text);
  errors.push({ field: 'jahr', message: 'A year from -3000 to 3000, or empty when it is not known.' });
  return null;
}

/** The stored work as form values. */
export function werkValues(werk: Werk): RawFields {
  return {
    titel: werk.titel,
    jahr: werk.jahr === null ? '' : String(werk.jahr),
    art: werk.art,
    beschreibung: werk.beschreibung,
  };
}

/** The form that adds a work to the person at personPath (/person/max-muster). */
export function newWerkPage(personPath: string, personName: string, state: FormState): FormPage {
  return {
    heading: `Add a work by ${personName}`,
    action: `${personPath.slice(1)}/werke`,
    method: 'POST',
    submit: 'Add the work',
    fields: werkFields(state),
    ...stateOf(state),
    cancel: { href: personPath.slice(1), label: `Back to ${personName}` },
    remove: null,
  };
}

/** The edit form of a work, with the delete button. */
export function editWerkPage(id: number, titel: string, state: FormState): FormPage {
  const action = `werk/${id}`;
  return {
    heading: `Edit "${titel}"`,
    action,
    method: 'PUT',
    submit: 'Save',
    fields: werkFields(state),
    ...stateOf(state),
    cancel: { href: action, label: 'Back to the work' },
    remove: { href: `${action}/loeschen`, label: 'Delete this work' },
  };
}

function werkFields(state: FormState): FormField[] {
  return [
    fieldOf(state, { name: 'titel', label: 'Title', type: 'text', maxlength: 300, required: true }),
    fieldOf(state, { name: 'jahr', label: 'Year', type: 'number', maxlength: 10, required: false }),
    fieldOf(state, { name: 'art', label: 'Kind (painting, novel …)', type: 'text', maxlength: 100, required: false }),
    fieldOf(state, { name: 'beschreibung', label: 'Description', type: 'textarea', maxlength: 10000, required: false }),
  ];
}
