// One person with the links to their works: /person/<slug>, /person/<id>, person.php?slug=<slug>
// and person.php?pid=<id>. PUT replaces the person's fields, DELETE removes the person with
// their works (docs/interface.md, Person and Changing data).
import type {
  ApiFragment,
  Document,
  Failure,
  Outcome,
  Person,
  PersonKey,
  RawFields,
  ScriptRequest,
} from '../lib/page/index.ts';
import {
  change,
  deletePerson,
  editPersonPage,
  findPerson,
  formAgain,
  formDocument,
  keyPath,
  personKey,
  personValues,
  readPerson,
  readPersonKey,
  rejectInvalid,
  resolvePerson,
  touched,
  updatePerson,
} from '../lib/page/index.ts';

export type { Person } from '../lib/page/index.ts';
export { personView as view } from '../lib/page/index.ts';

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
      return { then: `/person/${person.slug}`, document: personDocument(person), touched: touched.person(person.id) };
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
      return { then: '/personen', touched: touched.person(current.id) };
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
    keys: [personKey(person.id)],
  };
}

function editPath(key: PersonKey): string {
  return `${keyPath(key)}/bearbeiten`;
}

function showAgain(key: PersonKey, failure: Failure, values: RawFields): Document {
  const name = `${values.vorname ?? ''} ${values.nachname ?? ''}`.trim() || 'the person';
  return formDocument(editPersonPage(keyPath(key), name, formAgain(failure, values)), editPath(key), failure.status);
}

/** Its addresses in /openapi.json (lib/page/api-description.ts). */
export const api: ApiFragment = ({
  params,
  ok,
  notModified,
  problems,
  body,
  changing,
  seeOther,
  noContent,
  movedPermanently,
  permanentRedirect,
  personForm,
}) => [
  {
    path: '/person/{person}',
    pathParams: [params.person],
    operations: {
      get: {
        summary: 'A person with their works.',
        responses: {
          200: ok('The person.', 'person'),
          301: movedPermanently,
          304: notModified,
          ...problems('404', '410'),
        },
      },
      put: {
        summary: 'Changes a person.',
        ...changing,
        requestBody: body('PersonInput', personForm),
        responses: {
          200: ok('The person as changed.', 'person'),
          303: seeOther,
          308: permanentRedirect,
          ...problems('400', '403', '404', '410', '415', '422'),
        },
      },
      delete: {
        summary: 'Deletes a person and their works.',
        ...changing,
        responses: { 204: noContent, 303: seeOther, 308: permanentRedirect, ...problems('403', '404', '409', '410') },
      },
    },
  },
];
