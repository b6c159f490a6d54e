// Who is looking: /me.json, private and never stored. Public documents are the same bytes for
// everyone, so their page header and their Edit, Add, Delete and New controls are filled in by
// public/js/site.js from this answer (docs/interface.md, Who is looking).
import type { ApiFragment, Document, LinkFn, ScriptRequest, View } from '../lib/page/index.ts';

/** JSON only: a small answer for the pages' script and for API clients. */
export const only = { format: 'json', type: 'application/json; charset=utf-8' } as const;

export interface Me {
  user: { id: number; username: string; role: string; person: string | null; csrfToken: string | null } | null;
}

export async function GET(req: ScriptRequest): Promise<Document<Me>> {
  const requester = await req.identify();
  const user = requester && {
    id: requester.id,
    username: requester.username,
    role: requester.role,
    person: requester.person?.slug ?? null,
    // The log-out button's token; Basic credentials have no session to end.
    csrfToken: requester.via === 'session' ? await req.session.csrfToken() : null,
  };
  return {
    path: '/me',
    title: user ? `Logged in as ${user.username}` : 'Not logged in',
    data: { user },
    private: true,
  };
}

function toJson({ user }: Me, link: LinkFn) {
  return {
    angemeldet: user && {
      name: user.username,
      rolle: user.role,
      entlehnte: link(`/entlehnte/${user.id}`),
      person: user.person && link(`/person/${user.person}`),
      csrf_token: user.csrfToken,
    },
    login: link('/login'),
  };
}

/** Its addresses in /openapi.json (lib/page/api-description.ts). */
export const api: ApiFragment = ({ schema, maybe }) => [
  {
    path: '/me',
    operations: {
      get: {
        summary:
          "Whom the credentials identify, for the pages' script; private, never stored. Usually asked for as /me.json.",
        security: maybe,
        responses: {
          200: {
            description: 'Who is looking, or angemeldet null.',
            content: { 'application/json': { schema: schema('me') } },
          },
        },
      },
    },
  },
];

export const view: View = { template: 'me', toJson };
