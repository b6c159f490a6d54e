// Writes the XML representation of a script's tree: '@_name' keys are attributes, '#text' is
// text, an array repeats its element, null is an empty element and undefined leaves it out; two
// spaces indent each level. The tree convention and the bytes are those of fast-xml-parser's
// XMLBuilder (format, suppressEmptyNode), which test/render/xml.test.ts keeps as the reference. For a
// person the builder took more than twice as long (docs/performance.md, XML).

const attributePrefix = '@_';
const textKey = '#text';

// Characters XML 1.0 forbids even when escaped: a stored control character or a lone surrogate
// becomes U+FFFD, so it cannot make the document ill-formed.
const xmlForbidden =
  /[\x00-\x08\x0B\x0C\x0E-\x1F\uFFFE\uFFFF]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;
// Anything escapeXml may have to change; surrogates in pairs match too and come out unchanged.
const xmlUnsafe = /[&<>"'\x00-\x08\x0B\x0C\x0E-\x1F\uD800-\uDFFF\uFFFE\uFFFF]/;
const xmlSpecial = /[&<>"']/g;
const xmlEntities: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' };

/** Text and attribute values alike: markup characters as entities, forbidden characters as U+FFFD. */
export function escapeXml(text: string): string {
  if (!xmlUnsafe.test(text)) return text;
  return text.replace(xmlForbidden, '\uFFFD').replace(xmlSpecial, (c) => xmlEntities[c] as string);
}

/** A value as XML text: strings escaped, numbers and booleans as JavaScript writes them (-0 kept). */
function textOf(value: unknown): string {
  if (typeof value === 'string') return escapeXml(value);
  return Object.is(value, -0) ? '-0' : String(value);
}

const indents: string[] = [];
function indent(level: number): string {
  return (indents[level] ??= '  '.repeat(level));
}

/** The elements of tree's keys, one root for a document; each line ends in a newline. */
export function writeXml(tree: Record<string, unknown>): string {
  let out = '';
  for (const key of Object.keys(tree)) out += writeElement(key, tree[key], 0);
  return out;
}

function writeElement(name: string, value: unknown, level: number): string {
  if (value === undefined) return '';
  if (Array.isArray(value)) {
    let out = '';
    for (const item of value) {
      if (Array.isArray(item))
        throw new Error(`<${name}>: a list inside a list has no XML form; give the inner list an element of its own.`);
      out += writeElement(name, item, level);
    }
    return out;
  }
  const pad = indent(level);
  if (value === null) return `${pad}<${name}/>\n`;
  if (typeof value !== 'object') {
    const text = textOf(value);
    return text === '' ? `${pad}<${name}/>\n` : `${pad}<${name}>${text}</${name}>\n`;
  }
  let attributes = '';
  let content = '';
  let nested = false;
  for (const key of Object.keys(value)) {
    const child = (value as Record<string, unknown>)[key];
    if (key.startsWith(attributePrefix)) {
      // An attribute without a value is left out.
      if (child !== undefined && child !== null)
        attributes += ` ${key.slice(attributePrefix.length)}="${textOf(child)}"`;
    } else if (key === textKey) {
      if (child !== undefined && child !== null) content += textOf(child);
    } else {
      const element = writeElement(key, child, level + 1);
      if (element !== '') {
        content += element;
        nested = true;
      }
    }
  }
  if (content === '') return `${pad}<${name}${attributes}/>\n`;
  // Text alone stays on the element's line; child elements go on lines of their own.
  if (!nested) return `${pad}<${name}${attributes}>${content}</${name}>\n`;
  return `${pad}<${name}${attributes}>\n${content}${pad}</${name}>\n`;
}
