// Test support for changing data: bodies of persons, works and loans in JSON and XML (the
// shapes of the representations), requests with Basic credentials or a session and its
// CSRF token, and a look at the rows a change should or should not have touched.
import type { Db } from '../lib/db/index.ts';
import { basic, demo } from './login-helpers.ts';
import type { DemoUser } from './login-helpers.ts';

export type ApiFormat = 'json' | 'xml';

const xmlEscapes: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' };
export const escapeXml = (text: string) => text.replace(/[&<>"']/g, (c) => xmlEscapes[c] as string);

export const contentTypes: Record<ApiFormat, string> = { json: 'application/json', xml: 'application/xml' };

export function personBody(
  format: ApiFormat,
  person: { vorname: string; nachname: string; username?: string; image?: string },
): string {
  if (format === 'json') return JSON.stringify(person);
  return (
    `<?xml version="1.0" encoding="UTF-8"?>\n<person>\n  <image ref="${escapeXml(person.image ?? '')}"/>\n` +
    `  <vorname>${escapeXml(person.vorname)}</vorname>\n  <nachname>${escapeXml(person.nachname)}</nachname>\n` +
    (person.username === undefined ? '' : `  <username>${escapeXml(person.username)}</username>\n`) +
    '  <werke/>\n</person>\n'
  );
}

export function werkBody(
  format: ApiFormat,
  werk: { titel: string; jahr?: number | null; art?: string; beschreibung?: string },
): string {
  if (format === 'json') return JSON.stringify(werk);
  const jahr = werk.jahr === undefined ? '' : `  <jahr>${werk.jahr ?? ''}</jahr>\n`;
  return (
    `<werk>\n  <titel>${escapeXml(werk.titel)}</titel>\n${jahr}  <art>${escapeXml(werk.art ?? '')}</art>\n` +
    `  <beschreibung>${escapeXml(werk.beschreibung ?? '')}</beschreibung>\n</werk>\n`
  );
}

export function loanBody(format: ApiFormat, loan: { url: string; bis?: string }): string {
  if (format === 'json') return JSON.stringify(loan);
  return `<werk ref="${escapeXml(loan.url)}"${loan.bis ? ` bis="${loan.bis}"` : ''}/>`;
}

/** A request with Basic credentials of a demo account, the body in format, the answer in format. */
export function asUser(
  origin: string,
  user: DemoUser,
  options: { method: string; path: string; format: ApiFormat; body?: string; headers?: Record<string, string> },
): Promise<Response> {
  return fetch(origin + options.path, {
    method: options.method,
    redirect: 'manual',
    headers: {
      authorization: basic(user, demo[user].password),
      accept: contentTypes[options.format],
      ...(options.body === undefined ? {} : { 'content-type': contentTypes[options.format] }),
      ...options.headers,
    },
    ...(options.body === undefined ? {} : { body: options.body }),
  });
}

/** The CSRF token of a logged-in session, read from a form page it may open. */
export async function csrfTokenOf(origin: string, cookie: string, formPath: string): Promise<string> {
  const res = await fetch(origin + formPath, { headers: { cookie } });
  const html = await res.text();
  const token = /name="csrf_token" value="([^"]+)"/.exec(html)?.[1];
  if (!token) throw new Error(`${formPath} answered ${res.status} without a CSRF token:\n${html.slice(0, 2000)}`);
  return token;
}

/** The fields of a person as stored, to show that a refused change changed nothing. */
export async function personRow(db: Db, id: number): Promise<Record<string, unknown> | null> {
  const [row] = await db.query('SELECT slug, vorname, nachname, username, image FROM person WHERE id = $1', [id]);
  return row ?? null;
}
