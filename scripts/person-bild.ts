// A person's picture: /person/<slug>/bild. GET shows the upload form to the person's own account
// and librarians; POST takes a JPEG, PNG or WebP (a form's file field, or the picture's bytes from
// an API client), stores it in the sizes the pages use, and points the person's image at it.
import type { ApiFragment, Document, FormPage, Outcome, ScriptRequest } from '../lib/page/index.ts';
import {
  changeWithUpload,
  keyPath,
  mayChangePerson,
  notYours,
  personView,
  readPersonKey,
  resolvePerson,
  setPersonImage,
  showForm,
  storePicture,
  touched,
} from '../lib/page/index.ts';

interface PicturePage extends FormPage {
  /** The current picture. */
  image: string;
  maxMegabytes: number;
}

export async function GET(req: ScriptRequest): Promise<Document<PicturePage>> {
  const person = await resolvePerson(req.db, readPersonKey(req.query, 'person-bild.php'), {
    method: 'GET',
    rest: '/bild',
  });
  const path = `/person/${person.slug}`;
  const name = `${person.vorname} ${person.nachname}`;
  const form = await showForm(req, `${path}/bild`, async ({ requester, csrfToken }) => {
    if (!(await mayChangePerson(req.db, requester, person.id))) throw notYours(name);
    return {
      heading: `Picture of ${name}`,
      action: `${path.slice(1)}/bild`,
      method: 'POST',
      submit: 'Upload',
      fields: [],
      csrfToken,
      message: null,
      login: null,
      cancel: { href: path.slice(1), label: 'Back to the person' },
      remove: null,
    };
  });
  const data = { ...form.data, image: person.image, maxMegabytes: Math.floor(req.pictures.maxBytes / 1024 / 1024) };
  return { ...form, data, view: { template: 'person-bild' } };
}

export async function POST(req: ScriptRequest): Promise<Outcome> {
  const key = readPersonKey(req.query, 'person-bild.php');
  return changeWithUpload(req, { back: `${keyPath(key)}/bild` }, async ({ requester, upload }) => {
    const current = await resolvePerson(req.db, key, { method: 'POST', rest: '/bild' });
    // Checked before the picture is processed; setPersonImage checks again on the locked row.
    if (!(await mayChangePerson(req.db, requester, current.id)))
      throw notYours(`${current.vorname} ${current.nachname}`);
    const image = await storePicture(req.db, upload, req.pictures);
    const person = await setPersonImage(req.db, { id: current.id, image, requester });
    const path = `/person/${person.slug}`;
    return {
      then: path,
      document: { path, title: `${person.vorname} ${person.nachname}`, data: person, view: personView },
      touched: touched.picture(person.id),
    };
  });
}

/** Its addresses in /openapi.json (lib/page/api-description.ts). */
export const api: ApiFragment = ({ params, ok, problems, changing, seeOther, permanentRedirect, form }) => [
  {
    path: '/person/{person}/bild',
    pathParams: [params.person],
    operations: {
      ...form('uploads a picture of a person', 'person'),
      post: {
        summary:
          "Sets the person's picture (the person's own account and librarians): a JPEG, PNG or WebP, stored in 160 and 480 pixels square as WebP under a content-hash name; image then names the larger one.",
        ...changing,
        requestBody: {
          required: true,
          content: {
            'multipart/form-data': {
              schema: {
                type: 'object',
                required: ['bild'],
                properties: { bild: { type: 'string', contentMediaType: 'image/*' }, csrf_token: { type: 'string' } },
              },
            },
            ...Object.fromEntries(
              ['image/jpeg', 'image/png', 'image/webp'].map((type) => [
                type,
                { schema: { type: 'string', contentMediaType: type } },
              ]),
            ),
          },
        },
        responses: {
          200: ok('The person with the new picture.', 'person'),
          303: seeOther,
          308: permanentRedirect,
          ...problems('400', '403', '404', '410', '413', '415', '422', '503'),
        },
      },
    },
  },
];
