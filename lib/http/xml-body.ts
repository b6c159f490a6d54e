// Parses an XML request body safely: well-formedness checked first (400 with line and column),
// no DOCTYPE and no entity declarations at all (no expansion attacks, no external entities),
// and only XML's five predefined entities and character references decoded.
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { HttpError } from './http-error.ts';

/** An element as the parser gives it: text, or an object of attributes (@_name), children and #text. */
export type XmlElement = string | { [name: string]: XmlElement | XmlElement[] };

const parser = new XMLParser({
  ignoreAttributes: false,
  attributeNamePrefix: '@_',
  textNodeName: '#text',
  ignoreDeclaration: true,
  ignorePiTags: true,
  // Values stay strings ("007" is not 7); entities are decoded below, never expanded from a DTD.
  parseTagValue: false,
  parseAttributeValue: false,
  processEntities: false,
  trimValues: true,
});

const predefined: Record<string, string> = { lt: '<', gt: '>', amp: '&', quot: '"', apos: "'" };

export function parseXmlBody(text: string): { root: string; value: XmlElement } {
  if (/<!DOCTYPE|<!ENTITY/.test(text)) {
    throw new HttpError(400, 'The XML body contains a DOCTYPE or an entity declaration, which are not accepted; send the document without them.');
  }
  const valid = XMLValidator.validate(text);
  if (valid !== true) {
    throw new HttpError(400, `The XML body is not well-formed: ${valid.err.msg} (line ${valid.err.line}, column ${valid.err.col}).`);
  }
  const declared = /^\s*<\?xml[^>]*encoding\s*=\s*["']([^"']+)["']/.exec(text)?.[1];
  if (declared && !/^utf-?8$/i.test(declared)) throw new HttpError(415, `Send the XML body in UTF-8, not ${declared.slice(0, 40)}.`);
  let tree: Record<string, XmlElement>;
  try {
    tree = parser.parse(text) as Record<string, XmlElement>;
  } catch (err) {
    throw refusal(err);
  }
  const roots = Object.keys(tree);
  const root = roots[0] as string;
  if (roots.length !== 1 || Array.isArray(tree[root])) throw new HttpError(400, 'The XML body must have exactly one root element.');
  return { root, value: decodeTree(tree[root] as XmlElement) };
}

/**
 * What the parser refuses in a well-formed document: a name that would reach an object's
 * prototype (__proto__, constructor) or nesting deeper than 100. An attack's shape: 400, and a
 * line in the error log.
 */
function refusal(err: unknown): HttpError {
  const message = err instanceof Error ? err.message : String(err);
  const name = /Invalid name: "([^"]{0,40})/.exec(message)?.[1];
  if (name !== undefined) {
    return new HttpError(400, `The XML body uses the name "${name}", which is not accepted; rename the element or attribute.`, { log: 'warn' });
  }
  if (/nested/i.test(message)) return new HttpError(400, 'The XML body nests elements more than 100 deep; send a flatter document.', { log: 'warn' });
  return new HttpError(400, `The XML body cannot be read: ${message.slice(0, 200)}`, { log: 'warn' });
}

function decodeTree(node: XmlElement): XmlElement {
  if (typeof node === 'string') return decodeEntities(node);
  if (Array.isArray(node)) return node.map(decodeTree) as unknown as XmlElement;
  // No prototype: no name in a body can reach Object.prototype's members.
  const copy: Record<string, XmlElement> = Object.create(null);
  for (const [key, value] of Object.entries(node)) copy[key] = decodeTree(value as XmlElement);
  return copy;
}

function decodeEntities(text: string): string {
  if (!text.includes('&')) return text;
  return text.replace(/&([^;&\s]{0,12});?/g, (whole, name: string) => {
    if (!whole.endsWith(';')) throw new HttpError(400, 'The XML body has an & that starts no entity; write it as &amp;.');
    if (name in predefined) return predefined[name] as string;
    const code = /^#x([0-9a-f]{1,6})$/i.exec(name) ? parseInt(name.slice(2), 16) : /^#([0-9]{1,7})$/.exec(name) ? Number(name.slice(1)) : NaN;
    if (Number.isInteger(code) && code > 0 && code <= 0x10ffff && !(code >= 0xd800 && code <= 0xdfff)) return String.fromCodePoint(code);
    throw new HttpError(400, `The XML body uses the entity &${name.slice(0, 12)}; which XML does not define; use a character reference such as &#160; instead.`);
  });
}
