// One person with the links to their works: /person/<slug>, /person/<id>, person.php?slug=<slug>
// and person.php?pid=<id>. PUT replaces the person's fields, DELETE removes the person with
// their works (docs/interface.md, Person and Changing data).
import type { Document, Failure, Outcome, Person, PersonKey, RawFields, ScriptRequest } from '../lib/page/index.ts';
import {
  change,
  deletePerson,
  editPersonPage,
  findPerson,
  formAgain,
  formDocument,
  keyPath,
  personValues,
  readPerson,
  readPersonKey,
  rejectInvalid,
  resolvePerson,
  updatePerson,
} from '../lib/page/index.ts';

export type { Person } from '../lib/page/index.ts';
export { personJson as toJson, personXml as toXml } from '../lib/page/index.ts';

export async function GET({ query, db }: ScriptRequest): Promise<Document<Person>> {
  return personDocument(await resolvePerson(db, readPersonKey(query), { method: 'GET' }));
}

export async function PUT(req: ScriptRequest): Promise<Outcome> {
  const key = readPersonKey(req.query);
  return change(
    req,
    { back: editPath(key) },
    async ({ requester, body }) => {
      const current = await resolvePerson(req.db, key, { method: 'PUT' });
      const { input, errors } = readPerson(body, { creating: false, site: req.link('') });
      rejectInvalid(errors, 'The person was not changed');
      const person = await updatePerson(req.db, { id: current.id, input, requester });
      return { then: `/person/${person.slug}`, document: personDocument(person) };
    },
    (failure) => showAgain(key, failure, Object.fromEntries(failure.fields)),
  );
}

export async function DELETE(req: ScriptRequest): Promise<Outcome> {
  const key = readPersonKey(req.query);
  return change(
    req,
    { back: editPath(key), bodyless: true },
    async ({ requester }) => {
      const current = await resolvePerson(req.db, key, { method: 'DELETE' });
      await deletePerson(req.db, { id: current.id, requester });
      return { then: '/personen' };
    },
    async (failure) => {
      // The delete button sends no fields: the form shows the person as stored.
      const person = await findPerson(req.db, key);
      return showAgain(key, failure, person ? personValues(person) : {});
    },
  );
}

function personDocument(person: Person): Document<Person> {
  const name = `${person.vorname} ${person.nachname}`;
  const count = person.werke.length === 1 ? '1 work' : `${person.werke.length} works`;
  const titles =
    person.werke.length === 0
      ? ''
      : `: ${person.werke
          .slice(0, 3)
          .map((w) => w.titel)
          .join(' · ')}${person.werke.length > 3 ? ' · …' : ''}`;
  return {
    path: `/person/${person.slug}`,
    title: name,
    description: `${name} has ${count} in the portfolio${titles}.`,
    data: person,
  };
}

function editPath(key: PersonKey): string {
  return `${keyPath(key)}/bearbeiten`;
}

function showAgain(key: PersonKey, failure: Failure, values: RawFields): Document {
  const name = `${values.vorname ?? ''} ${values.nachname ?? ''}`.trim() || 'the person';
  return formDocument(editPersonPage(keyPath(key), name, formAgain(failure, values)), editPath(key), failure.status);
}
