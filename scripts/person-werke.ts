// The collection of a person's works: /person/<slug>/werke. POST adds a work (201 with Location
// /werk/<id>); GET leads to the person, whose document lists the works.
import type { ApiFragment, Outcome, ScriptRequest } from '../lib/page/index.ts';
import {
  change,
  findPerson,
  formAgain,
  formDocument,
  insertWerk,
  keyPath,
  newWerkPage,
  readPersonKey,
  readWerk,
  Redirect,
  rejectInvalid,
  resolvePerson,
  touched,
} from '../lib/page/index.ts';

// What a POST answers is the new work.
export { werkView as view } from '../lib/page/index.ts';

export async function GET({ query, db }: ScriptRequest): Promise<never> {
  const person = await resolvePerson(db, readPersonKey(query, 'person-werke.php'), { method: 'GET', rest: '/werke' });
  throw new Redirect(`/person/${person.slug}`, 303);
}

export async function POST(req: ScriptRequest): Promise<Outcome> {
  const key = readPersonKey(req.query, 'person-werke.php');
  const back = `${keyPath(key)}/werke/neu`;
  return change(
    req,
    { back },
    async ({ requester, body }) => {
      const person = await resolvePerson(req.db, key, { method: 'POST', rest: '/werke' });
      const { input, errors } = readWerk(body);
      rejectInvalid(errors, 'The work was not added');
      const werk = await insertWerk(req.db, { personId: person.id, input, requester });
      // The new resource's path ends in its id.
      const path = `/werk/${werk.id}`;
      return {
        then: path,
        document: { path, title: werk.titel, data: werk, status: 201, location: path },
        touched: touched.werk(werk.id, person.id),
      };
    },
    async (failure) => {
      const person = await findPerson(req.db, key);
      const name = person ? `${person.vorname} ${person.nachname}` : 'the person';
      return formDocument(
        newWerkPage(keyPath(key), name, formAgain(failure, Object.fromEntries(failure.fields))),
        back,
        failure.status,
      );
    },
  );
}

/** Its addresses in /openapi.json (lib/page/api-description.ts). */
export const api: ApiFragment = ({
  params,
  problems,
  body,
  changing,
  created,
  seeOther,
  movedPermanently,
  permanentRedirect,
  werkForm,
}) => [
  {
    path: '/person/{person}/werke',
    pathParams: [params.person],
    operations: {
      get: {
        summary: 'Leads to the person.',
        responses: { 301: movedPermanently, 303: { description: 'See the person.' }, ...problems('404', '410') },
      },
      post: {
        summary: 'Adds a work to the person.',
        ...changing,
        requestBody: body('WerkInput', werkForm),
        responses: {
          201: created('work', 'werk'),
          303: seeOther,
          308: permanentRedirect,
          ...problems('400', '403', '404', '410', '415', '422'),
        },
      },
    },
  },
];
