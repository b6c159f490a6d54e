// The development error page (PHP's display_errors): error class, message, file:line,
// the source around the line, the stack with the project's own frames first, and the
// request with its secrets masked. Self-contained, so it works when templates are broken.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import path from 'node:path';
import { escapeHtml } from '../render/index.ts';
import { locateError, messageOf, parseStack, ScriptParseError } from './stack.ts';

const maskedHeaders = new Set(['cookie', 'authorization', 'proxy-authorization', 'x-csrf-token']);

const style = `
body{font:15px/1.5 system-ui,sans-serif;margin:2rem;color:#222;background:#fff8f6}
h1{color:#a40000;font-size:1.4rem;margin:0 0 .5rem}
.message{font-size:1.1rem;white-space:pre-wrap}
pre.excerpt{background:#fff;border:1px solid #e6c8c0;padding:.5rem 0;overflow:auto}
pre.excerpt span{display:block;padding:0 .75rem}
pre.excerpt span.here{background:#ffd9d0;font-weight:bold}
ol.stack li.other{color:#777}
table{border-collapse:collapse}th,td{text-align:left;padding:.1rem .6rem;border-bottom:1px solid #eee;vertical-align:top}
td{word-break:break-all}
`;

/** The site's policy, with this page's inline style allowed by its hash. */
export const errorPagePolicy =
  "default-src 'self'; img-src 'self' https: http: data:; " +
  `style-src 'sha256-${createHash('sha256').update(style).digest('base64')}'; frame-ancestors 'none'; form-action 'self'`;

export function renderErrorPage(err: unknown, req: IncomingMessage, root: string): string {
  const error = err instanceof Error ? err : new Error(String(err));
  const kind = err instanceof ScriptParseError ? 'Parse error' : error.name;
  const where = locateError(err, root);
  const message = messageOf(error);
  const excerpt = where ? renderExcerpt(where.absolute, where.line) : '';
  const frames = err instanceof ScriptParseError ? [] : parseStack(error, root);
  const ordered = [...frames.filter((f) => f.own), ...frames.filter((f) => !f.own)];
  const stack = ordered
    .map((f) => {
      const file = f.own ? path.relative(root, f.file) : f.file;
      return `<li class="${f.own ? 'own' : 'other'}"><code>${escapeHtml(f.fn)}</code> ${escapeHtml(file)}:${f.line}:${f.column}</li>`;
    })
    .join('\n');
  const headers = Object.entries(req.headers)
    .map(([name, value]) => {
      const shown = maskedHeaders.has(name) ? '********' : Array.isArray(value) ? value.join(', ') : (value ?? '');
      return `<tr><th>${escapeHtml(name)}</th><td>${escapeHtml(shown)}</td></tr>`;
    })
    .join('\n');
  const location = where ? ` in <b>${escapeHtml(where.file)}</b> on line <b>${where.line}</b>` : '';
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>${escapeHtml(kind)}: ${escapeHtml(message.slice(0, 120))}</title>
<style>${style}</style>
</head>
<body>
<h1>${escapeHtml(kind)}</h1>
<p class="message">${escapeHtml(message)}${location}</p>
${excerpt}
<h2>Stack</h2>
<ol class="stack">
${stack || '<li>(no stack)</li>'}
</ol>
<h2>Request</h2>
<p><code>${escapeHtml(req.method ?? '')} ${escapeHtml(req.url ?? '')} HTTP/${escapeHtml(req.httpVersion)}</code></p>
<table>
${headers}
</table>
<p><small>Shown because display_errors is on. Set NODE_ENV=production or DISPLAY_ERRORS=0 to hide it.</small></p>
</body>
</html>
`;
}

function renderExcerpt(file: string, line: number, context = 5): string {
  let lines: string[];
  try {
    lines = readFileSync(file, 'utf8').split('\n');
  } catch {
    return '';
  }
  const first = Math.max(1, line - context);
  const last = Math.min(lines.length, line + context);
  const width = String(last).length;
  const rows: string[] = [];
  for (let n = first; n <= last; n++) {
    const text = `${String(n).padStart(width)}${n === line ? ' > ' : '   '}${lines[n - 1] ?? ''}`;
    rows.push(`<span${n === line ? ' class="here"' : ''}>${escapeHtml(text)}</span>`);
  }
  return `<pre class="excerpt">${rows.join('')}</pre>`;
}
