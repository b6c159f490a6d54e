// EJS templates: one per script with the script's name, plus form.ejs, error.ejs and partials/.
// Compiled with fixed options only, never options taken from request data
// (https://github.com/mde/ejs/blob/main/SECURITY.md).
import { readFileSync } from 'node:fs';
import path from 'node:path';
import ejs from 'ejs';

type Locals = { page: unknown; data: unknown };
type Template = (locals: Locals) => string;

// The one HTML escaper of the site, what <%= writes and the display_errors page uses: ejs's own
// entities, but a value with nothing to escape (nearly all of them) is only tested, not run
// through a global replace with a callback (docs/performance.md, HTML).
const htmlSpecial = /[&<>'"]/;
const htmlSpecialAll = /[&<>'"]/g;
const htmlEntities: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&#34;', "'": '&#39;' };

export function escapeHtml(value: unknown): string {
  if (value === undefined || value === null) return '';
  const text = String(value);
  return htmlSpecial.test(text) ? text.replace(htmlSpecialAll, (c) => htmlEntities[c] as string) : text;
}

export class Templates {
  private readonly dir: string;
  private readonly reload: boolean;
  private readonly compiled = new Map<string, Template>();

  constructor(dir: string, options: { reload: boolean }) {
    this.dir = dir;
    this.reload = options.reload;
  }

  /** Renders templates/<name>.ejs; in development the files are read again on every call. */
  render(name: string, locals: Locals): string {
    let template = this.reload ? undefined : this.compiled.get(name);
    if (!template) {
      template = this.compile(name);
      if (!this.reload) this.compiled.set(name, template);
    }
    return template(locals);
  }

  private compile(name: string): Template {
    const filename = path.join(this.dir, `${name}.ejs`);
    if (this.reload) ejs.clearCache(); // includes are cached by ejs itself
    return ejs.compile(readFileSync(filename, 'utf8'), {
      filename,
      // include('/partials/header') resolves against root without touching the disk on
      // every render, as a relative include would (ejs checks that the file exists).
      root: this.dir,
      cache: !this.reload,
      strict: true,
      _with: false,
      escape: escapeHtml,
      destructuredLocals: ['page', 'data'],
      compileDebug: true,
      async: false,
    }) as unknown as Template;
  }
}
