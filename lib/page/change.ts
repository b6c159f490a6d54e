// Who may change what, and the one way a change runs (docs/interface.md, Changing data): the
// requester must be logged in; a change made with the session cookie needs the session's CSRF
// token; one made with Basic credentials must be JSON or XML, so no form on another site can use
// a browser's stored credentials. A form gets 303 to the result, an API client the document.
import type { IncomingMessage } from 'node:http';
import type { Identity, Requester } from '../auth/index.ts';
import type { Queryable } from '../db/index.ts';
import type { Body, Target, Upload } from '../http/index.ts';
import { bodyTypeOf, hasBody, HttpError, NoContent, Redirect, refererPath, refuseCrossSite } from '../http/index.ts';
import type { Failure } from './form.ts';
import { failureOf } from './form.ts';
import type { Document, Outcome, ScriptModule, ScriptRequest } from './script-request.ts';
import { requireLogin, withLogin } from './script-request.ts';

interface ChangeOptions {
  /** The page a login leads back to: the form of the change, e.g. /person/max-muster/bearbeiten. */
  back: string;
  /** A DELETE may come without a body (API clients); a form sends one for its _method and token. */
  bodyless?: boolean;
}

const loginFirst = {
  anonymous: 'Log in to change this: with the login form, or with HTTP Basic credentials and a JSON or XML body.',
  expired: 'Your session has expired; log in again and repeat the change.',
};

/**
 * The form of someone whose session timed out, read only to be shown again: the largest a form
 * of the site sends (a work with a description of 10,000 characters, each percent-encoded) is
 * about 120 KB. Whoever sends a cookie that names no session gets this far, so it is kept small.
 */
const formAgainBytes = 128 * 1024;

/**
 * The front's check of a POST, PUT or DELETE before its body is read: one sent from another site,
 * or by someone who is not logged in, is 403, with a login link back to the page it was sent
 * from, else to the resource. Let through: scripts that take changes from anyone (the login
 * form), and a form whose session has timed out, which its script shows again filled in. The
 * answer is the largest body the request may send, where that is less than every body's bound.
 */
export async function admitChange(
  req: IncomingMessage,
  target: Target,
  requester: Requester,
  script: ScriptModule,
): Promise<number | undefined> {
  refuseCrossSite(req, target);
  if (script.anonymous || (await requester.identify())) return undefined;
  const expired = await requester.session.expired();
  if (expired && bodyTypeOf(req.headers) === 'form') return formAgainBytes;
  throw new HttpError(403, expired ? loginFirst.expired : loginFirst.anonymous, {
    login: refererPath(req, target) ?? target.bare,
  });
}

/** What a change did: where a browser's form goes next, and what an API client gets. */
interface Changed {
  /** The site path a form answers 303 to. */
  then: string;
  /** The changed resource (200, or 201 with status and location), or none: 204. */
  document?: Document;
  /** The surrogate keys of the public documents it changed (cache-keys.ts, touched), purged once it has committed. */
  touched: string[];
}

type FormAgain = (failure: Failure) => Document | Promise<Document>;

/**
 * Runs a change: the requester and the body are checked first (400, 403 or 415, nothing changed),
 * the requester before the body is read, then `run`; a 403 for anyone anonymous, or from `run`, offers the login link to `back`. When a
 * browser's form fails validation, authorization or a conflict, `formAgain` shows the form again
 * with what was typed.
 */
export async function change(
  req: ScriptRequest,
  options: ChangeOptions & { bodyless?: false },
  run: (c: { requester: Identity; body: Body }) => Promise<Changed>,
  formAgain?: FormAgain,
): Promise<Outcome>;
export async function change(
  req: ScriptRequest,
  options: ChangeOptions & { bodyless: true },
  run: (c: { requester: Identity }) => Promise<Changed>,
  formAgain?: FormAgain,
): Promise<Outcome>;
export async function change(
  req: ScriptRequest,
  options: ChangeOptions,
  run: (c: { requester: Identity; body: Body }) => Promise<Changed>,
  formAgain?: FormAgain,
): Promise<Outcome> {
  try {
    const requester = await loggedIn(req, options.back);
    const body = options.bodyless && !hasBody(req.headers) ? null : await req.body(['form', 'json', 'xml']);
    await beginChange(req, requester, body);
    // A refusal of the change itself (not yours, librarians only) offers to log in as someone who may.
    const { then, document, touched } = await run({ requester, body: body as Body }).catch((err: unknown) => {
      throw withLogin(err, options.back);
    });
    // Before the answer: whoever reads the page next, through any cache, sees the change.
    await req.purge(touched);
    if (body?.type === 'form') throw new Redirect(then, 303);
    return document ? { ...document, private: true } : new NoContent();
  } catch (err) {
    const failure = formAgain ? await failureOf(req, err) : null;
    if (formAgain && failure) return formAgain(failure);
    throw err;
  }
}

/**
 * Runs a change that brings a file (a picture): like change, but the body is an upload. Who is
 * asking is checked before a byte is read, the CSRF token once the form's fields are in; the
 * temporary file is removed afterwards, whatever happened. A browser gets 303, an API client the document.
 */
export async function changeWithUpload(
  req: ScriptRequest,
  options: Pick<ChangeOptions, 'back'>,
  run: (c: { requester: Identity; upload: Upload }) => Promise<Changed>,
): Promise<Outcome> {
  const requester = await loggedIn(req, options.back);
  const upload = await req.upload();
  try {
    if (requester.via === 'basic' && upload.form) {
      throw new HttpError(
        415,
        'With HTTP Basic credentials send the picture itself as image/jpeg, image/png or image/webp; HTML forms need a login session and its CSRF token.',
      );
    }
    await checkToken(req, requester, upload.form ? upload.fields : null);
    const { then, document, touched } = await run({ requester, upload }).catch((err: unknown) => {
      throw withLogin(err, options.back);
    });
    await req.purge(touched);
    if (req.format === 'html') throw new Redirect(then, 303);
    return document ? { ...document, private: true } : new NoContent();
  } finally {
    await upload.discard();
  }
}

async function beginChange(req: ScriptRequest, requester: Identity, body: Body | null): Promise<void> {
  if (requester.via === 'basic' && body?.type === 'form') {
    throw new HttpError(
      415,
      'With HTTP Basic credentials send the body as application/json or application/xml; HTML forms need a login session and its CSRF token.',
    );
  }
  await checkToken(req, requester, body?.type === 'form' ? body.fields : null);
}

function loggedIn(req: ScriptRequest, back: string): Promise<Identity> {
  return requireLogin(req, back, loginFirst);
}

/** A change with the session cookie carries the session's CSRF token: the form field csrf_token, or the header X-CSRF-Token. */
async function checkToken(req: ScriptRequest, requester: Identity, fields: URLSearchParams | null): Promise<void> {
  if (requester.via !== 'session') return;
  const header = req.headers['x-csrf-token'];
  const token = fields?.get('csrf_token') ?? (typeof header === 'string' ? header : null);
  if (!(await req.session.checkCsrf(token))) {
    throw new HttpError(
      403,
      'The CSRF token is missing or wrong: the form has expired or did not come from this site. Reload the form and send it again (API clients: send the token in X-CSRF-Token).',
    );
  }
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

export function notYours(what: string): HttpError {
  return new HttpError(
    403,
    `You may change only your own person and its works, not ${what}; a librarian may change everything.`,
  );
}

export function librariansOnly(what: string): HttpError {
  return new HttpError(403, `Only a librarian may ${what}.`);
}

/** The PostgreSQL error of a failed statement: its SQLSTATE and the constraint that refused it. */
export function databaseErrorOf(err: unknown): { code: string; constraint: string | null } | null {
  if (!(err instanceof Error)) return null;
  const { code, constraint } = err as { code?: unknown; constraint?: unknown };
  return typeof code === 'string' ? { code, constraint: typeof constraint === 'string' ? constraint : null } : null;
}
