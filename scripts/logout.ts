// POST /logout ends the login session: the log-out button in the page header posts here with
// the session's CSRF token, so no other site can log a browser out. There is no GET.
import type { ApiFragment, Document, ScriptRequest } from '../lib/page/index.ts';
import { HttpError, Redirect } from '../lib/page/index.ts';

/** A stale session's cookie is cleared for anyone, logged in or not. */
export const anonymous = true;

export async function POST(req: ScriptRequest): Promise<Document> {
  const { fields } = await req.body(['form']);
  const requester = await req.identify();
  if (requester?.via === 'session' && !(await req.session.checkCsrf(fields.get('csrf_token')))) {
    throw new HttpError(
      403,
      'The log-out request did not carry this session\'s token; use the "Log out" button of a page of this site.',
    );
  }
  // Without a live session there is nothing to end; the stale cookie is cleared all the same.
  await req.session.end();
  throw new Redirect('/login?logged_out=1', 303);
}

/** Its addresses in /openapi.json (lib/page/api-description.ts). */
export const api: ApiFragment = ({ problems, seeOther }) => [
  {
    path: '/logout',
    operations: {
      post: {
        summary: 'Ends the session.',
        security: [{ session: [], csrf: [] }],
        requestBody: {
          required: true,
          content: {
            'application/x-www-form-urlencoded': {
              schema: { type: 'object', properties: { csrf_token: { type: 'string' } } },
            },
          },
        },
        responses: { 303: seeOther, ...problems('403') },
      },
    },
  },
];
