// An error as the client reads it, in the negotiated representation: an HTML page, or RFC 9457
// problem details in JSON or XML (docs/interface.md, Errors). A database that is away is 503
// with Retry-After, a value it cannot hold 400.
import http from 'node:http';
import { DbInputError, DbUnavailableError } from '../db/index.ts';
import type { Format, Viewer } from '../http/index.ts';
import { HttpError, mediaTypes } from '../http/index.ts';
import { loginLink } from '../page/index.ts';
import { buildJson, buildXml } from './document.ts';
import type { Templates } from './templates.ts';

/** The HttpError an error is answered with; null for one that is the server's fault (500). */
export function problemOf(err: unknown): HttpError | null {
  if (err instanceof HttpError) return err;
  if (err instanceof DbUnavailableError) {
    return new HttpError(503, 'The database is not available at the moment; please try again shortly.', {
      headers: { 'retry-after': '5' },
      cause: err,
    });
  }
  if (err instanceof DbInputError) return new HttpError(400, err.message, { cause: err });
  return null;
}

interface ProblemPage {
  templates: Templates;
  /** <base href> of the HTML page. */
  base: string;
  /** Who the page header shows, when the request asked. */
  user: Viewer | null;
}

/** The status, headers and body of an error answer. */
export function renderProblem(
  err: HttpError,
  format: Format,
  page: ProblemPage,
): { headers: Record<string, string>; body: string } {
  const headers: Record<string, string> = { 'cache-control': 'no-store', ...err.options.headers };
  if (err.options.allow) headers.allow = err.options.allow.join(', ');
  const title = http.STATUS_CODES[err.status] ?? 'Error';
  const problem = { type: err.options.type ?? 'about:blank', title, status: err.status, detail: err.message };
  const errors = err.options.errors ?? [];
  if (format === 'json') {
    headers['content-type'] = 'application/problem+json; charset=utf-8';
    const body = buildJson({
      ...problem,
      ...(err.options.alternates ? { alternates: err.options.alternates } : {}),
      ...(errors.length > 0 ? { errors } : {}),
    });
    return { headers, body };
  }
  if (format === 'xml') {
    headers['content-type'] = 'application/problem+xml; charset=utf-8';
    const alternates = err.options.alternates?.map((a) => ({ '@_ref': a.href, '@_type': a.type }));
    const fields = errors.map((e) => ({ '@_field': e.field, '#text': e.message }));
    const body = buildXml({
      problem: {
        '@_xmlns': 'urn:ietf:rfc:7807',
        ...problem,
        ...(alternates ? { alternates: { alternate: alternates } } : {}),
        ...(fields.length > 0 ? { errors: { error: fields } } : {}),
      },
    });
    return { headers, body };
  }
  headers['content-type'] = mediaTypes.html;
  const body = page.templates.render('error', {
    page: {
      title: `${err.status} ${title}`,
      description: null,
      base: page.base,
      canonical: null,
      alternates: [],
      stylesheet: 'css/site.css',
      warnings: [],
      user: page.user,
    },
    data: {
      ...problem,
      alternates: err.options.alternates ?? [],
      errors,
      login: err.options.login ? loginLink(err.options.login) : null,
    },
  });
  return { headers, body };
}
