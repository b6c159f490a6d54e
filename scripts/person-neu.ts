// The form that creates a person: /personen/neu, for librarians. It posts to /personen.
import type { ApiFragment, Document, FormPage, ScriptRequest } from '../lib/page/index.ts';
import { freshForm, librariansOnly, newPersonPage, showForm } from '../lib/page/index.ts';

export async function GET(req: ScriptRequest): Promise<Document<FormPage>> {
  return showForm(req, '/personen/neu', async ({ requester, csrfToken }) => {
    if (requester.role !== 'librarian') throw librariansOnly('create persons');
    return newPersonPage(freshForm({}, csrfToken));
  });
}

/** Its addresses in /openapi.json (lib/page/api-description.ts). */
export const api: ApiFragment = ({ form }) => [{ path: '/personen/neu', operations: form('creates a person', null) }];
