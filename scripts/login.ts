// The login page: GET /login shows the form (with a signed token in a cookie and in the form, so
// no other site can log a browser into an account of its choosing, and no session row is made for
// someone who only looks); POST /login checks the user name and password, starts a session and
// sends the browser back where it came from.
import type { ApiFragment, Document, LinkFn, ScriptRequest, View } from '../lib/page/index.ts';
import { Redirect } from '../lib/page/index.ts';

export interface LoginPage {
  /** Who is logged in already, or null: then the form is shown. */
  user: { id: number; username: string; role: string; via: 'session' | 'basic' } | null;
  csrfToken: string | null;
  /** Where a successful login leads, a local path. */
  back: string | null;
  username: string;
  message: string | null;
}

const failedMessage = 'Unknown user name or wrong password.';
const maxBackLength = 1024;

/** Logging in is a change anyone may send. */
export const anonymous = true;

export async function GET(req: ScriptRequest): Promise<Document<LoginPage>> {
  const back = localPath(req.query.get('back'));
  const requester = await req.identify();
  if (requester) {
    return page({
      user: { id: requester.id, username: requester.username, role: requester.role, via: requester.via },
      csrfToken: null,
      back,
      username: '',
      message: null,
    });
  }
  const expired = await req.session.expired();
  const message = expired
    ? 'Your session has expired; please log in again.'
    : req.query.has('logged_out')
      ? 'You have logged out.'
      : null;
  return page({ user: null, csrfToken: await req.session.loginToken(), back, username: '', message });
}

export async function POST(req: ScriptRequest): Promise<Document<LoginPage>> {
  const { fields } = await req.body(['form']);
  const username = fields.get('username') ?? '';
  const password = fields.get('password') ?? '';
  const back = localPath(fields.get('back'));

  // The login form's token; or, logging in as someone else, the live session's CSRF token.
  const token = fields.get('csrf_token');
  if (!(await req.session.checkLoginToken(token)) && !(await req.session.checkCsrf(token))) {
    // A stale or missing token: the form may have waited past the time-out, or came from elsewhere.
    const message = 'The login form has expired or did not come from this site; please log in again.';
    return page({ user: null, csrfToken: await req.session.loginToken(), back, username, message }, 403);
  }
  if (username.trim() === '' || password === '') {
    return page(
      {
        user: null,
        csrfToken: await req.session.loginToken(),
        back,
        username,
        message: 'Enter your user name and your password.',
      },
      422,
    );
  }
  // The same answer, after the same time, for an unknown user and a wrong password.
  const account = await req.authenticate(username, password);
  if (!account)
    return page({ user: null, csrfToken: await req.session.loginToken(), back, username, message: failedMessage }, 403);

  await req.session.start(account);
  throw new Redirect(back ?? `/entlehnte/${account.id}`, 303);
}

function page(data: LoginPage, status = 200): Document<LoginPage> {
  return { path: '/login', title: data.user ? `Logged in as ${data.user.username}` : 'Log in', data, status };
}

/**
 * A path on this site to return to after the login; anything else (//evil.example, https://…) is
 * dropped, and so is one over 1,024 characters as a URL writes it, which would make a Location
 * longer than a redirect may carry (docs/robustness.md, Response headers).
 */
export function localPath(raw: string | null): string | null {
  if (!raw || raw.length > maxBackLength || !raw.startsWith('/') || /^\/[/\\]|[\x00-\x1f\x7f\\]/.test(raw)) return null;
  let url: URL;
  try {
    url = new URL(raw, 'http://site.invalid');
  } catch {
    return null;
  }
  const back = url.pathname + url.search;
  if (
    url.origin !== 'http://site.invalid' ||
    url.pathname === '/login' ||
    url.pathname === '/logout' ||
    back.length > maxBackLength
  )
    return null;
  return back;
}

/** For API clients: who the credentials identify, with their loan list. */
function toJson(data: LoginPage, link: LinkFn) {
  return {
    angemeldet: data.user && {
      name: data.user.username,
      rolle: data.user.role,
      entlehnte: link(`/entlehnte/${data.user.id}`),
    },
    login: link('/login'),
    meldung: data.message,
  };
}

/** Its addresses in /openapi.json (lib/page/api-description.ts). */
export const api: ApiFragment = ({ params, ok, problems, seeOther, maybe }) => [
  {
    path: '/login',
    query: [params.back],
    operations: {
      get: {
        summary: 'The login form; for an API client, whom its credentials identify.',
        security: maybe,
        responses: { 200: ok('The login form, or in JSON whom the credentials identify.', 'login', 'json') },
      },
      post: {
        summary: "Logs in with the form's token: a session cookie.",
        requestBody: {
          required: true,
          content: {
            'application/x-www-form-urlencoded': {
              schema: {
                type: 'object',
                required: ['username', 'password', 'csrf_token'],
                properties: {
                  username: { type: 'string' },
                  password: { type: 'string' },
                  csrf_token: { type: 'string' },
                  back: { type: 'string' },
                },
              },
            },
          },
        },
        responses: { 303: seeOther, ...problems('400', '403', '429', '503') },
      },
    },
  },
];

export const view: View = { template: 'login', toJson };
