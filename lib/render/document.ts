// Turns a script's Document into the chosen representation: HTML through the script's EJS
// template, XML through one writeXml call, or JSON (docs/interface.md, Representations).
import type { Alternate, Format, Viewer } from '../http/index.ts';
import { clip, formats } from '../http/index.ts';
import type { Document, LinkFn, ScriptModule } from '../page/index.ts';
import type { Templates } from './templates.ts';
import { writeXml } from './xml.ts';

/** What the shared layout needs besides the script's data. */
interface PageInfo {
  title: string;
  /** The meta description: the document's, on one line and clipped (summaryOf); none when it has none. */
  description: string | null;
  /** <base href>: makes relative links such as werk/7 work from every URL form of a page. */
  base: string;
  canonical: string | null;
  alternates: Alternate[];
  stylesheet: string;
  warnings: string[];
  /** Who is logged in, on pages that read the session; on public pages js/site.js fills the header in from me.json. */
  user: Viewer | null;
}

// Search engines show about 155 to 160 characters of a description and cut the rest.
const descriptionLength = 160;

/**
 * A document's description as its meta element holds it: one line, at most 160 characters and an
 * ellipsis. Only its start is looked at: a work's description may be 10,000 characters.
 */
export function summaryOf(description: string): string {
  return clip(
    description
      .slice(0, 4 * descriptionLength)
      .replace(/\s+/g, ' ')
      .trim(),
    descriptionLength,
  );
}

const xmlDeclaration = '<?xml version="1.0" encoding="UTF-8"?>\n';

export function buildXml(tree: Record<string, unknown>): string {
  return xmlDeclaration + writeXml(tree);
}

export function buildJson(value: unknown): string {
  return JSON.stringify(value, null, 2) + '\n';
}

/** The representations a script offers: HTML always, XML when it maps its data to a tree; or its only one. */
export function formatsOf(script: ScriptModule): Format[] {
  if (script.only) return [script.only.format];
  return formats.filter((f) => f !== 'xml' || script.view?.toXml !== undefined);
}

interface RenderOptions {
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
  const view = doc.view ?? script.view ?? { template: options.scriptName };
  switch (format) {
    case 'html':
      return options.templates.render(view.template, { page: options.page, data: doc.data });
    case 'xml':
      if (!view.toXml)
        throw new Error(`The document of ${options.scriptName} has no XML representation; give its view a toXml.`);
      return buildXml((view.toXml as (d: unknown, l: LinkFn) => Record<string, unknown>)(doc.data, link));
    case 'json':
      return buildJson(view.toJson ? (view.toJson as (d: unknown, l: LinkFn) => unknown)(doc.data, link) : doc.data);
  }
}
