// One work: /werk/<id> and werk.php?id=<id>, linking its person and the person list. PUT
// replaces its fields, DELETE removes it; its URL then answers 410 (docs/interface.md, Work).
import type { ApiFragment, Document, Failure, Outcome, RawFields, ScriptRequest, Werk } from '../lib/page/index.ts';
import {
  change,
  deleteWerk,
  editWerkPage,
  findWerk,
  formAgain,
  formDocument,
  personKey,
  readId,
  readWerk,
  rejectInvalid,
  resolveWerk,
  touched,
  updateWerk,
  werkKey,
  werkValues,
} from '../lib/page/index.ts';

export type { Werk } from '../lib/page/index.ts';
export { werkView as view } from '../lib/page/index.ts';

export async function GET({ query, db }: ScriptRequest): Promise<Document<Werk>> {
  return werkDocument(await resolveWerk(db, readId(query, 'id')));
}

export async function PUT(req: ScriptRequest): Promise<Outcome> {
  const id = readId(req.query, 'id');
  return change(
    req,
    { back: `/werk/${id}/bearbeiten` },
    async ({ requester, body }) => {
      await resolveWerk(req.db, id);
      const { input, errors } = readWerk(body);
      rejectInvalid(errors, 'The work was not changed');
      const werk = await updateWerk(req.db, { id, input, requester });
      return { then: `/werk/${id}`, document: werkDocument(werk), touched: touched.werk(id, werk.person.id) };
    },
    (failure) => showAgain(id, failure, Object.fromEntries(failure.fields)),
  );
}

export async function DELETE(req: ScriptRequest): Promise<Outcome> {
  const id = readId(req.query, 'id');
  return change(
    req,
    { back: `/werk/${id}/bearbeiten`, bodyless: true },
    async ({ requester }) => {
      const werk = await resolveWerk(req.db, id);
      const slug = await deleteWerk(req.db, { id, requester });
      return { then: `/person/${slug}`, touched: touched.werk(id, werk.person.id) };
    },
    async (failure) => {
      const werk = await findWerk(req.db, id);
      return showAgain(id, failure, werk ? werkValues(werk) : {});
    },
  );
}

function werkDocument(werk: Werk): Document<Werk> {
  const by = `${werk.art || 'A work'} by ${werk.person.vorname} ${werk.person.nachname}${werk.jahr === null ? '' : `, ${werk.jahr}`}`;
  return {
    path: `/werk/${werk.id}`,
    title: werk.titel,
    description: `${werk.titel}: ${by}.${werk.beschreibung ? ` ${werk.beschreibung}` : ''}`,
    data: werk,
    keys: [werkKey(werk.id), personKey(werk.person.id)],
  };
}

function showAgain(id: number, failure: Failure, values: RawFields): Document {
  return formDocument(
    editWerkPage(id, values.titel || 'the work', formAgain(failure, values)),
    `/werk/${id}/bearbeiten`,
    failure.status,
  );
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
  werkForm,
}) => [
  {
    path: '/werk/{id}',
    pathParams: [params.id],
    operations: {
      get: {
        summary: 'A work.',
        responses: { 200: ok('The work.', 'werk'), 304: notModified, ...problems('404', '410') },
      },
      put: {
        summary: 'Changes a work.',
        ...changing,
        requestBody: body('WerkInput', werkForm),
        responses: {
          200: ok('The work as changed.', 'werk'),
          303: seeOther,
          ...problems('400', '403', '404', '410', '415', '422'),
        },
      },
      delete: {
        summary: 'Deletes a work.',
        ...changing,
        responses: { 204: noContent, 303: seeOther, ...problems('403', '404', '409', '410') },
      },
    },
  },
];
