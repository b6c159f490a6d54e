// The pages with a person's forms: edit (PUT, with the delete button) and new (POST /personen).
import type { FieldError } from './http-error.ts';
import type { FormPage } from './form-page.ts';
import type { RawFields } from './input.ts';
import { personFormFields } from './person-input.ts';
import type { Person } from './person-view.ts';

export interface FormState {
  values: RawFields;
  errors: readonly FieldError[];
  csrfToken: string | null;
  message: string | null;
  login: string | null;
}

/** The stored person as form values. */
export function personValues(person: Person): RawFields {
  return { vorname: person.vorname, nachname: person.nachname, username: person.username, image: person.image };
}

/** The edit form of the person at path (/person/max-muster). */
export function editPersonPage(path: string, name: string, state: FormState): FormPage {
  const action = path.slice(1);
  return {
    heading: `Edit ${name}`, action, method: 'PUT', submit: 'Save', fields: personFormFields(state.values, state.errors),
    csrfToken: state.csrfToken, message: state.message, login: state.login,
    cancel: { href: action, label: 'Back to the person' },
    remove: { action, label: 'Delete this person and all their works' },
  };
}

export function newPersonPage(state: FormState): FormPage {
  return {
    heading: 'New person', action: 'personen', method: 'POST', submit: 'Create', fields: personFormFields(state.values, state.errors),
    csrfToken: state.csrfToken, message: state.message, login: state.login,
    cancel: { href: 'personen', label: 'Back to the persons' }, remove: null,
  };
}
