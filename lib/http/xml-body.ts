// Parses an XML request body safely, with saxes, a strict streaming parser whose cost grows with
// the bytes and nothing else (docs/robustness.md, Request bodies): well-formedness checked as it
// reads (400 with line and column), no DOCTYPE and no entity declarations at all (no expansion
// attacks, no external entities), only XML's five predefined entities and character references.
import { SaxesParser } from 'saxes';
import { HttpError } from './http-error.ts';

/** An element as read: its text, or an object of attributes (@_name), children and #text. */
export type XmlElement = string | { [name: string]: XmlElement | XmlElement[] };

interface Open {
  name: string;
  node: Record<string, XmlElement | XmlElement[]>;
  text: string;
  children: boolean;
}

/** 415 for an XML body whose declaration names another encoding than UTF-8; read before its bytes are decoded. */
export function checkXmlEncoding(bytes: Buffer): void {
  const declared = /^(?:\u00EF\u00BB\u00BF)?\s*<\?xml[^>]*encoding\s*=\s*["']([^"']+)["']/.exec(
    bytes.toString('latin1', 0, 200),
  )?.[1];
  if (declared && !/^utf-?8$/i.test(declared))
    throw new HttpError(415, `Send the XML body in UTF-8, not ${declared.slice(0, 40)}.`);
}

/**
 * The root element's name and its tree: an element with neither attributes nor children is its
 * trimmed text; a name that occurs twice among siblings is an array. Names are checked before they
 * become keys, and every object has no prototype, so no name can reach Object.prototype.
 */
export function parseXmlBody(text: string): { root: string; value: XmlElement } {
  if (/<!DOCTYPE|<!ENTITY/.test(text)) {
    throw new HttpError(
      400,
      'The XML body contains a DOCTYPE or an entity declaration, which are not accepted; send the document without them.',
    );
  }
  const unknown = /&(?!(?:lt|gt|amp|quot|apos|#[0-9]{1,7}|#x[0-9a-fA-F]{1,6});)([^;&\s<]{0,12})(;?)/.exec(text);
  if (unknown) {
    if (unknown[2] !== ';') throw new HttpError(400, 'The XML body has an & that starts no entity; write it as &amp;.');
    throw new HttpError(
      400,
      `The XML body uses the entity &${unknown[1]}; which XML does not define; use a character reference such as &#160; instead.`,
    );
  }
  const parser = new SaxesParser();
  const stack: Open[] = [];
  let root: { name: string; value: XmlElement } | null = null;
  parser.on('opentag', (tag) => {
    const node: Open['node'] = Object.create(null);
    for (const [name, value] of Object.entries(tag.attributes)) node[`@_${checkName(name)}`] = value.trim();
    const parent = stack[stack.length - 1];
    if (parent) parent.children = true;
    stack.push({ name: checkName(tag.name), node, text: '', children: Object.keys(node).length > 0 });
  });
  const addText = (piece: string) => {
    const open = stack[stack.length - 1];
    if (open) open.text += piece;
  };
  parser.on('text', addText);
  parser.on('cdata', addText);
  parser.on('closetag', () => {
    const { name, node, text, children } = stack.pop() as Open;
    const trimmed = text.trim();
    let value: XmlElement = node;
    if (!children) value = trimmed;
    else if (trimmed !== '') node['#text'] = trimmed;
    const parent = stack[stack.length - 1];
    if (!parent) {
      root = { name, value };
      return;
    }
    const before = parent.node[name];
    if (before === undefined) parent.node[name] = value;
    else if (Array.isArray(before)) before.push(value);
    else parent.node[name] = [before, value];
  });
  // The first error ends the reading: the handler's throw leaves write().
  parser.on('error', (err) => {
    const [, line = '?', column = '?', message = err.message] = /^(\d+):(\d+): (.*?)\.?$/.exec(err.message) ?? [];
    throw new HttpError(
      400,
      `The XML body is not well-formed: ${message.slice(0, 200)} (line ${line}, column ${column}).`,
    );
  });
  parser.write(text).close();
  const read = root as { name: string; value: XmlElement } | null;
  if (!read) throw new HttpError(400, 'The XML body must have exactly one root element.');
  return { root: read.name, value: read.value };
}

/** A name that would reach an object's prototype is refused: an attack's shape, 400 and a line in the error log. */
function checkName(name: string): string {
  if (name === '__proto__' || name === 'constructor' || name === 'prototype') {
    throw new HttpError(
      400,
      `The XML body uses the name "${name}", which is not accepted; rename the element or attribute.`,
      { log: 'warn' },
    );
  }
  return name;
}
