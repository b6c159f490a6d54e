// A loan as a librarian's request states it: the work (its id or URL) and the due date, as a
// form, as JSON shaped like an entry of the loan list ({ "url", "bis" }) or as XML
// (<werk ref="…" bis="…"/>).
import type { Body } from './body.ts';
import type { FieldError } from './http-error.ts';
import type { FormField } from './form-page.ts';
import { errorOf } from './form-page.ts';
import type { RawFields, Shape } from './input.ts';
import { readFields } from './input.ts';

export interface LoanInput {
  werkId: number;
  /** The due date, YYYY-MM-DD; null: four weeks from today. */
  bis: string | null;
}

export const loanShape: Shape = {
  root: 'werk',
  fields: [
    { name: 'werk', json: 'url', xml: { element: '', attribute: 'ref' } },
    { name: 'bis', xml: { element: '', attribute: 'bis' } },
  ],
};

/** `site` is the absolute URL of the site root without the slash: the work's URL must be on it. */
export function readLoan(body: Body, site: string): { input: LoanInput; raw: RawFields; errors: FieldError[] } {
  const { raw, errors } = readFields(body, loanShape);
  const werk = (raw.werk ?? '').trim();
  const path = werk.startsWith(`${site}/`) ? werk.slice(site.length) : werk;
  const id = /^[0-9]{1,9}$/.exec(path)?.[0] ?? /^\/werk\/([0-9]{1,9})$/.exec(path)?.[1];
  if (werk === '') errors.push({ field: 'werk', message: 'Required: the id or the URL of the work to lend.' });
  else if (id === undefined || Number(id) < 1) errors.push({ field: 'werk', message: 'Give the work as its id (14) or its URL on this site (…/werk/14).' });
  const bis = (raw.bis ?? '').trim();
  if (bis !== '' && !isDate(bis)) errors.push({ field: 'bis', message: 'A date as YYYY-MM-DD, for example 2026-12-24.' });
  return { input: { werkId: Number(id ?? 0), bis: bis === '' ? null : bis }, raw, errors };
}

function isDate(text: string): boolean {
  if (!/^[0-9]{4}-[0-9]{2}-[0-9]{2}$/.test(text)) return false;
  const date = new Date(`${text}T00:00:00Z`);
  return !Number.isNaN(date.getTime()) && date.toISOString().slice(0, 10) === text;
}

export function loanFormFields(values: RawFields, errors: readonly FieldError[]): FormField[] {
  return [
    { name: 'werk', label: 'Work (id or URL)', type: 'text', maxlength: 2000, required: true, value: values.werk ?? '', error: errorOf(errors, 'werk') },
    { name: 'bis', label: 'Due', type: 'date', maxlength: 10, required: false, value: values.bis ?? '', error: errorOf(errors, 'bis'), hint: 'Empty: in four weeks.' },
  ];
}
