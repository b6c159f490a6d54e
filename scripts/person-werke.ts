// The collection of a person's works: /person/<slug>/werke. POST adds a work (201 with
// Location /werk/<id>); GET leads to the person, whose document lists the works.
import { beginChange } from '../lib/change.ts';
import { formDocument, orFormAgain, rejectInvalid } from '../lib/form-page.ts';
import { Redirect } from '../lib/http-error.ts';
import { keyPath, personMiss, readPersonKey, resolvePerson } from '../lib/person-key.ts';
import { findPerson } from '../lib/person-view.ts';
import type { Outcome, ScriptRequest } from '../lib/script.ts';
import { newWerkPage } from '../lib/werk-forms.ts';
import { readWerk } from '../lib/werk-input.ts';
import { insertWerk } from '../lib/werk-store.ts';
import { werkView } from '../lib/werk-view.ts';

// What a POST answers is the new work.
export { werkJson as toJson, werkXml as toXml } from '../lib/werk-view.ts';

export async function GET({ query, db }: ScriptRequest): Promise<Outcome> {
  const key = readPersonKey(query, 'person-werke.php');
  const person = await findPerson(db, key);
  if (!person) throw await personMiss(db, key, { method: 'GET', rest: '/werke' });
  return new Redirect(`/person/${person.slug}`, 303);
}

export async function POST(req: ScriptRequest): Promise<Outcome> {
  const key = readPersonKey(req.query, 'person-werke.php');
  const back = `${keyPath(key)}/werke/neu`;
  return orFormAgain(req, async () => {
    const { requester, body } = await beginChange(req, { back, bodyRequired: true });
    const person = await resolvePerson(req.db, key, { method: 'POST', rest: '/werke' });
    const { input, errors } = readWerk(body!);
    rejectInvalid(errors, 'The work was not added');
    const werk = await insertWerk(req.db, { personId: person.id, input, requester, back });
    if (body?.type === 'form') return new Redirect(`/werk/${werk.id}`, 303);
    // SEED.md: the new resource's path ends in its id.
    return { path: `/werk/${werk.id}`, title: werk.titel, data: werk, status: 201, location: `/werk/${werk.id}`, view: werkView, cacheControl: 'private, no-store' };
  }, async (failure) => {
    const person = await findPerson(req.db, key);
    const name = person ? `${person.vorname} ${person.nachname}` : 'the person';
    const page = newWerkPage(keyPath(key), name, { ...failure, values: Object.fromEntries(failure.fields) });
    return formDocument(page, { path: back, title: page.heading, template: 'werk-neu', status: failure.status });
  });
}
