// The HTML forms that change data (edit a person, add a work, lend …) as plain data for
// templates/partials/form.ejs, and the rule that a form which fails comes back with the
// user's input filled in and the messages beside the fields: nothing typed is lost.
import type { Identity } from './auth.ts';
import type { FieldError } from './http-error.ts';
import { HttpError } from './http-error.ts';
import { bodyTypeOf } from './body.ts';
import type { Document, Outcome, ScriptRequest } from './script.ts';

export interface FormField {
  name: string;
  label: string;
  type: 'text' | 'url' | 'number' | 'date' | 'textarea';
  value: string;
  required: boolean;
  maxlength: number;
  /** The message beside the field after a failed submission. */
  error: string | null;
  hint?: string;
}

export interface FormPage {
  heading: string;
  /** Where the form posts, relative to <base href>: person/max-muster. */
  action: string;
  /** PUT and DELETE travel as a hidden _method (CONTRACT 5). */
  method: 'POST' | 'PUT';
  submit: string;
  fields: FormField[];
  csrfToken: string | null;
  /** A notice above the form: why it came back. */
  message: string | null;
  /** login?back=… when the requester must log in (again) first. */
  login: string | null;
  cancel: { href: string; label: string };
  /** The delete button of an edit form, posting _method=DELETE. */
  remove: { action: string; label: string } | null;
}

/** What a failed submission brings back to its form. */
export interface Failure {
  status: number;
  message: string;
  errors: readonly FieldError[];
  fields: URLSearchParams;
  csrfToken: string | null;
  login: string | null;
}

// The statuses a form answers by showing itself again; anything else gets the error page.
const formStatuses = new Set([403, 409, 422]);

/**
 * Runs a change; when a browser's form submission fails validation, authorization or a
 * conflict, answers with the form again (same status) instead of an error page.
 */
export async function orFormAgain(
  req: ScriptRequest,
  change: () => Promise<Outcome>,
  formAgain: (failure: Failure) => Document | Promise<Document>,
): Promise<Outcome> {
  try {
    return await change();
  } catch (err) {
    if (!(err instanceof HttpError) || !formStatuses.has(err.status) || req.format !== 'html' || bodyTypeOf(req.headers) !== 'form') throw err;
    const { fields } = await req.body(['form']);
    const requester = await req.identify();
    const csrfToken = requester?.via === 'session' ? await req.session.csrfToken() : null;
    const login = requester ? null : loginLink(err.options.login ?? null);
    return formAgain({ status: err.status, message: err.message, errors: err.options.errors ?? [], fields, csrfToken, login });
  }
}

/** Throws 422 with one message per field when there are any. */
export function rejectInvalid(errors: readonly FieldError[], what: string): void {
  if (errors.length === 0) return;
  const count = errors.length === 1 ? 'one field is' : `${errors.length} fields are`;
  throw new HttpError(422, `${what}: ${count} invalid.`, { errors });
}

/** The message of one field, for the form. */
export function errorOf(errors: readonly FieldError[], field: string): string | null {
  return errors.find((e) => e.field === field)?.message ?? null;
}

export function loginLink(back: string | null): string {
  return back ? `login?back=${encodeURIComponent(back).replace(/%2F/g, '/')}` : 'login';
}

/** A form page document: never cached, answered with the status of its failure. */
export function formDocument(page: FormPage, options: { path: string; title: string; template: string; status?: number }): Document<FormPage> {
  return {
    path: options.path, title: options.title, data: page, cacheControl: 'private, no-store',
    view: { template: options.template }, ...(options.status ? { status: options.status } : {}),
  };
}

/**
 * The requester of a form page and the token the form carries. Public pages link to the forms
 * without knowing who is logged in (CONTRACT 4), so the form page is where that is checked.
 */
export async function openForm(req: ScriptRequest, back: string): Promise<{ requester: Identity; csrfToken: string }> {
  const requester = await req.identify();
  if (!requester) {
    const why = (await req.session.expired()) ? 'Your session has expired; log in again to change data.' : 'Log in to change data.';
    throw new HttpError(403, why, { login: back });
  }
  if (requester.via === 'basic') {
    throw new HttpError(403, 'The forms need a login session: log in with the login form. With HTTP Basic credentials, send JSON or XML to the resource itself.', { login: back });
  }
  return { requester, csrfToken: await req.session.csrfToken() };
}
