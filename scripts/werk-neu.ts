// The form that adds a work to a person: /person/<slug>/werke/neu. It posts to
// /person/<slug>/werke. For the person's own account and librarians.
import type { ApiFragment, Document, FormPage, ScriptRequest } from '../lib/page/index.ts';
import {
  freshForm,
  mayChangePerson,
  newWerkPage,
  notYours,
  readPersonKey,
  resolvePerson,
  showForm,
} from '../lib/page/index.ts';

export async function GET(req: ScriptRequest): Promise<Document<FormPage>> {
  const person = await resolvePerson(req.db, readPersonKey(req.query, 'werk-neu.php'), {
    method: 'GET',
    rest: '/werke/neu',
  });
  const path = `/person/${person.slug}`;
  const name = `${person.vorname} ${person.nachname}`;
  return showForm(req, `${path}/werke/neu`, async ({ requester, csrfToken }) => {
    if (!(await mayChangePerson(req.db, requester, person.id))) throw notYours(`the works of ${name}`);
    return newWerkPage(path, name, freshForm({}, csrfToken));
  });
}

/** Its addresses in /openapi.json (lib/page/api-description.ts). */
export const api: ApiFragment = ({ params, form }) => [
  {
    path: '/person/{person}/werke/neu',
    pathParams: [params.person],
    operations: form('adds a work to a person', 'person'),
  },
];
