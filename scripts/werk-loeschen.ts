// Deleting a work asks first: /werk/<id>/loeschen names the work and posts to it with
// _method=DELETE; Cancel leads back to the work. For the owner's account and librarians.
import type { ApiFragment, Document, FormPage, ScriptRequest } from '../lib/page/index.ts';
import { mayChangePerson, notYours, readId, resolveWerk, showForm } from '../lib/page/index.ts';

export async function GET(req: ScriptRequest): Promise<Document<FormPage>> {
  const id = readId(req.query, 'id');
  const werk = await resolveWerk(req.db, id);
  const by = `${werk.person.vorname} ${werk.person.nachname}`;
  return showForm(req, `/werk/${id}/loeschen`, async ({ requester, csrfToken }) => {
    if (!(await mayChangePerson(req.db, requester, werk.person.id))) throw notYours(`"${werk.titel}"`);
    return {
      heading: `Delete "${werk.titel}"?`,
      lead: `This deletes the work "${werk.titel}" by ${by}. It cannot be undone.`,
      action: `werk/${id}`,
      method: 'DELETE',
      submit: 'Delete the work',
      fields: [],
      csrfToken,
      message: null,
      login: null,
      cancel: { href: `werk/${id}`, label: 'Cancel' },
      remove: null,
    };
  });
}

/** Its addresses in /openapi.json (lib/page/api-description.ts). */
export const api: ApiFragment = ({ params, form }) => [
  {
    path: '/werk/{id}/loeschen',
    pathParams: [params.id],
    operations: form('confirms deleting a work', 'werk'),
  },
];
