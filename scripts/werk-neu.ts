// The form that adds a work to a person: /person/<slug>/werke/neu. It posts to
// /person/<slug>/werke. For the person's own account and librarians.
import { mayChangePerson, notYours } from '../lib/change.ts';
import type { FormPage } from '../lib/form-page.ts';
import { formDocument, openForm } from '../lib/form-page.ts';
import { personMiss, readPersonKey } from '../lib/person-key.ts';
import { findPerson } from '../lib/person-view.ts';
import type { Document, ScriptRequest } from '../lib/script.ts';
import { newWerkPage } from '../lib/werk-forms.ts';

export async function GET(req: ScriptRequest): Promise<Document<FormPage>> {
  const key = readPersonKey(req.query, 'werk-neu.php');
  const person = await findPerson(req.db, key);
  if (!person) throw await personMiss(req.db, key, { method: 'GET', rest: '/werke/neu' });
  const path = `/person/${person.slug}`;
  const name = `${person.vorname} ${person.nachname}`;

  const { requester, csrfToken } = await openForm(req, `${path}/werke/neu`);
  if (!(await mayChangePerson(req.db, requester, person.id))) throw notYours(`the works of ${name}`, `${path}/werke/neu`);

  const page = newWerkPage(path, name, { values: {}, errors: [], csrfToken, message: null, login: null });
  return formDocument(page, { path: `${path}/werke/neu`, title: page.heading, template: 'werk-neu' });
}
