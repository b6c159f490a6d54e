// The render room: a script's document as HTML (EJS templates), XML (one writer) or JSON, errors
// as pages or problem details, and the response that carries them.
// May import: db, http, page.
export { buildXml, formatsOf, renderDocument, summaryOf } from './document.ts';
export { problemOf, renderProblem } from './problem.ts';
export type { Produced } from './send.ts';
export { respond } from './send.ts';
export { escapeHtml, Templates } from './templates.ts';
export { escapeXml, writeXml } from './xml.ts';
