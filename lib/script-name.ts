// What a script name is, in one place: scripts/<name>.ts answers at /<name>.php, as a PHP
// file would. The loader, the rewrite table's checks and -f all use these two.

/** A lower-case letter, then lower-case letters, digits, _ and -, at most 64 in all; _helper.ts is no script. */
export const scriptName = /^[a-z][a-z0-9_-]{0,63}$/;

// Names that may be asked for; whether such a script exists decides the rest.
const phpPath = /^\/?([A-Za-z0-9_-]+)\.php$/;

/** The name a site path /<name>.php (or <name>.php, relative) asks for, whether or not such a script exists. */
export function scriptOf(sitePath: string): string | null {
  return phpPath.exec(sitePath)?.[1] ?? null;
}
