// A person as a request body states it (form, JSON or XML in the shape of the person
// representation), checked field by field, and the form that edits it.
import { usernamePattern } from './accounts.ts';
import type { Body } from './body.ts';
import type { FieldError } from './http-error.ts';
import type { FormField } from './form-page.ts';
import { errorOf } from './form-page.ts';
import type { RawFields, Shape } from './input.ts';
import { checkText, readFields } from './input.ts';

/** The picture of a person who gave none. */
export const defaultImage = '/img/person.svg';

export interface PersonInput {
  vorname: string;
  nachname: string;
  /** null: keep the current one (the JSON representation has no username). */
  username: string | null;
  /** A URL, or a path on this site. */
  image: string;
}

// The works listed in a person's body are ignored: works change at their own URLs.
export const personShape: Shape = {
  root: 'person',
  fields: [{ name: 'vorname' }, { name: 'nachname' }, { name: 'username' }, { name: 'image', xml: { element: 'image', attribute: 'ref' } }],
};

/**
 * Reads and checks a person; errors lists one message per invalid field. `site` is the
 * absolute URL of the site root without the slash: an image URL on it is stored as a path.
 */
export function readPerson(body: Body, options: { creating: boolean; site: string }): { input: PersonInput; raw: RawFields; errors: FieldError[] } {
  const { raw, errors } = readFields(body, personShape);
  const input: PersonInput = {
    vorname: checkText(raw.vorname ?? null, { field: 'vorname', max: 200, required: true }, errors),
    nachname: checkText(raw.nachname ?? null, { field: 'nachname', max: 200, required: true }, errors),
    username: checkUsername(raw.username ?? null, options.creating, errors),
    image: checkImage(raw.image ?? null, options.site, errors),
  };
  return { input, raw, errors };
}

function checkUsername(value: string | null, creating: boolean, errors: FieldError[]): string | null {
  if (value === null && !creating) return null;
  const username = (value ?? '').trim().toLowerCase();
  if (username === '') errors.push({ field: 'username', message: 'Required: a new person needs a user name.' });
  else if (!usernamePattern.test(username)) {
    errors.push({ field: 'username', message: 'Use 1 to 64 lower-case letters, digits, dots, hyphens or underscores, beginning with a letter or digit.' });
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
  errors.push({ field: 'image', message: 'Must be an http or https URL (https://example.org/bild.jpg) or a path on this site (/img/name.svg).' });
  return '';
}

/** The fields of the person form, filled with values (stored or just typed) and messages. */
export function personFormFields(values: RawFields, errors: readonly FieldError[]): FormField[] {
  const field = (name: string, label: string, type: FormField['type'], maxlength: number, required: boolean, hint?: string): FormField => ({
    name, label, type, maxlength, required, value: values[name] ?? '', error: errorOf(errors, name), ...(hint ? { hint } : {}),
  });
  return [
    field('vorname', 'First name(s)', 'text', 200, true),
    field('nachname', 'Last name', 'text', 200, true),
    field('username', 'User name', 'text', 64, true, 'Lower-case letters, digits, dots, hyphens, underscores.'),
    field('image', 'Picture (URL)', 'text', 2000, false, 'An http(s) URL or a path on this site; empty for the placeholder.'),
  ];
}
