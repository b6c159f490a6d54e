// Who may change what, checked before anything is written (CONTRACT 5): a logged-in user
// changes the person linked to their account and its works, a librarian everything. A change
// made with the session cookie needs the session's CSRF token; one made with Basic
// credentials must be JSON or XML, so no form on another site can use a browser's stored ones.
import type { Identity } from './auth.ts';
import type { Body } from './body.ts';
import { hasBody } from './body.ts';
import type { Queryable } from './db.ts';
import { HttpError } from './http-error.ts';
import type { ScriptRequest } from './script.ts';

export interface Change {
  requester: Identity;
  /** null for a request without a body (a DELETE from an API client). */
  body: Body | null;
}

export interface ChangeOptions {
  /** The page a login should lead back to, e.g. the edit form. */
  back: string;
  /** A DELETE needs no body; a form sends one for its _method and token. */
  bodyRequired: boolean;
}

/** Reads the body and the requester and checks the token; throws 400, 403 or 415 with nothing changed. */
export async function beginChange(req: ScriptRequest, options: ChangeOptions): Promise<Change> {
  const body = options.bodyRequired || hasBody(req.headers) ? await req.body(['form', 'json', 'xml']) : null;
  const requester = await req.identify();
  if (!requester) {
    const why = (await req.session.expired())
      ? 'Your session has expired; log in again and repeat the change.'
      : 'Log in to change this: with the login form, or with HTTP Basic credentials and a JSON or XML body.';
    throw new HttpError(403, why, { login: options.back });
  }
  if (requester.via === 'basic' && body?.type === 'form') {
    throw new HttpError(415, 'With HTTP Basic credentials send the body as application/json or application/xml; HTML forms need a login session and its CSRF token.');
  }
  if (requester.via === 'session') {
    const header = req.headers['x-csrf-token'];
    const token = (body?.type === 'form' ? body.fields.get('csrf_token') : null) ?? (typeof header === 'string' ? header : null);
    if (!(await req.session.checkCsrf(token))) {
      throw new HttpError(403, 'The CSRF token is missing or wrong: the form has expired or did not come from this site. Reload the form and send it again (API clients: send the token in X-CSRF-Token).');
    }
  }
  return { requester, body };
}

/** Librarians change every person; a user only the person of their account. */
export async function mayChangePerson(db: Queryable, requester: Identity, personId: number): Promise<boolean> {
  if (requester.role === 'librarian') return true;
  const rows = await db.query(
    'SELECT 1 FROM account a JOIN person p ON p.username = a.person_username WHERE a.id = $1 AND p.id = $2',
    [requester.id, personId],
  );
  return rows.length > 0;
}

export function notYours(what: string, back: string): HttpError {
  return new HttpError(403, `You may change only your own person and its works, not ${what}; a librarian may change everything.`, { login: back });
}

export function librariansOnly(what: string, back: string): HttpError {
  return new HttpError(403, `Only a librarian may ${what}.`, { login: back });
}

/** The PostgreSQL error of a failed statement: its SQLSTATE and the constraint that refused it. */
export function databaseErrorOf(err: unknown): { code: string; constraint: string | null } | null {
  if (!(err instanceof Error)) return null;
  const { code, constraint } = err as { code?: unknown; constraint?: unknown };
  return typeof code === 'string' ? { code, constraint: typeof constraint === 'string' ? constraint : null } : null;
}
