// The interface described for client writers, OpenAPI 3.1 (docs/interface.md, OpenAPI): the
// words every script's fragment is written in (parameters, answers, bodies, problem documents) and
// the document the fragments make, with every address in both styles (the rewritten one and the
// script's). A script declares its own addresses next to its code (`export const api`), and
// scripts/openapi.ts serves what all of them declare.
import * as search from '../search/index.ts';

type Json = Record<string, unknown>;
type Method = 'get' | 'post' | 'put' | 'delete';

/** One resource: its rewritten address, parameters and operations. */
export interface ApiResource {
  /** The rewritten address with {parameters} in its path; the script's own address is /<script>.php. */
  path: string;
  /** Path parameters of the rewritten address, which the script's address takes as query parameters of the same name. */
  pathParams?: Json[];
  /** Query parameters of both. */
  query?: Json[];
  operations: Partial<Record<Method, Json>>;
  /** False for an answer that reads no database (robots.txt, the OpenAPI document): no 503. */
  database?: false;
  /** False for an answer of one type whatever the suffix (robots.txt). */
  suffixes?: false;
}

/** What a script declares: its resources, written with the parts of apiParts. */
export type ApiFragment = (parts: ApiParts) => ApiResource[];

/** A script of the site by name, as scripts/openapi.ts gathers them. */
export interface SiteScript {
  name: string;
  /** Its module; only its fragment is read here. */
  module: { api?: ApiFragment };
}

/** The absolute URL of a site path (a script's LinkFn). */
type LinkFn = (path: string) => string;

/**
 * The scripts of the server that runs the calling script, each compiled: the script loader gives
 * every script its own (lib/scripts/loader.ts). Outside a script it has none to list.
 */
export async function siteScripts(): Promise<SiteScript[]> {
  throw new Error(
    'siteScripts() lists the scripts of the server that loaded the calling script; call it from a handler script.',
  );
}

const problemCodes = ['400', '403', '404', '406', '409', '410', '413', '415', '422', '429', '503'] as const;
const reasons: Record<string, string> = {
  '400':
    'The request is malformed: a parameter, a header (a Host not served here, an Accept header over its bounds, bad Basic credentials) or the body.',
  '403': 'Not allowed: log in, or this account may not do it; a change from another origin or without the CSRF token.',
  '404': 'There is no such resource.',
  '406': 'None of the representations is acceptable; the document lists those there are.',
  '409': 'The change conflicts with the data, e.g. a work on loan.',
  '410': 'The resource has been deleted.',
  '413': 'The body is larger than this change takes: 1 MiB, a picture 10 MiB (PICTURE_MAX_BYTES).',
  '415': 'The body is of a type this change does not take.',
  '422': 'The body is well-formed but its fields are invalid; errors names each.',
  '429':
    'Too many failed logins (the form or Basic credentials) for this account from this address; Retry-After says when to try again.',
  '503':
    'The database is unavailable or the server is busy (password checks, picture conversions); Retry-After says when to try again.',
};

/** Text as lib/page/input.ts checks it: trimmed, at most `max` characters; a required one not empty. */
function text(max: number, required = false): Json {
  return { type: 'string', maxLength: max, ...(required ? { minLength: 1, pattern: '\\S' } : {}) };
}

// The bodies of the changes in JSON, and the fields of their forms (lib/page/person.ts, werk.ts, loan.ts).
const personFields = {
  vorname: text(200, true),
  nachname: text(200, true),
  username: {
    type: 'string',
    pattern: '^\\s*[A-Za-z0-9][A-Za-z0-9._-]{0,63}\\s*$',
    description: 'Letters, digits, dots, hyphens, underscores; stored in lower case.',
  },
  image: { ...text(2000), description: 'An http(s) URL or a path on this site; empty for the placeholder.' },
};
const inputs: Record<string, Json> = {
  PersonInput: {
    type: 'object',
    required: ['vorname', 'nachname'],
    properties: {
      ...personFields,
      username: { ...personFields.username, description: 'A PUT without it keeps the current one.' },
    },
  },
  NewPersonInput: { type: 'object', required: ['vorname', 'nachname', 'username'], properties: personFields },
  WerkInput: {
    type: 'object',
    required: ['titel'],
    properties: {
      titel: text(300, true),
      // A number, or its digits as text: -3000 to 3000.
      jahr: {
        type: ['integer', 'string', 'null'],
        minimum: -3000,
        maximum: 3000,
        pattern: '^\\s*(?:-?(?:[0-9]{1,3}|[0-2][0-9]{3}|3000))?\\s*$',
      },
      art: text(100),
      beschreibung: { ...text(10000), description: 'Line breaks are kept.' },
    },
  },
  LoanInput: {
    type: 'object',
    required: ['url'],
    properties: {
      url: { type: 'string', minLength: 1, pattern: '\\S', description: "The work's address on this site, or its id." },
      bis: {
        type: 'string',
        pattern: '^\\s*(?:[0-9]{4}-[0-9]{2}-[0-9]{2})?\\s*$',
        description: 'The due date, YYYY-MM-DD; absent or empty: four weeks from today.',
      },
    },
  },
};

function param(name: string, where: 'path' | 'query', schema: Json, description: string, extra: Json = {}): Json {
  return { name, in: where, required: where === 'path', schema, description, ...extra };
}

// An id is a PostgreSQL integer above 0: anything else is 400 (readId, lib/page/script-request.ts). As
// digits in a path: 1 to 2147483647, without leading zeros.
const id = { type: 'integer', minimum: 1, maximum: 2147483647 };
const idPattern =
  '[1-9][0-9]{0,8}|1[0-9]{9}|20[0-9]{8}|21[0-3][0-9]{7}|214[0-6][0-9]{6}|2147[0-3][0-9]{5}|21474[0-7][0-9]{4}|214748[0-2][0-9]{3}|2147483[0-5][0-9]{2}|21474836[0-3][0-9]|214748364[0-7]';
// A slug always has a letter, so that /person/42 is the id 42 (docs/interface.md, URLs).
const slugPattern = '(?=[0-9-]*[a-z])[a-z0-9]+(?:-[a-z0-9]+)*';
const slug = { type: 'string', pattern: `^${slugPattern}$` };
// readNonNegativeInteger's bound.
const count = { type: 'integer', minimum: 0, maximum: 999999999 };
const oneOf = (words: readonly string[]) => `(?:${words.join('|')})`;
const params = {
  person: param(
    'person',
    'path',
    { type: 'string', pattern: `^(?:${idPattern}|${slugPattern})$` },
    "The person's id (all digits, at most 2147483647) or slug (made from the name; an old slug answers 301, or 308 to a change).",
  ),
  pid: param('pid', 'query', id, "The person's id; either pid or slug is required."),
  slug: param('slug', 'query', slug, "The person's slug; either pid or slug is required."),
  id: param('id', 'path', id, "The work's id."),
  uid: param('uid', 'path', id, "The account's id."),
  wid: param('wid', 'path', id, "The work's id."),
  offset: param('offset', 'query', { ...count, default: 0 }, 'The first entry of the page, 0-based.'),
  back: param('back', 'query', { type: 'string' }, 'A path on this site to go to after logging in.'),
  // field,match,term[,operator], the term not empty (lib/search/language.ts).
  query: param(
    'query',
    'query',
    {
      type: 'array',
      maxItems: 5,
      items: {
        type: 'string',
        pattern: `^${oneOf(search.fields)},${oneOf(search.matches)},(?!\\s*(?:,${oneOf(search.operators)})?$).+$`,
      },
    },
    `A condition as Primo writes it, field,match,term[,AND|OR|NOT] (${search.fields.join(', ')}; ${search.matches.join(', ')}); the fourth part joins it with the next condition, AND when absent. The term is at most ${search.maxTermLength} characters; a contains term takes words, "phrases", AND, OR, NOT and the wildcards * and ? inside or at the end of a word, after two letters (at most 12 words and phrases, 4 with wildcards).`,
    { style: 'form', explode: true },
  ),
  // The search form's fields: answered 303 with the search's own address.
  term: param(
    'term',
    'query',
    { type: 'string', maxLength: search.maxTermLength },
    "The search form's term: the answer is 303 to the address with query=field,match,term (nothing to search for: the empty search).",
  ),
  field: param('field', 'query', { enum: search.fields, default: 'any' }, "The search form's field, with term."),
  match: param(
    'match',
    'query',
    { enum: search.matches, default: 'contains' },
    "The search form's match type, with term.",
  ),
  tab: param(
    'tab',
    'query',
    { type: 'string', default: 'default_tab' },
    "Primo's tab; kept in the links. Another installation's tab is answered with ours.",
  ),
  scope: param(
    'search_scope',
    'query',
    { type: 'string', default: 'default_scope' },
    "Primo's search scope: default_scope, personen, werke; kept in the links. Another installation's scope is answered with ours.",
  ),
  vid: param(
    'vid',
    'query',
    { type: 'string', default: 'portfolio' },
    "The view: the look of the HTML list (portfolio, druck). Another installation's view is answered with ours.",
  ),
  sortby: param('sortby', 'query', { type: 'string', enum: search.sorts, default: 'rank' }, 'The order of the hits.'),
  facet: param(
    'facet',
    'query',
    {
      type: 'array',
      items: {
        type: 'string',
        pattern: `^(?:${oneOf(search.facetNames.filter((n) => n !== 'decade'))},(?:include|exclude),(?=.*\\S).+|decade,(?:include|exclude),\\s*(?:0|-?[1-9][0-9]{0,3}0)\\s*)$`,
      },
      maxItems: 10,
    },
    `A facet as Primo writes it, name,include|exclude,value (${search.facetNames.join(', ')}); a decade is its first year (1990); a value of rtype is at most 100 characters, of creator 401. With the terms, a search is at most 1,536 characters as its links write it.`,
    { style: 'form', explode: true },
  ),
  lang: param('lang', 'query', { type: 'string' }, "Primo's interface language; kept in the links."),
  personen: param(
    'personen',
    'query',
    count,
    'A part of the sitemap index, from 1: persons of one range of ids (not with werke; a part there is not is 404).',
  ),
  werke: param(
    'werke',
    'query',
    count,
    'A part of the sitemap index, from 1: works of one range of ids (not with personen; a part there is not is 404).',
  ),
};

/** The parts fragments are written with; schemas are named by absolute URLs on the site. */
export type ApiParts = ReturnType<typeof apiParts>;

export function apiParts(link: LinkFn) {
  const schema = (name: string) => ({ $ref: link(`/schema/${name}.json`) });
  const xml = (name: string) => ({
    type: 'string',
    description: `XML; its XML Schema is ${link(`/schema/${name}.xsd`)}.`,
    externalDocs: { url: link(`/schema/${name}.xsd`) },
  });
  const html = { type: 'string', description: 'An HTML page.' };
  /** The representations of a document whose schemas are named `name`: HTML, XML (unless json only) and JSON; a form's fields as plain JSON. */
  const documents = (name: string | null, only?: 'json') => ({
    'text/html': { schema: html },
    ...(name && only !== 'json' ? { 'application/xml': { schema: xml(name) } } : {}),
    'application/json': {
      schema: name ? schema(name) : { type: 'object', description: "The form's fields and messages." },
    },
  });
  const ok = (description: string, name: string | null, only?: 'json') => ({
    description,
    headers: { Link: { $ref: '#/components/headers/Link' }, ETag: { $ref: '#/components/headers/ETag' } },
    content: documents(name, only),
  });
  const notModified = {
    description: 'Not modified: If-None-Match names the current ETag.',
    headers: { ETag: { $ref: '#/components/headers/ETag' } },
  };
  const problems = (...codes: (typeof problemCodes)[number][]) =>
    Object.fromEntries(codes.map((code) => [code, { $ref: `#/components/responses/Problem${code}` }]));
  const body = (name: string, form: Json) => ({
    required: true,
    content: {
      'application/json': { schema: { $ref: `#/components/schemas/${name}` } },
      'application/xml': {
        schema: {
          type: 'string',
          description: `The ${name.replace('Input', '').toLowerCase()} in the shape of its XML representation.`,
        },
      },
      'application/x-www-form-urlencoded': { schema: form },
    },
  });
  const changing = { security: [{ basic: [] }, { session: [], csrf: [] }] };
  const created = (what: string, name: string) => ({
    description: `Created: Location names the new ${what}, the body is its representation (a form gets 303 to it).`,
    headers: { Location: { $ref: '#/components/headers/Location' } },
    content: documents(name),
  });
  const seeOther = {
    description: "A form's change is done: see the page Location names.",
    headers: { Location: { $ref: '#/components/headers/Location' } },
  };
  const noContent = { description: 'Done; nothing to show.' };
  const movedPermanently = {
    description: 'An old slug: Location names the current one.',
    headers: { Location: { $ref: '#/components/headers/Location' } },
  };
  const permanentRedirect = {
    description: 'An old slug: Location names the current one; send the change there.',
    headers: { Location: { $ref: '#/components/headers/Location' } },
  };
  // Anyone, and whom credentials identify when they are sent.
  const maybe = [{}, { basic: [] }, { session: [] }];
  // The forms' fields are those of the JSON bodies (components.schemas), with the session's token and the method a form cannot send.
  const formOf = (input: string, extra: Json = {}) => {
    const { properties, required } = inputs[input] as { properties: Json; required: string[] };
    return {
      type: 'object',
      required,
      properties: {
        ...properties,
        csrf_token: {
          type: 'string',
          description: "The session's CSRF token, unless the header X-CSRF-Token carries it.",
        },
        ...extra,
      },
    };
  };
  const method = { _method: { enum: ['PUT', 'DELETE'] } };
  const personForm = formOf('PersonInput', method);
  const werkForm = formOf('WerkInput', method);
  const loanInput = (inputs.LoanInput as { properties: Json }).properties;
  const loanForm = {
    ...formOf('LoanInput'),
    required: ['werk'],
    properties: { werk: loanInput.url, bis: loanInput.bis, csrf_token: { type: 'string' } },
  };
  // A form reads who is asking: 403 for anyone who may not use it, with a login link. A person's or
  // a work's form is 404 and 410 as they are, a person's old slug 301.
  const form = (what: string, of: 'person' | 'werk' | null) => ({
    get: {
      summary: `The form that ${what}.`,
      security: [{ basic: [] }, { session: [] }],
      responses: {
        200: ok('The form.', null),
        ...(of === 'person' ? { 301: movedPermanently } : {}),
        ...problems('403', ...(of ? (['404', '410'] as const) : [])),
      },
    },
  });

  const atom = {
    description: 'An Atom feed (RFC 4287).',
    content: { 'application/atom+xml': { schema: { type: 'string' } } },
  };
  return {
    params,
    schema,
    xml,
    html,
    ok,
    notModified,
    problems,
    body,
    changing,
    created,
    seeOther,
    noContent,
    movedPermanently,
    permanentRedirect,
    maybe,
    formOf,
    personForm,
    werkForm,
    loanForm,
    form,
    atom,
  };
}

/** The OpenAPI document of the site's scripts, each at its rewritten addresses and at /<name>.php. */
export function describeSite(scripts: readonly SiteScript[], link: LinkFn): Json {
  const parts = apiParts(link);
  const { schema, xml, html, problems } = parts;
  /**
   * An operation's answers with those any operation may give besides its own (docs/interface.md,
   * Errors): 400 for a Host not served here or an Accept header over its bounds; 406 for an Accept
   * or a suffix it has no representation for; 503 when it reads the database (all but
   * robots.txt and this document) or credentials; 429 when it reads credentials; 413 and 415 when
   * it takes a body.
   */
  const withCommon = (op: Json, resource: ApiResource): Json => {
    const identifies = 'security' in op;
    const codes: (typeof problemCodes)[number][] = ['400', '406'];
    if (resource.database !== false || identifies) codes.push('503');
    if (identifies) codes.push('429');
    if ('requestBody' in op) codes.push('413', '415');
    const responses = { ...(op.responses as Json), ...problems(...codes) };
    return Object.fromEntries(Object.entries(responses).sort(([a], [b]) => a.localeCompare(b)));
  };
  const resources = scripts.flatMap(({ name, module }) =>
    (module.api ? module.api(parts) : []).map((resource) => ({ script: name, ...resource })),
  );

  const paths: Json = {};
  const scriptPaths: Record<string, Json> = {};
  for (const resource of resources) {
    const { operations } = resource;
    const { pathParams = [], query = [] } = resource;
    const suffixNote =
      resource.suffixes === false ? '' : ' The suffixes .html, .xml and .json name a representation instead of Accept.';
    paths[resource.path] = {
      ...(pathParams.length + query.length > 0 ? { parameters: [...pathParams, ...query] } : {}),
      ...Object.fromEntries(
        Object.entries(operations).map(([method, op]) => [
          method,
          {
            ...op,
            responses: withCommon(op, resource),
            operationId: `${method}${operationName(resource.path)}`,
            description: `${(op as Json).summary as string}${suffixNote}`,
          },
        ]),
      ),
    };
    // The script's address: the path parameters become query parameters; one entry per script.
    const entry = (scriptPaths[`/${resource.script}.php`] ??= { parameters: new Map<string, Json>(), operations: {} });
    // /person/{person} is person.php?pid=… or ?slug=….
    const asQuery = [...pathParams, ...query].flatMap((p) => (p === params.person ? [params.pid, params.slug] : [p]));
    // A path parameter is required as a query parameter too (werk.php without id is 400); a person needs pid or slug.
    for (const p of asQuery)
      (entry.parameters as Map<string, Json>).set(p.name as string, { ...p, in: 'query', required: p.in === 'path' });
    for (const [method, op] of Object.entries(operations)) {
      (entry.operations as Json)[method] ??= {
        ...op,
        responses: withCommon(op, resource),
        operationId: `${method}${operationName(`/${resource.script}.php`)}`,
        description: `${(op as Json).summary as string} The address the PHP site had; the same script as ${resource.path}.`,
      };
    }
  }
  for (const [path, entry] of Object.entries(scriptPaths)) {
    const parameters = [...(entry.parameters as Map<string, Json>).values()];
    paths[path] = { ...(parameters.length > 0 ? { parameters } : {}), ...(entry.operations as Json) };
  }

  return {
    openapi: '3.1.0',
    info: {
      title: 'Portfolio',
      version: '1',
      description:
        'Persons, their works, loan lists and search result lists as documents, each at one stable URL, in HTML, XML and JSON (Accept, or the suffix .html, .xml, .json). Every resource also answers at the address of the PHP site it replaces (/person.php?pid=1).',
    },
    servers: [{ url: link('') || '/' }],
    paths,
    components: {
      securitySchemes: {
        basic: {
          type: 'http',
          scheme: 'basic',
          description: "An account's name and password; creates no session. Changes with it must send JSON or XML.",
        },
        session: {
          type: 'apiKey',
          in: 'cookie',
          name: 'portfolio_session',
          description: 'The session cookie that POST /login sets.',
        },
        csrf: {
          type: 'apiKey',
          in: 'header',
          name: 'X-CSRF-Token',
          description:
            "The session's CSRF token (the form field csrf_token), required with the session cookie for every change.",
        },
      },
      headers: {
        Link: {
          description:
            'The canonical address, the other representations (rel="alternate"), and for a page of a list the next, previous, first and last pages (RFC 8288), in that order, as many as fit in 2,048 bytes; commas in its URLs are written %2C.',
          schema: { type: 'string' },
        },
        ETag: {
          description: 'A strong validator of the body; If-None-Match answers 304. Absent on private documents.',
          schema: { type: 'string' },
        },
        Location: {
          description: 'The address of the new or current resource.',
          schema: { type: 'string', format: 'uri-reference' },
        },
        RetryAfter: { description: 'Seconds until trying again makes sense.', schema: { type: 'integer', minimum: 0 } },
      },
      responses: Object.fromEntries(
        problemCodes.map((code) => [
          `Problem${code}`,
          {
            description: reasons[code],
            ...(code === '429' || code === '503'
              ? { headers: { 'Retry-After': { $ref: '#/components/headers/RetryAfter' } } }
              : {}),
            content: {
              'application/problem+json': { schema: schema('problem') },
              'application/problem+xml': { schema: xml('problem') },
              'text/html': { schema: html },
            },
          },
        ]),
      ),
      schemas: inputs,
    },
  };
}

/** getPersonPerson for /person/{person}, getPersonPhp for /person.php, getRoot for /. */
function operationName(path: string): string {
  const words = path
    .replace(/\.php$/, '/php')
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean);
  return words.map((w) => w[0]?.toUpperCase() + w.slice(1)).join('') || 'Root';
}
