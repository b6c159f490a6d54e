// The form that edits a work: /werk/<id>/bearbeiten. It posts to the work with _method=PUT,
// and its delete button with _method=DELETE. For the owner's account and librarians.
import { mayChangePerson, notYours } from '../lib/change.ts';
import type { FormPage } from '../lib/form-page.ts';
import { formDocument, openForm } from '../lib/form-page.ts';
import { isGone } from '../lib/history.ts';
import { HttpError } from '../lib/http-error.ts';
import type { Document, ScriptRequest } from '../lib/script.ts';
import { readId } from '../lib/script.ts';
import { editWerkPage, werkValues } from '../lib/werk-forms.ts';
import { findWerk } from '../lib/werk-view.ts';

export async function GET(req: ScriptRequest): Promise<Document<FormPage>> {
  const id = readId(req.query, 'id');
  const werk = await findWerk(req.db, id);
  if (!werk) {
    if (await isGone(req.db, `/werk/${id}`)) throw new HttpError(410, `The work ${id} has been deleted.`);
    throw new HttpError(404, `There is no work with the id ${id}.`);
  }
  const back = `/werk/${id}/bearbeiten`;

  const { requester, csrfToken } = await openForm(req, back);
  if (!(await mayChangePerson(req.db, requester, werk.person.id))) throw notYours(`"${werk.titel}"`, back);

  const page = editWerkPage(id, werk.titel, { values: werkValues(werk), errors: [], csrfToken, message: null, login: null });
  return formDocument(page, { path: back, title: page.heading, template: 'werk-bearbeiten' });
}
