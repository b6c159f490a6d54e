// The form that edits a person: /person/<slug>/bearbeiten. It posts to the person with
// _method=PUT, and its delete button with _method=DELETE. Only the person's own account and
// librarians get the form; everyone else 403 with a login link.
import type { ApiFragment, Document, FormPage, ScriptRequest } from '../lib/page/index.ts';
import {
  editPersonPage,
  freshForm,
  mayChangePerson,
  notYours,
  personValues,
  readPersonKey,
  resolvePerson,
  showForm,
} from '../lib/page/index.ts';

export async function GET(req: ScriptRequest): Promise<Document<FormPage>> {
  const person = await resolvePerson(req.db, readPersonKey(req.query, 'person-bearbeiten.php'), {
    method: 'GET',
    rest: '/bearbeiten',
  });
  const path = `/person/${person.slug}`;
  const name = `${person.vorname} ${person.nachname}`;
  return showForm(req, `${path}/bearbeiten`, async ({ requester, csrfToken }) => {
    if (!(await mayChangePerson(req.db, requester, person.id))) throw notYours(name);
    return editPersonPage(path, name, freshForm(personValues(person), csrfToken));
  });
}

/** Its addresses in /openapi.json (lib/page/api-description.ts). */
export const api: ApiFragment = ({ params, form }) => [
  {
    path: '/person/{person}/bearbeiten',
    pathParams: [params.person],
    operations: form('changes or deletes a person', 'person'),
  },
];
