// Deleting a person asks first: /person/<slug>/loeschen says what goes (the person and the number
// of their works) and posts to the person with _method=DELETE; Cancel leads back to the person.
// A plain form, so it works without JavaScript. Only the person's own account and librarians.
import type { ApiFragment, Document, FormPage, ScriptRequest } from '../lib/page/index.ts';
import { mayChangePerson, notYours, readPersonKey, resolvePerson, showForm } from '../lib/page/index.ts';

export async function GET(req: ScriptRequest): Promise<Document<FormPage>> {
  const person = await resolvePerson(req.db, readPersonKey(req.query, 'person-loeschen.php'), {
    method: 'GET',
    rest: '/loeschen',
  });
  const path = `/person/${person.slug}`;
  const name = `${person.vorname} ${person.nachname}`;
  const works = person.werke.length === 1 ? '1 work' : `${person.werke.length} works`;
  return showForm(req, `${path}/loeschen`, async ({ requester, csrfToken }) => {
    if (!(await mayChangePerson(req.db, requester, person.id))) throw notYours(name);
    return {
      heading: `Delete ${name}?`,
      lead: `This deletes ${name} and all their works (${works}). It cannot be undone.`,
      action: path.slice(1),
      method: 'DELETE',
      submit: `Delete ${name} and ${works}`,
      fields: [],
      csrfToken,
      message: null,
      login: null,
      cancel: { href: path.slice(1), label: 'Cancel' },
      remove: null,
    };
  });
}

/** Its addresses in /openapi.json (lib/page/api-description.ts). */
export const api: ApiFragment = ({ params, form }) => [
  {
    path: '/person/{person}/loeschen',
    pathParams: [params.person],
    operations: form('confirms deleting a person, with the number of their works', 'person'),
  },
];
