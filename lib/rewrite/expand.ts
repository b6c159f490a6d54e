// Expansion of mod_rewrite strings: substitutions and RewriteCond test strings with $N (rule
// groups), %N (groups of the last matched condition), %{VARIABLE} and "\" escapes.
// Follows do_expand and lookup_variable in httpd's modules/mappers/mod_rewrite.c.

export type Piece = string | { ref: '$' | '%'; n: number } | { variable: string };

/** Header variables mod_rewrite knows by name; any other header is read as %{HTTP:Name}. */
const HEADER_VARIABLES = new Map([
  ['HTTP_HOST', 'Host'],
  ['HTTP_ACCEPT', 'Accept'],
  ['HTTP_COOKIE', 'Cookie'],
  ['HTTP_REFERER', 'Referer'],
  ['HTTP_USER_AGENT', 'User-Agent'],
  ['HTTP_FORWARDED', 'Forwarded'],
  ['HTTP_PROXY_CONNECTION', 'Proxy-Connection'],
]);
const REQUEST_VARIABLES = new Set([
  'REQUEST_URI',
  'QUERY_STRING',
  'REQUEST_METHOD',
  'REQUEST_FILENAME',
  'SCRIPT_FILENAME',
  'THE_REQUEST',
  'HTTPS',
  'REQUEST_SCHEME',
  'DOCUMENT_ROOT',
  'REMOTE_ADDR',
]);

const SUPPORTED_VARIABLES = [...REQUEST_VARIABLES, ...HEADER_VARIABLES.keys(), 'HTTP:<header>'];

export class ExpandError extends Error {}

/** The header a variable reads (HTTP_HOST -> Host, HTTP:X-Foo -> X-Foo), or null. */
export function headerOf(variable: string): string | null {
  if (/^HTTP:/i.test(variable)) return variable.slice(5);
  return HEADER_VARIABLES.get(variable.toUpperCase()) ?? null;
}

// Splits once at load time, so a request only concatenates. "\c" is a literal c, "$N" and
// "%N" are back references, "%{NAME}" a variable; anything else is literal, as in do_expand.
export function parsePieces(text: string): Piece[] {
  const pieces: Piece[] = [];
  let literal = '';
  const flush = () => {
    if (literal !== '') pieces.push(literal);
    literal = '';
  };
  for (let i = 0; i < text.length; i++) {
    const char = text.charAt(i);
    const next = text.charAt(i + 1);
    if (char === '\\' && next !== '') {
      literal += next;
      i++;
    } else if ((char === '$' || char === '%') && next >= '0' && next <= '9') {
      flush();
      pieces.push({ ref: char, n: Number(next) });
      i++;
    } else if ((char === '$' || char === '%') && next === '{' && text.indexOf('}', i) !== -1) {
      const end = text.indexOf('}', i);
      if (char === '$')
        throw new ExpandError(
          `the RewriteMap lookup ${text.slice(i, end + 1)} is not supported; there are no rewrite maps, so spell the mapping out as rules.`,
        );
      flush();
      pieces.push({ variable: checkVariable(text.slice(i + 2, end)) });
      i = end;
    } else {
      literal += char;
    }
  }
  flush();
  return pieces;
}

function checkVariable(name: string): string {
  if (/^HTTP:[A-Za-z0-9-]+$/i.test(name)) return name;
  const upper = name.toUpperCase();
  if (REQUEST_VARIABLES.has(upper) || HEADER_VARIABLES.has(upper)) return upper;
  if (upper.startsWith('HTTP_')) {
    const header = upper
      .slice(5)
      .toLowerCase()
      .replace(/_/g, '-')
      .replace(/(^|-)([a-z])/g, (_, dash: string, c: string) => dash + c.toUpperCase());
    throw new ExpandError(
      `%{${name}} is empty in Apache, which names only a few headers this way; write %{HTTP:${header}} to read that header.`,
    );
  }
  throw new ExpandError(`the variable %{${name}} is not supported; use one of ${SUPPORTED_VARIABLES.join(', ')}.`);
}

export function highestReference(pieces: readonly Piece[], kind: '$' | '%'): number {
  let highest = -1;
  for (const piece of pieces)
    if (typeof piece === 'object' && 'ref' in piece && piece.ref === kind) highest = Math.max(highest, piece.n);
  return highest;
}

export function hasReferences(pieces: readonly Piece[]): boolean {
  return pieces.some((piece) => typeof piece !== 'string');
}

export interface Expansion {
  rule: RegExpExecArray | null;
  cond: RegExpExecArray | null;
  lookup: (variable: string) => string;
  /** Applied to back references only (the B flag, or the server table's query escaping). */
  escape: ((value: string) => string) | null;
}

export function expandPieces(pieces: readonly Piece[], expansion: Expansion): string {
  let out = '';
  for (const piece of pieces) {
    if (typeof piece === 'string') {
      out += piece;
    } else if ('variable' in piece) {
      out += expansion.lookup(piece.variable);
    } else {
      const value = (piece.ref === '$' ? expansion.rule : expansion.cond)?.[piece.n] ?? '';
      out += expansion.escape === null ? value : expansion.escape(value);
    }
  }
  return out;
}

/** The B flag: letters, digits and "_" stay, a space becomes "+", every other byte %XX (escape_backref). */
export function escapeBackReference(value: string): string {
  let out = '';
  for (const char of value.replace(LONE_SURROGATE, '\uFFFD')) {
    if (/[A-Za-z0-9_]/.test(char)) out += char;
    else if (char === ' ') out += '+';
    else
      out += encodeURIComponent(char).replace(/[!'()*~._-]/g, (c) => '%' + c.charCodeAt(0).toString(16).toUpperCase());
  }
  return out;
}

// ap_escape_uri: what Apache escapes in a redirect it builds (gen_test_char.c, T_OS_ESCAPE_PATH).
export function escapeLikeApache(text: string): string {
  let out = '';
  for (const char of text.replace(LONE_SURROGATE, '\uFFFD')) {
    out += /[A-Za-z0-9$\-_.+!*'(),:;@&=/~]/.test(char) ? char : encodeURIComponent(char);
  }
  return out;
}

export const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

const absoluteUrl = /^https?:\/\//i;

/** An http or https URL, as a substitution that redirects or proxies is. */
export function isAbsoluteUrl(text: string): boolean {
  return absoluteUrl.test(text);
}
