// Turns a script's Document into the chosen representation: HTML through the script's
// EJS template, XML through one fast-xml-parser builder call, or JSON.
import { XMLBuilder, type XmlBuilderOptions } from 'fast-xml-parser';
import type { PageUser } from './auth.ts';
import type { Format } from './negotiate.ts';
import { formats, mediaTypes } from './negotiate.ts';
import type { Document, LinkFn, ScriptModule } from './script.ts';
import type { Templates } from './templates.ts';

export interface Alternate {
  format: Format;
  type: string;
  href: string;
}

/** What the shared layout needs besides the script's data. */
export interface PageInfo {
  title: string;
  /** <base href>: makes relative links such as werk/7 work from every URL form (CONTRACT 1). */
  base: string;
  canonical: string;
  alternates: Alternate[];
  stylesheet: string;
  warnings: string[];
  /** Who is logged in, on pages that read the session; public pages show a plain login link. */
  user?: PageUser | null;
}

// Scripts write XML trees the way fast-xml-parser reads them: attributes as '@_name' keys, text
// beside them as '#text'. buildXml hands the builder a copy with every string escaped in one
// pass (the builder's own entity processing runs a replace per entity per value and halved the
// XML throughput of a person page) and each node's attributes in one group object, which the
// builder turns into text in one loop instead of testing every key for the prefix (about 8% less
// time for a person with 50 works, the same bytes). Forbidden characters are replaced in the
// same pass over each string, not by a scan of the whole document. jPath: false spares the
// builder a path string for every node (nothing here reads one).
const attributePrefix = '@_';
const attributeGroup = '$';
const xmlBuilder = new XMLBuilder({
  ignoreAttributes: false,
  attributesGroupName: attributeGroup,
  attributeNamePrefix: '',
  textNodeName: '#text',
  format: true,
  indentBy: '  ',
  suppressEmptyNode: true,
  // XML has no boolean attributes: by default the builder writes ueberfaellig="true" as a bare
  // `ueberfaellig`, which is not well-formed.
  suppressBooleanAttributes: false,
  processEntities: false,
  jPath: false, // a documented builder option its type declarations do not list yet
} as XmlBuilderOptions);

// Characters XML 1.0 forbids even when escaped: a stored control character or a lone surrogate
// becomes U+FFFD, so it cannot make the document ill-formed.
const xmlForbidden = /[\x00-\x08\x0B\x0C\x0E-\x1F\uFFFE\uFFFF]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;
// Anything escapeXml may have to change; surrogates in pairs match too and come out unchanged.
const xmlUnsafe = /[&<>"'\x00-\x08\x0B\x0C\x0E-\x1F\uD800-\uDFFF\uFFFE\uFFFF]/;
const xmlSpecialAll = /[&<>"']/g;
const xmlEntities: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' };

function escapeXml(text: string): string {
  if (!xmlUnsafe.test(text)) return text;
  return text.replace(xmlForbidden, '\uFFFD').replace(xmlSpecialAll, (c) => xmlEntities[c] as string);
}

/**
 * The copy of a script's tree the builder gets: every string (text and attribute values)
 * escaped, and a node's '@_name' keys moved into its attribute group. Element names come from
 * the scripts, never from data, so the strings are all that needs escaping.
 */
function builderTree(node: unknown): unknown {
  if (typeof node === 'string') return escapeXml(node);
  if (node === null || typeof node !== 'object') return node;
  if (Array.isArray(node)) return node.map(builderTree);
  const copy: Record<string, unknown> = {};
  let attributes: Record<string, unknown> | undefined;
  for (const key of Object.keys(node)) {
    const value = builderTree((node as Record<string, unknown>)[key]);
    if (!key.startsWith(attributePrefix)) copy[key] = value;
    // An attribute without a value is left out, as the builder does with ungrouped ones.
    else if (value !== undefined && value !== null) (attributes ??= {})[key.slice(attributePrefix.length)] = value;
  }
  if (attributes) copy[attributeGroup] = attributes;
  return copy;
}

const xmlDeclaration = '<?xml version="1.0" encoding="UTF-8"?>\n';

export function buildXml(tree: Record<string, unknown>): string {
  return xmlDeclaration + xmlBuilder.build(builderTree(tree));
}

export function buildJson(value: unknown): string {
  return JSON.stringify(value, null, 2) + '\n';
}

/** The representations a script offers: HTML always, XML when it maps its data to a tree. */
export function formatsOf(script: ScriptModule): Format[] {
  return formats.filter((f) => f !== 'xml' || script.toXml !== undefined);
}

/** /search?query=… becomes /search.xml?query=…; the start page's are /index.html etc. */
export function alternatesOf(path: string, available: readonly Format[], link: LinkFn): Alternate[] {
  const mark = path.indexOf('?');
  const pathname = mark === -1 ? path : path.slice(0, mark);
  const query = mark === -1 ? '' : path.slice(mark);
  const stem = pathname === '/' ? '/index' : pathname;
  return available.map((format) => ({ format, type: mediaTypes[format].split(';')[0] as string, href: link(`${stem}.${format}${query}`) }));
}

export interface RenderOptions {
  format: Format;
  scriptName: string;
  script: ScriptModule;
  doc: Document;
  link: LinkFn;
  page: PageInfo;
  templates: Templates;
}

export function renderDocument(options: RenderOptions): string {
  const { format, script, doc, link } = options;
  // A script may answer with another document's view: POST /personen shows the new person.
  const view = doc.view ?? { template: options.scriptName, toJson: script.toJson, toXml: script.toXml };
  switch (format) {
    case 'html':
      return options.templates.render(view.template, { page: options.page, data: doc.data });
    case 'xml':
      if (!view.toXml) throw new Error(`The document of ${options.scriptName} has no XML representation; give its view a toXml.`);
      return buildXml((view.toXml as (d: unknown, l: LinkFn) => Record<string, unknown>)(doc.data, link));
    case 'json':
      return buildJson(view.toJson ? (view.toJson as (d: unknown, l: LinkFn) => unknown)(doc.data, link) : doc.data);
  }
}
