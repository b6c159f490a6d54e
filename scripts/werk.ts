// One work: /werk/<id> and werk.php?id=<id>, linking its person and the person list.
// PUT replaces its fields, DELETE removes it; its URL then answers 410 (CONTRACT 5).
import { beginChange } from '../lib/change.ts';
import type { Failure } from '../lib/form-page.ts';
import { formDocument, orFormAgain, rejectInvalid } from '../lib/form-page.ts';
import { isGone } from '../lib/history.ts';
import { HttpError, NoContent, Redirect } from '../lib/http-error.ts';
import type { Queryable } from '../lib/db.ts';
import type { Document, Outcome, ScriptRequest } from '../lib/script.ts';
import { readId } from '../lib/script.ts';
import { editWerkPage, werkValues } from '../lib/werk-forms.ts';
import { readWerk } from '../lib/werk-input.ts';
import { deleteWerk, updateWerk } from '../lib/werk-store.ts';
import type { Werk } from '../lib/werk-view.ts';
import { findWerk } from '../lib/werk-view.ts';

export type { Werk } from '../lib/werk-view.ts';
export { werkJson as toJson, werkXml as toXml } from '../lib/werk-view.ts';

export async function GET({ query, db }: ScriptRequest): Promise<Document<Werk>> {
  const id = readId(query, 'id');
  return werkDocument(await resolveWerk(db, id));
}

export async function PUT(req: ScriptRequest): Promise<Outcome> {
  const id = readId(req.query, 'id');
  return orFormAgain(req, async () => {
    const { requester, body } = await beginChange(req, { back: `/werk/${id}/bearbeiten`, bodyRequired: true });
    await resolveWerk(req.db, id);
    const { input, errors } = readWerk(body!);
    rejectInvalid(errors, 'The work was not changed');
    const werk = await updateWerk(req.db, { id, input, requester, back: `/werk/${id}/bearbeiten` });
    if (body?.type === 'form') return new Redirect(`/werk/${id}`, 303);
    return { ...werkDocument(werk), cacheControl: 'private, no-store' };
  }, (failure) => formAgain(id, failure, Object.fromEntries(failure.fields)));
}

export async function DELETE(req: ScriptRequest): Promise<Outcome> {
  const id = readId(req.query, 'id');
  return orFormAgain(req, async () => {
    const { requester, body } = await beginChange(req, { back: `/werk/${id}/bearbeiten`, bodyRequired: false });
    await resolveWerk(req.db, id);
    const slug = await deleteWerk(req.db, { id, requester, back: `/werk/${id}/bearbeiten` });
    return body?.type === 'form' ? new Redirect(`/person/${slug}`, 303) : new NoContent();
  }, async (failure) => {
    const werk = await findWerk(req.db, id);
    return formAgain(id, failure, werk ? werkValues(werk) : {});
  });
}

/** The work; a deleted one is 410, one that never was 404. */
async function resolveWerk(db: Queryable, id: number): Promise<Werk> {
  const werk = await findWerk(db, id);
  if (werk) return werk;
  // Read only after a miss, so a work's page stays one query.
  if (await isGone(db, `/werk/${id}`)) throw new HttpError(410, `The work ${id} has been deleted.`);
  throw new HttpError(404, `There is no work with the id ${id}.`);
}

function werkDocument(werk: Werk): Document<Werk> {
  return { path: `/werk/${werk.id}`, title: werk.titel, data: werk };
}

function formAgain(id: number, failure: Failure, values: Record<string, string | null>) {
  const page = editWerkPage(id, values.titel || 'the work', { ...failure, values });
  return formDocument(page, { path: `/werk/${id}/bearbeiten`, title: page.heading, template: 'werk-bearbeiten', status: failure.status });
}
