// The method a request runs as: HTML forms cannot send PUT or DELETE, so a POST may name
// them in a hidden _method field or, for API clients behind restrictive proxies, in the
// X-HTTP-Method-Override header (docs/interface.md, Changing data). Only a POST is overridden.
import type { IncomingMessage } from 'node:http';
import type { BodyReader } from './body.ts';
import { bodyTypeOf } from './body.ts';
import { HttpError } from './http-error.ts';

const overridable = ['PUT', 'DELETE'];

/** The effective method; reads a form body for its _method only when there is one to read. */
export async function effectiveMethod(req: IncomingMessage, readBody: BodyReader): Promise<string> {
  const method = req.method ?? 'GET';
  if (method !== 'POST') return method;
  const header = req.headers['x-http-method-override'];
  if (header !== undefined) return checkOverride(String(header), 'The X-HTTP-Method-Override header');
  if (bodyTypeOf(req.headers) !== 'form') return method;
  const body = await readBody(['form']);
  const field = body.fields.get('_method');
  return field === null || field === '' ? method : checkOverride(field, 'The form field _method');
}

/** The methods a request may run as, known before its body is read: its own, and PUT and DELETE for a POST that may name them. */
export function possibleMethods(req: IncomingMessage): string[] {
  const method = req.method ?? 'GET';
  const mayOverride =
    method === 'POST' && (req.headers['x-http-method-override'] !== undefined || bodyTypeOf(req.headers) === 'form');
  return mayOverride ? [method, ...overridable] : [method];
}

function checkOverride(value: string, where: string): string {
  const method = value.trim().toUpperCase();
  if (method === 'POST' || overridable.includes(method)) return method;
  throw new HttpError(400, `${where} may name ${overridable.join(' or ')}, not "${value.slice(0, 20)}".`);
}
