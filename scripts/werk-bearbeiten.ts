// The form that edits a work: /werk/<id>/bearbeiten. It posts to the work with _method=PUT, and
// its delete button with _method=DELETE. For the owner's account and librarians.
import type { ApiFragment, Document, FormPage, ScriptRequest } from '../lib/page/index.ts';
import {
  editWerkPage,
  freshForm,
  mayChangePerson,
  notYours,
  readId,
  resolveWerk,
  showForm,
  werkValues,
} from '../lib/page/index.ts';

export async function GET(req: ScriptRequest): Promise<Document<FormPage>> {
  const id = readId(req.query, 'id');
  const werk = await resolveWerk(req.db, id);
  return showForm(req, `/werk/${id}/bearbeiten`, async ({ requester, csrfToken }) => {
    if (!(await mayChangePerson(req.db, requester, werk.person.id))) throw notYours(`"${werk.titel}"`);
    return editWerkPage(id, werk.titel, freshForm(werkValues(werk), csrfToken));
  });
}

/** Its addresses in /openapi.json (lib/page/api-description.ts). */
export const api: ApiFragment = ({ params, form }) => [
  {
    path: '/werk/{id}/bearbeiten',
    pathParams: [params.id],
    operations: form('changes or deletes a work', 'werk'),
  },
];
