// The work a request body may cost, counted on its bytes as they arrive, before anything is
// parsed: a form of more than 1,000 fields, JSON of more than 1,000 values, XML of more than 1,000
// elements, attributes and other parts or 12,000 references are 413, nesting deeper than 32 is
// 400, at the byte that passes the bound. Within the bounds a body of up to 1 MiB parses in a few
// milliseconds; beyond them parsing grows with the count, and a body of many small parts held the
// event loop for a second (docs/robustness.md, Request bodies).
import { HttpError } from './http-error.ts';

/** As PHP's max_input_vars. A person, a work or a loan has a handful of fields. */
const maxParts = 1000;
const maxDepth = 32;
/** Character and entity references in an XML body: a 10,000-character description written as &#228; throughout. */
const maxReferences = 12_000;

/** Looks at the next chunk of a body; throws the refusal once the body passes a bound. */
export type ShapeCounter = (chunk: Uint8Array) => void;

// The bytes that matter are ASCII, which never occurs inside a multi-byte UTF-8 character.
const ampersand = 0x26;
const comma = 0x2c;
const quote = 0x22;
const apostrophe = 0x27;
const backslash = 0x5c;
const less = 0x3c;
const greater = 0x3e;
const equals = 0x3d;
const slash = 0x2f;
const bang = 0x21;
const question = 0x3f;

export function countForm(): ShapeCounter {
  let fields = 1;
  return (chunk) => {
    for (let i = chunk.indexOf(ampersand); i !== -1; i = chunk.indexOf(ampersand, i + 1)) {
      if (++fields > maxParts) throw tooMuch(`The form has more than ${maxParts} fields`);
    }
  };
}

/** Members and elements (each , and each [ or {) outside strings, and the nesting of [ and {. */
export function countJson(): ShapeCounter {
  let values = 0;
  let depth = 0;
  let inString = false;
  let escaped = false;
  return (chunk) => {
    for (let i = 0; i < chunk.length; i++) {
      const c = chunk[i] as number;
      if (inString) {
        if (escaped) escaped = false;
        else if (c === backslash) escaped = true;
        else if (c === quote) inString = false;
      } else if (c === quote) {
        inString = true;
      } else if (c === 0x5b || c === 0x7b) {
        if (++depth > maxDepth) throw tooDeep('The JSON body nests values');
        if (++values > maxParts) throw tooMuch(`The JSON body has more than ${maxParts} values`);
      } else if (c === 0x5d || c === 0x7d) {
        depth--;
      } else if (c === comma && ++values > maxParts) {
        throw tooMuch(`The JSON body has more than ${maxParts} values`);
      }
    }
  };
}

/**
 * Every < but a closing tag's starts a part (an element, a comment, CDATA, a processing
 * instruction), every = inside a tag an attribute; opening tags that do not close themselves nest. A < or > inside a comment
 * or CDATA may be counted as one more part: the count errs on the high side, never the low.
 */
export function countXml(): ShapeCounter {
  let parts = 0;
  let depth = 0;
  let references = 0;
  let inTag = false;
  let quoteOf = 0;
  let tagKind: 'open' | 'close' | 'other' = 'open';
  let tagStart = false;
  let previous = 0;
  const part = () => {
    if (++parts > maxParts)
      throw tooMuch(`The XML body has more than ${maxParts} elements, attributes and other parts`);
  };
  return (chunk) => {
    for (let i = 0; i < chunk.length; i++) {
      const c = chunk[i] as number;
      if (quoteOf !== 0) {
        if (c === quoteOf) quoteOf = 0;
        else if (c === ampersand && ++references > maxReferences) throw tooManyReferences();
      } else if (tagStart) {
        // The byte after <: </ closes what a part opened, <! and <? are parts but no elements.
        tagKind = c === slash ? 'close' : c === bang || c === question ? 'other' : 'open';
        if (tagKind !== 'close') part();
        tagStart = false;
      } else if (inTag) {
        // Quotes hold attribute values of an opening tag only: a quote in a comment, CDATA or a
        // processing instruction, which end at their first >, must not hide what follows.
        if ((c === quote || c === apostrophe) && tagKind === 'open') quoteOf = c;
        else if (c === equals) part();
        else if (c === greater) {
          inTag = false;
          if (tagKind === 'close') depth--;
          else if (tagKind === 'open' && previous !== slash && ++depth > maxDepth)
            throw tooDeep('The XML body nests elements');
        }
      } else if (c === less) {
        inTag = true;
        tagStart = true;
      } else if (c === ampersand && ++references > maxReferences) {
        throw tooManyReferences();
      }
      previous = c;
    }
  };
}

function tooManyReferences(): HttpError {
  return tooMuch(`The XML body has more than ${maxReferences} character or entity references`);
}

function tooDeep(what: string): HttpError {
  return new HttpError(400, `${what} more than ${maxDepth} deep; send a flatter document.`, {
    log: 'warn',
    headers: { connection: 'close' },
  });
}

function tooMuch(what: string): HttpError {
  return new HttpError(
    413,
    `${what}; a person, a work or a loan needs a few dozen at most. Send the fields of one resource.`,
    { log: 'warn', headers: { connection: 'close' } },
  );
}
