// The form that edits a person: /person/<slug>/bearbeiten. It posts to the person with
// _method=PUT, and its delete button with _method=DELETE. Only the person's own account
// and librarians get the form; everyone else 403 with a login link.
import { mayChangePerson, notYours } from '../lib/change.ts';
import type { FormPage } from '../lib/form-page.ts';
import { formDocument, openForm } from '../lib/form-page.ts';
import { editPersonPage, personValues } from '../lib/person-forms.ts';
import { personMiss, readPersonKey } from '../lib/person-key.ts';
import { findPerson } from '../lib/person-view.ts';
import type { Document, ScriptRequest } from '../lib/script.ts';

export async function GET(req: ScriptRequest): Promise<Document<FormPage>> {
  const key = readPersonKey(req.query, 'person-bearbeiten.php');
  const person = await findPerson(req.db, key);
  if (!person) throw await personMiss(req.db, key, { method: 'GET', rest: '/bearbeiten' });
  const path = `/person/${person.slug}`;
  const name = `${person.vorname} ${person.nachname}`;

  const { requester, csrfToken } = await openForm(req, `${path}/bearbeiten`);
  if (!(await mayChangePerson(req.db, requester, person.id))) throw notYours(name, `${path}/bearbeiten`);

  const page = editPersonPage(path, name, { values: personValues(person), errors: [], csrfToken, message: null, login: null });
  return formDocument(page, { path: `${path}/bearbeiten`, title: page.heading, template: 'person-bearbeiten' });
}
