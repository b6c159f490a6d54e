// The HTML forms that change data (edit a person, add a work, lend …) as plain data for
// templates/form.ejs, and the rule that a form which fails comes back with the user's input
// filled in and the messages beside the fields: nothing typed is lost.
import type { Identity } from '../auth/index.ts';
import type { FieldError } from '../http/index.ts';
import { bodyTypeOf, HttpError } from '../http/index.ts';
import type { RawFields } from './input.ts';
import type { Document, ScriptRequest } from './script-request.ts';
import { loginLink, requireLogin, withLogin } from './script-request.ts';

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
  /** Works to pick, suggested by public/js/site.js as the field is typed in (a datalist). */
  suggest?: 'werk';
}

export interface FormPage {
  heading: string;
  /** Where the form posts, relative to <base href>: person/max-muster. */
  action: string;
  /** PUT and DELETE travel as a hidden _method. */
  method: 'POST' | 'PUT' | 'DELETE';
  /** What the form does, above it: a confirmation page says what will be deleted. */
  lead?: string;
  submit: string;
  fields: FormField[];
  csrfToken: string | null;
  /** A notice above the form: why it came back. */
  message: string | null;
  /** login?back=… when the requester must log in (again) first. */
  login: string | null;
  cancel: { href: string; label: string };
  /** An edit form's link to the page that confirms the delete (person/max-muster/loeschen). */
  remove: { href: string; label: string } | null;
}

/** What a form shows besides its fields' definitions: the values, the messages, the token. */
export interface FormState {
  values: RawFields;
  errors: readonly FieldError[];
  csrfToken: string | null;
  message: string | null;
  login: string | null;
}

/** What a failed submission brings back to its form: the fields as typed, and why. */
export interface Failure extends Omit<FormState, 'values' | 'message'> {
  status: number;
  message: string;
  fields: URLSearchParams;
}

// The statuses a form answers by showing itself again; anything else gets the error page.
const formStatuses = new Set([403, 409, 422]);

/** A browser's form submission that failed in a way its form can show; null for anything else. */
export async function failureOf(req: ScriptRequest, err: unknown): Promise<Failure | null> {
  if (
    !(err instanceof HttpError) ||
    !formStatuses.has(err.status) ||
    req.format !== 'html' ||
    bodyTypeOf(req.headers) !== 'form'
  )
    return null;
  const { fields } = await req.body(['form']);
  const requester = await req.identify();
  const csrfToken = requester?.via === 'session' ? await req.session.csrfToken() : null;
  const login = requester ? null : loginLink(err.options.login ?? null);
  return { status: err.status, message: err.message, errors: err.options.errors ?? [], fields, csrfToken, login };
}

/** A field of a form, filled from its state: the value (stored or just typed) and its message. */
export function fieldOf(
  state: Pick<FormState, 'values' | 'errors'>,
  spec: Omit<FormField, 'value' | 'error'>,
): FormField {
  const { hint, suggest, ...field } = spec;
  const error = state.errors.find((e) => e.field === spec.name)?.message ?? null;
  return {
    ...field,
    value: state.values[spec.name] ?? '',
    error,
    ...(hint ? { hint } : {}),
    ...(suggest ? { suggest } : {}),
  };
}

/** What every form page takes from its state besides the fields. */
export function stateOf(state: FormState): Pick<FormPage, 'csrfToken' | 'message' | 'login'> {
  return { csrfToken: state.csrfToken, message: state.message, login: state.login };
}

/** A form page document at path: never cached, answered with the status of its failure. */
export function formDocument(page: FormPage, path: string, status?: number): Document<FormPage> {
  return {
    path,
    title: page.heading,
    data: page,
    private: true,
    view: { template: 'form' },
    ...(status ? { status } : {}),
  };
}

/** The state of a form that opens empty, or with the stored values. */
export function freshForm(values: RawFields, csrfToken: string): FormState {
  return { values, errors: [], csrfToken, message: null, login: null };
}

/** The state of a form shown again after a failure, with the values given. */
export function formAgain(failure: Failure, values: RawFields): FormState {
  return {
    values,
    errors: failure.errors,
    csrfToken: failure.csrfToken,
    message: failure.message,
    login: failure.login,
  };
}

/**
 * A form page at `path`. Public pages link to the forms without knowing who is looking, so here
 * is where that is checked: anyone anonymous, or with Basic credentials, gets 403 with a login
 * link back to the form, and so does a refusal of `build` (not yours, librarians only).
 */
export async function showForm(
  req: ScriptRequest,
  path: string,
  build: (opened: { requester: Identity; csrfToken: string }) => Promise<FormPage>,
): Promise<Document<FormPage>> {
  const requester = await requireLogin(req, path, {
    anonymous: 'Log in to change data.',
    expired: 'Your session has expired; log in again to change data.',
  });
  if (requester.via === 'basic') {
    throw new HttpError(
      403,
      'The forms need a login session: log in with the login form. With HTTP Basic credentials, send JSON or XML to the resource itself.',
      { login: path },
    );
  }
  const csrfToken = await req.session.csrfToken();
  const page = await build({ requester, csrfToken }).catch((err: unknown) => {
    throw withLogin(err, path);
  });
  return formDocument(page, path);
}
