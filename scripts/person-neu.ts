// The form that creates a person: /personen/neu, for librarians. It posts to /personen.
import { librariansOnly } from '../lib/change.ts';
import type { FormPage } from '../lib/form-page.ts';
import { formDocument, openForm } from '../lib/form-page.ts';
import { newPersonPage } from '../lib/person-forms.ts';
import type { Document, ScriptRequest } from '../lib/script.ts';

export async function GET(req: ScriptRequest): Promise<Document<FormPage>> {
  const { requester, csrfToken } = await openForm(req, '/personen/neu');
  if (requester.role !== 'librarian') throw librariansOnly('create persons', '/personen/neu');

  const page = newPersonPage({ values: {}, errors: [], csrfToken, message: null, login: null });
  return formDocument(page, { path: '/personen/neu', title: page.heading, template: 'person-neu' });
}
