// Reads the fields of a request body, whichever of the three shapes it came in: an HTML form,
// a JSON object or an XML document shaped like the representation. Each field comes out as
// text (null when absent), or as a message saying what is wrong with it.
import type { Body, FieldError, XmlElement } from '../http/index.ts';
import { controlCharacters, HttpError } from '../http/index.ts';

interface FieldSpec {
  /** The field's name in forms and in error messages. */
  name: string;
  /** Its key in JSON, when not the name. */
  json?: string;
  /** Where XML holds it: a child element (default: the name) or an attribute of that element or of the root. */
  xml?: { element?: string; attribute?: string };
}

export interface Shape {
  /** The XML root element, e.g. person. */
  root: string;
  fields: readonly FieldSpec[];
}

export type RawFields = Record<string, string | null>;

export function readFields(body: Body, shape: Shape): { raw: RawFields; errors: FieldError[] } {
  const raw: RawFields = {};
  const errors: FieldError[] = [];
  if (body.type === 'json' && (typeof body.value !== 'object' || body.value === null || Array.isArray(body.value))) {
    throw notShaped(shape, 'Send one JSON object in the shape of the representation.');
  }
  if (body.type === 'xml' && body.root !== shape.root)
    throw notShaped(shape, `The root element must be <${shape.root}>, not <${body.root.slice(0, 40)}>.`);
  for (const spec of shape.fields) {
    const value =
      body.type === 'form'
        ? body.fields.get(spec.name)
        : body.type === 'json'
          ? jsonField(body.value as Record<string, unknown>, spec)
          : xmlField(body.value, spec);
    if (typeof value === 'object' && value !== null) errors.push({ field: spec.name, message: value.problem });
    else raw[spec.name] = value;
  }
  return { raw, errors };
}

/** 422: well-formed, but not the shape of the representation, so no field can be read. */
function notShaped(shape: Shape, message: string): HttpError {
  return new HttpError(422, `The body is not shaped like a ${shape.root}: ${message}`, {
    errors: [{ field: shape.root, message }],
  });
}

function jsonField(object: Record<string, unknown>, spec: FieldSpec): string | null | { problem: string } {
  const value = object[spec.json ?? spec.name];
  if (value === undefined) return null;
  if (value === null) return '';
  if (typeof value === 'string') return value;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  return { problem: `Must be a string, not ${Array.isArray(value) ? 'an array' : typeof value}.` };
}

function xmlField(root: XmlElement, spec: FieldSpec): string | null | { problem: string } {
  const { element = spec.name, attribute } = spec.xml ?? {};
  const node = element === '' ? root : typeof root === 'string' ? undefined : root[element];
  if (node === undefined) return null;
  if (Array.isArray(node)) return { problem: `The element <${element}> appears more than once.` };
  if (attribute) return typeof node === 'string' ? null : textOf(node[`@_${attribute}`]);
  if (typeof node === 'string') return node;
  return textOf(node['#text']) ?? '';
}

function textOf(node: XmlElement | XmlElement[] | undefined): string | null {
  return typeof node === 'string' ? node : null;
}

interface TextRule {
  field: string;
  max: number;
  required: boolean;
  /** Line breaks allowed (a description); otherwise they are refused. */
  multiline?: boolean;
}

/** The trimmed text, or '' with a message in errors when it breaks the rule. */
export function checkText(value: string | null, rule: TextRule, errors: FieldError[]): string {
  const text = (value ?? '').trim();
  if (rule.required && text === '') errors.push({ field: rule.field, message: 'Required: it must not be empty.' });
  else if ([...text].length > rule.max)
    errors.push({ field: rule.field, message: `At most ${rule.max} characters, not ${[...text].length}.` });
  else if (controlCharacters.test(text) || (!rule.multiline && /[\r\n\t]/.test(text))) {
    errors.push({
      field: rule.field,
      message: rule.multiline ? 'Must not contain control characters.' : 'Must be one line without control characters.',
    });
  } else return rule.multiline ? text.replace(/\r\n?/g, '\n') : text;
  return '';
}

/** Throws 422 with one message per field when there are any. */
export function rejectInvalid(errors: readonly FieldError[], what: string): void {
  if (errors.length === 0) return;
  const count = errors.length === 1 ? 'one field is' : `${errors.length} fields are`;
  throw new HttpError(422, `${what}: ${count} invalid.`, { errors });
}
