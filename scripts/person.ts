// One person with the links to their works: /person/<slug>, /person/<id>,
// person.php?slug=<slug> and person.php?pid=<id>. Shapes exactly as SEED.md prescribes.
// PUT replaces the person's fields, DELETE removes the person with their works (CONTRACT 5).
import { beginChange } from '../lib/change.ts';
import type { Failure } from '../lib/form-page.ts';
import { formDocument, orFormAgain, rejectInvalid } from '../lib/form-page.ts';
import { NoContent, Redirect } from '../lib/http-error.ts';
import type { PersonKey } from '../lib/person-key.ts';
import { keyPath, personMiss, readPersonKey, resolvePerson } from '../lib/person-key.ts';
import { editPersonPage, personValues } from '../lib/person-forms.ts';
import { readPerson } from '../lib/person-input.ts';
import { deletePerson, updatePerson } from '../lib/person-store.ts';
import type { Person } from '../lib/person-view.ts';
import { findPerson } from '../lib/person-view.ts';
import type { Document, Outcome, ScriptRequest } from '../lib/script.ts';

export type { Person } from '../lib/person-view.ts';
export { absolute, personJson as toJson, personXml as toXml } from '../lib/person-view.ts';

export async function GET({ query, db }: ScriptRequest): Promise<Document<Person>> {
  const key = readPersonKey(query);
  // One query when the person is there; the history is read only after a miss.
  const person = await findPerson(db, key);
  if (!person) throw await personMiss(db, key, { method: 'GET' });
  return personDocument(person);
}

export async function PUT(req: ScriptRequest): Promise<Outcome> {
  const key = readPersonKey(req.query);
  return orFormAgain(req, async () => {
    const { requester, body } = await beginChange(req, { back: editPath(key), bodyRequired: true });
    const current = await resolvePerson(req.db, key, { method: 'PUT' });
    const { input, errors } = readPerson(body!, { creating: false, site: req.link('') });
    rejectInvalid(errors, 'The person was not changed');
    const person = await updatePerson(req.db, { id: current.id, input, requester, back: editPath(key) });
    if (body?.type === 'form') return new Redirect(`/person/${person.slug}`, 303);
    return { ...personDocument(person), cacheControl: 'private, no-store' };
  }, (failure) => formAgain(req, key, failure, failure.fields));
}

export async function DELETE(req: ScriptRequest): Promise<Outcome> {
  const key = readPersonKey(req.query);
  return orFormAgain(req, async () => {
    const { requester, body } = await beginChange(req, { back: editPath(key), bodyRequired: false });
    const current = await resolvePerson(req.db, key, { method: 'DELETE' });
    await deletePerson(req.db, { id: current.id, requester, back: editPath(key) });
    return body?.type === 'form' ? new Redirect('/personen', 303) : new NoContent();
  }, async (failure) => {
    // The delete button sends no fields: the form shows the person as stored.
    const person = await findPerson(req.db, key);
    return formAgain(req, key, failure, person ? personValues(person) : {});
  });
}

function personDocument(person: Person): Document<Person> {
  return { path: `/person/${person.slug}`, title: `${person.vorname} ${person.nachname}`, data: person };
}

function editPath(key: PersonKey): string {
  return `${keyPath(key)}/bearbeiten`;
}

function formAgain(req: ScriptRequest, key: PersonKey, failure: Failure, values: URLSearchParams | Record<string, string | null>) {
  const typed = values instanceof URLSearchParams ? Object.fromEntries(values) : values;
  const name = `${typed.vorname ?? ''} ${typed.nachname ?? ''}`.trim() || 'the person';
  const page = editPersonPage(keyPath(key), name, { ...failure, values: typed });
  return formDocument(page, { path: editPath(key), title: page.heading, template: 'person-bearbeiten', status: failure.status });
}
