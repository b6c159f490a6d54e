// The pages with a work's forms: add a work to a person (POST /person/<slug>/werke) and
// edit a work (PUT, with the delete button).
import type { FormPage } from './form-page.ts';
import type { FormState } from './person-forms.ts';
import type { Werk } from './werk-view.ts';
import { werkFormFields } from './werk-input.ts';
import type { RawFields } from './input.ts';

export function werkValues(werk: Werk): RawFields {
  return { titel: werk.titel, jahr: werk.jahr === null ? '' : String(werk.jahr), art: werk.art, beschreibung: werk.beschreibung };
}

/** The form that adds a work to the person at personPath (/person/max-muster). */
export function newWerkPage(personPath: string, personName: string, state: FormState): FormPage {
  return {
    heading: `Add a work by ${personName}`, action: `${personPath.slice(1)}/werke`, method: 'POST', submit: 'Add the work',
    fields: werkFormFields(state.values, state.errors), csrfToken: state.csrfToken, message: state.message, login: state.login,
    cancel: { href: personPath.slice(1), label: `Back to ${personName}` }, remove: null,
  };
}

export function editWerkPage(id: number, titel: string, state: FormState): FormPage {
  const action = `werk/${id}`;
  return {
    heading: `Edit "${titel}"`, action, method: 'PUT', submit: 'Save',
    fields: werkFormFields(state.values, state.errors), csrfToken: state.csrfToken, message: state.message, login: state.login,
    cancel: { href: action, label: 'Back to the work' },
    remove: { action, label: 'Delete this work' },
  };
}
