// A work as a request body states it (form, JSON or XML in the shape of the work
// representation), checked field by field, and the form that edits it.
import type { Body } from './body.ts';
import type { FieldError } from './http-error.ts';
import type { FormField } from './form-page.ts';
import { errorOf } from './form-page.ts';
import type { RawFields, Shape } from './input.ts';
import { checkText, readFields } from './input.ts';

export interface WerkInput {
  titel: string;
  jahr: number | null;
  art: string;
  beschreibung: string;
}

// url, person and personen in a body are ignored: they are links, not fields of the work.
export const werkShape: Shape = {
  root: 'werk',
  fields: [{ name: 'titel' }, { name: 'jahr' }, { name: 'art' }, { name: 'beschreibung' }],
};

export function readWerk(body: Body): { input: WerkInput; raw: RawFields; errors: FieldError[] } {
  const { raw, errors } = readFields(body, werkShape);
  const input: WerkInput = {
    titel: checkText(raw.titel ?? null, { field: 'titel', max: 300, required: true }, errors),
    jahr: checkYear(raw.jahr ?? null, errors),
    art: checkText(raw.art ?? null, { field: 'art', max: 100, required: false }, errors),
    beschreibung: checkText(raw.beschreibung ?? null, { field: 'beschreibung', max: 10000, required: false, multiline: true }, errors),
  };
  return { input, raw, errors };
}

function checkYear(value: string | null, errors: FieldError[]): number | null {
  const text = (value ?? '').trim();
  if (text === '') return null;
  if (/^-?[0-9]{1,4}$/.test(text) && Math.abs(Number(text)) <= 3000) return Number(text);
  errors.push({ field: 'jahr', message: 'A year from -3000 to 3000, or empty when it is not known.' });
  return null;
}

export function werkFormFields(values: RawFields, errors: readonly FieldError[]): FormField[] {
  const field = (name: string, label: string, type: FormField['type'], maxlength: number, required: boolean): FormField => ({
    name, label, type, maxlength, required, value: values[name] ?? '', error: errorOf(errors, name),
  });
  return [
    field('titel', 'Title', 'text', 300, true),
    field('jahr', 'Year', 'number', 10, false),
    field('art', 'Kind (painting, novel …)', 'text', 100, false),
    field('beschreibung', 'Description', 'textarea', 10000, false),
  ];
}
