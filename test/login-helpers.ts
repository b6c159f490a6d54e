// Test support for pages behind a login: logging in through the real form (GET /login for
// the CSRF token and its session, then POST), Basic credentials, and the demo accounts.

/** The demo accounts of sql/demo-accounts.sql with their documented demo passwords. */
export const demo = {
  bibliothek: { id: 1, password: 'bibliothek-demo' },
  mmuster: { id: 2, password: 'mmuster-demo' },
  jmueller: { id: 3, password: 'jmueller-demo' },
  aschaefer: { id: 4, password: 'aschaefer-demo' },
} as const;

export type DemoUser = keyof typeof demo;

export interface LoginForm {
  /** `portfolio_session=…`, for a Cookie header. */
  cookie: string;
  csrfToken: string;
  html: string;
}

/** GET /login: the anonymous session's cookie and the CSRF token in the form. */
export async function openLoginForm(origin: string, cookie?: string): Promise<LoginForm> {
  const res = await fetch(`${origin}/login`, { headers: cookie ? { cookie } : {} });
  const html = await res.text();
  const csrfToken = /name="csrf_token" value="([^"]+)"/.exec(html)?.[1];
  if (!csrfToken) throw new Error(`GET /login answered ${res.status} without a CSRF token:\n${html}`);
  return { cookie: cookieOf(res) ?? cookie ?? '', csrfToken, html };
}

export function postForm(
  origin: string,
  path: string,
  fields: Record<string, string>,
  headers: Record<string, string> = {},
): Promise<Response> {
  return fetch(origin + path, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams(fields).toString(),
  });
}

/** Logs in through the form and returns the new session's cookie. */
export async function logIn(origin: string, username: string, password: string): Promise<string> {
  const form = await openLoginForm(origin);
  const res = await postForm(
    origin,
    '/login',
    { username, password, csrf_token: form.csrfToken },
    { cookie: form.cookie },
  );
  const cookie = cookieOf(res);
  if (res.status !== 303 || !cookie)
    throw new Error(`logging in as ${username} answered ${res.status}: ${await res.text()}`);
  return cookie;
}

export function logInAs(origin: string, user: DemoUser): Promise<string> {
  return logIn(origin, user, demo[user].password);
}

export function basic(username: string, password: string): string {
  return `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`;
}

/** `name=value` of the response's Set-Cookie, or null. */
export function cookieOf(res: Response): string | null {
  const header = res.headers.get('set-cookie');
  return header ? (header.split(';')[0] as string) : null;
}

/** The cookie's value alone. */
export function tokenOf(cookie: string): string {
  return cookie.slice(cookie.indexOf('=') + 1);
}
