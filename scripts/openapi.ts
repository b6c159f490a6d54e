// The interface described for client writers: OpenAPI 3.1 at /openapi.json. Every address in
// both styles (the rewritten one and the script's), its parameters, its representations with
// their schemas (/schema/…), the changes with their bodies, the answers and problem documents,
// and how a client identifies itself. test/openapi.test.ts checks it against the rewrite table.
import type { Document, LinkFn, ScriptRequest } from '../lib/page/index.ts';

/** JSON only, as an OpenAPI document. */
export const only = { format: 'json', type: 'application/vnd.oai.openapi+json;version=3.1' } as const;

// It depends on nothing but the request's origin.
export const cacheable = true;

export async function GET(): Promise<Document<null>> {
  return { path: '/openapi', title: 'OpenAPI', data: null };
}

type Json = Record<string, unknown>;
type Method = 'get' | 'post' | 'put' | 'delete';

/** One resource: its two addresses, parameters and operations. */
interface Resource {
  /** The rewritten address with {parameters} in its path, and the script's name. */
  path: string;
  script: string;
  /** Path parameters of the rewritten address, which the script's address takes as query parameters of the same name. */
  pathParams?: Json[];
  /** Query parameters of both. */
  query?: Json[];
  operations: Partial<Record<Method, Json>>;
}

const problemCodes = ['400', '403', '404', '405', '406', '409', '410', '413', '415', '422', '429', '503'] as const;
const reasons: Record<string, string> = {
  '400': 'The request is malformed: a parameter, a header or the body.',
  '403': 'Not allowed: log in, or this account may not do it; a change from another origin or without the CSRF token.',
  '404': 'There is no such resource.',
  '405': 'The method is not supported here; Allow lists those that are.',
  '406': 'None of the representations is acceptable; the document lists those there are.',
  '409': 'The change conflicts with the data, e.g. a work on loan.',
  '410': 'The resource has been deleted.',
  '413': 'The body is larger than this change takes: a picture over the size limit.',
  '415': 'The body is of a type this change does not take.',
  '422': 'The body is well-formed but its fields are invalid; errors names each.',
  '429': 'Too many failed logins from this address; Retry-After says when to try again.',
  '503': 'The database is unavailable or the server is busy; Retry-After says when to try again.',
};

function param(name: string, where: 'path' | 'query', schema: Json, description: string, extra: Json = {}): Json {
  return { name, in: where, required: where === 'path', schema, description, ...extra };
}

const id = { type: 'integer', minimum: 1 };
const slug = { type: 'string', pattern: '^[a-z0-9]+(-[a-z0-9]+)*$' };
const params = {
  // One path: /person/42 is the id 42, a slug always has a letter (docs/interface.md, URLs).
  person: param('person', 'path', { type: 'string', pattern: '^(?:[0-9]+|[a-z0-9]+(?:-[a-z0-9]+)*)$' }, 'The person\'s id (all digits) or slug (made from the name; an old slug answers 301).'),
  pid: param('pid', 'query', id, 'The person\'s id.'),
  slug: param('slug', 'query', slug, 'The person\'s slug.'),
  id: param('id', 'path', id, 'The work\'s id.'),
  uid: param('uid', 'path', id, 'The account\'s id.'),
  wid: param('wid', 'path', id, 'The work\'s id.'),
  offset: param('offset', 'query', { type: 'integer', minimum: 0, default: 0 }, 'The first entry of the page, 0-based.'),
  back: param('back', 'query', { type: 'string' }, 'A path on this site to go to after logging in.'),
  query: param('query', 'query', { type: 'array', items: { type: 'string', pattern: '^[a-z]+,[a-z_]+,.*$' }, maxItems: 5 },
    'A condition as Primo writes it, field,match,term[,AND|OR|NOT] (any, title, creator, desc, rtype, cdate; contains, exact, begins_with); the fourth part joins it with the next condition, AND when absent. A contains term takes words, "phrases", AND, OR, NOT and the wildcards * and ?.', { style: 'form', explode: true }),
  tab: param('tab', 'query', { type: 'string', default: 'default_tab' }, 'Primo\'s tab; kept in the links. Another installation\'s tab is answered with ours.'),
  scope: param('search_scope', 'query', { type: 'string', default: 'default_scope' }, 'Primo\'s search scope: default_scope, personen, werke; kept in the links. Another installation\'s scope is answered with ours.'),
  vid: param('vid', 'query', { type: 'string', default: 'portfolio' }, 'The view: the look of the HTML list (portfolio, druck). Another installation\'s view is answered with ours.'),
  sortby: param('sortby', 'query', { type: 'string', enum: ['rank', 'title', 'author', 'date_d', 'date_a'], default: 'rank' }, 'The order of the hits.'),
  facet: param('facet', 'query', { type: 'array', items: { type: 'string', pattern: '^(rtype|creator|decade),(include|exclude),.+$' }, maxItems: 10 },
    'A facet as Primo writes it, name,include|exclude,value (rtype, creator, decade); a value of rtype is at most 100 characters, of creator 401. With the terms, a search is at most 1,536 characters as its links write it.', { style: 'form', explode: true }),
  lang: param('lang', 'query', { type: 'string' }, 'Primo\'s interface language; kept in the links.'),
  personen: param('personen', 'query', { type: 'integer', minimum: 1 }, 'A part of the sitemap index: persons of one range of ids.'),
  werke: param('werke', 'query', { type: 'integer', minimum: 1 }, 'A part of the sitemap index: works of one range of ids.'),
};

export function toJson(_data: null, link: LinkFn): Json {
  const schema = (name: string) => ({ $ref: link(`/schema/${name}.json`) });
  const xml = (name: string) => ({ type: 'string', description: `XML; its XML Schema is ${link(`/schema/${name}.xsd`)}.`, externalDocs: { url: link(`/schema/${name}.xsd`) } });
  const html = { type: 'string', description: 'An HTML page.' };
  /** The representations of a document whose schemas are named `name`: HTML, XML (unless json only) and JSON; a form's fields as plain JSON. */
  const documents = (name: string | null, only?: 'json') => ({
    'text/html': { schema: html },
    ...(name && only !== 'json' ? { 'application/xml': { schema: xml(name) } } : {}),
    'application/json': { schema: name ? schema(name) : { type: 'object', description: 'The form\'s fields and messages.' } },
  });
  const ok = (description: string, name: string | null, only?: 'json') => ({ description, headers: { Link: { $ref: '#/components/headers/Link' }, ETag: { $ref: '#/components/headers/ETag' } }, content: documents(name, only) });
  const problems = (...codes: (typeof problemCodes)[number][]) => Object.fromEntries(codes.map((code) => [code, { $ref: `#/components/responses/Problem${code}` }]));
  const body = (name: string, form: Json) => ({
    required: true,
    content: {
      'application/json': { schema: { $ref: `#/components/schemas/${name}` } },
      'application/xml': { schema: { type: 'string', description: `The ${name.replace('Input', '').toLowerCase()} in the shape of its XML representation.` } },
      'application/x-www-form-urlencoded': { schema: form },
    },
  });
  const changing = { security: [{ basic: [] }, { session: [], csrf: [] }] };
  const created = (what: string, name: string) => ({ description: `Created: Location names the new ${what}, the body is its representation (a form gets 303 to it).`, headers: { Location: { $ref: '#/components/headers/Location' } }, content: documents(name) });
  const seeOther = { description: 'A form\'s change is done: see the page Location names.', headers: { Location: { $ref: '#/components/headers/Location' } } };
  const noContent = { description: 'Done; nothing to show.' };
  const personForm = { type: 'object', properties: { vorname: { type: 'string' }, nachname: { type: 'string' }, username: { type: 'string' }, image: { type: 'string' }, csrf_token: { type: 'string' }, _method: { enum: ['PUT', 'DELETE'] } } };
  const werkForm = { type: 'object', properties: { titel: { type: 'string' }, jahr: { type: 'string' }, art: { type: 'string' }, beschreibung: { type: 'string' }, csrf_token: { type: 'string' }, _method: { enum: ['PUT', 'DELETE'] } } };
  const loanForm = { type: 'object', properties: { werk: { type: 'string' }, bis: { type: 'string', format: 'date' }, csrf_token: { type: 'string' } } };
  const form = (what: string) => ({ get: { summary: `The form that ${what}.`, responses: { 200: ok('The form.', null), ...problems('403', '404', '410') } } });

  const person: Omit<Resource, 'path' | 'script'> = {
    pathParams: [params.person],
    operations: {
      get: { summary: 'A person with their works.', responses: { 200: ok('The person.', 'person'), 301: { description: 'An old slug: Location names the current one.' }, ...problems('404', '406', '410') } },
      put: { summary: 'Changes a person.', ...changing, requestBody: body('PersonInput', personForm), responses: { 200: ok('The person as changed.', 'person'), 303: seeOther, ...problems('400', '403', '404', '410', '415', '422') } },
      delete: { summary: 'Deletes a person and their works.', ...changing, responses: { 204: noContent, 303: seeOther, ...problems('403', '404', '409', '410') } },
    },
  };
  const personWorks: Omit<Resource, 'path' | 'script'> = {
    pathParams: [params.person],
    operations: {
      get: { summary: 'Leads to the person.', responses: { 303: { description: 'See the person.' }, ...problems('404', '410') } },
      post: { summary: 'Adds a work to the person.', ...changing, requestBody: body('WerkInput', werkForm), responses: { 201: created('work', 'werk'), 303: seeOther, ...problems('400', '403', '404', '410', '415', '422') } },
    },
  };
  const atom = { description: 'An Atom feed (RFC 4287).', content: { 'application/atom+xml': { schema: { type: 'string' } } } };

  const resources: Resource[] = [
    { path: '/', script: 'index', operations: { get: { summary: 'The start page: counts, the newest works, where to search.', responses: { 200: ok('The start page.', 'index'), ...problems('406') } } } },
    { path: '/index', script: 'index', operations: {} },
    {
      path: '/personen', script: 'personen', query: [params.offset],
      operations: {
        get: { summary: 'The persons, 50 a page, by name.', responses: { 200: ok('A page of the person list.', 'personen'), ...problems('400', '406') } },
        post: { summary: 'Creates a person (librarians).', ...changing, requestBody: body('PersonInput', personForm), responses: { 201: created('person', 'person'), 303: seeOther, ...problems('400', '403', '415', '422') } },
      },
    },
    { path: '/person/{person}', script: 'person', ...person },
    { path: '/werk/{id}', script: 'werk', pathParams: [params.id], operations: {
      get: { summary: 'A work.', responses: { 200: ok('The work.', 'werk'), ...problems('404', '406', '410') } },
      put: { summary: 'Changes a work.', ...changing, requestBody: body('WerkInput', werkForm), responses: { 200: ok('The work as changed.', 'werk'), 303: seeOther, ...problems('400', '403', '404', '410', '415', '422') } },
      delete: { summary: 'Deletes a work.', ...changing, responses: { 204: noContent, 303: seeOther, ...problems('403', '404', '409', '410') } },
    } },
    { path: '/search', script: 'search', query: [params.query, params.tab, params.scope, params.vid, params.sortby, params.facet, params.lang, params.offset], operations: {
      get: { summary: 'Search, in Primo\'s deep-link format: 10 hits a page, by rank, with facets.', responses: { 200: ok('A page of the search result list.', 'search'), ...problems('400', '406', '503') } },
    } },
    { path: '/entlehnte/{uid}', script: 'entlehnte', pathParams: [params.uid], query: [params.offset], operations: {
      get: { summary: 'The works an account has on loan (the account itself and librarians).', security: [{ basic: [] }, { session: [] }], responses: { 200: ok('A page of the loan list.', 'entlehnte'), ...problems('403', '404', '406') } },
      post: { summary: 'Lends a work (librarians).', ...changing, requestBody: body('LoanInput', loanForm), responses: { 201: created('loan', 'entlehnung'), 303: seeOther, ...problems('400', '403', '404', '409', '415', '422') } },
    } },
    { path: '/entlehnte/{uid}/{wid}', script: 'entlehnung', pathParams: [params.uid, params.wid], operations: {
      get: { summary: 'One loan (the borrower and librarians).', security: [{ basic: [] }, { session: [] }], responses: { 200: ok('The loan.', 'entlehnung'), ...problems('403', '404', '406') } },
      delete: { summary: 'Records the return (librarians).', ...changing, responses: { 204: noContent, 303: seeOther, ...problems('403', '404', '409') } },
    } },
    { path: '/login', script: 'login', query: [params.back], operations: {
      get: { summary: 'The login form; for an API client, whom its credentials identify.', responses: { 200: ok('The login form, or in JSON whom the credentials identify.', 'login', 'json'), ...problems('406') } },
      post: { summary: 'Logs in with the form\'s token: a session cookie.', requestBody: { required: true, content: { 'application/x-www-form-urlencoded': { schema: { type: 'object', required: ['username', 'password', 'csrf_token'], properties: { username: { type: 'string' }, password: { type: 'string' }, csrf_token: { type: 'string' }, back: { type: 'string' } } } } } }, responses: { 303: seeOther, ...problems('400', '403', '429', '503') } },
    } },
    { path: '/logout', script: 'logout', operations: {
      post: { summary: 'Ends the session.', security: [{ session: [], csrf: [] }], requestBody: { required: true, content: { 'application/x-www-form-urlencoded': { schema: { type: 'object', properties: { csrf_token: { type: 'string' } } } } } }, responses: { 303: seeOther, ...problems('403') } },
    } },
    { path: '/me', script: 'me', operations: {
      get: { summary: 'Whom the credentials identify, for the pages\' script; private, never stored. Usually asked for as /me.json.', responses: { 200: { description: 'Who is looking, or angemeldet null.', content: { 'application/json': { schema: schema('me') } } }, ...problems('406') } },
    } },
    { path: '/personen/neu', script: 'person-neu', operations: form('creates a person') },
    { path: '/person/{person}/bearbeiten', script: 'person-bearbeiten', pathParams: [params.person], operations: form('changes or deletes a person') },
    { path: '/person/{person}/loeschen', script: 'person-loeschen', pathParams: [params.person], operations: form('confirms deleting a person, with the number of their works') },
    { path: '/person/{person}/bild', script: 'person-bild', pathParams: [params.person], operations: {
      ...form('uploads a picture of a person'),
      post: {
        summary: 'Sets the person\'s picture (the person\'s own account and librarians): a JPEG, PNG or WebP, stored in 160 and 480 pixels square as WebP under a content-hash name; image then names the larger one.',
        ...changing,
        requestBody: { required: true, content: {
          'multipart/form-data': { schema: { type: 'object', required: ['bild'], properties: { bild: { type: 'string', contentMediaType: 'image/*' }, csrf_token: { type: 'string' } } } },
          ...Object.fromEntries(['image/jpeg', 'image/png', 'image/webp'].map((type) => [type, { schema: { type: 'string', contentMediaType: type } }])),
        } },
        responses: { 200: ok('The person with the new picture.', 'person'), 303: seeOther, ...problems('400', '403', '404', '410', '413', '415', '422', '503') },
      },
    } },
    { path: '/person/{person}/werke', script: 'person-werke', ...personWorks },
    { path: '/person/{person}/werke/neu', script: 'werk-neu', pathParams: [params.person], operations: form('adds a work to a person') },
    { path: '/werk/{id}/bearbeiten', script: 'werk-bearbeiten', pathParams: [params.id], operations: form('changes or deletes a work') },
    { path: '/werk/{id}/loeschen', script: 'werk-loeschen', pathParams: [params.id], operations: form('confirms deleting a work') },
    { path: '/feed', script: 'feed', operations: { get: { summary: 'The 50 newest works.', responses: { 200: atom, ...problems('406') } } } },
    { path: '/person/{person}/feed', script: 'feed', pathParams: [params.person], operations: { get: { summary: 'A person\'s 50 newest works.', responses: { 200: atom, 301: { description: 'An old slug.' }, ...problems('404', '406', '410') } } } },
    { path: '/sitemap', script: 'sitemap', query: [params.personen, params.werke], operations: { get: { summary: 'The sitemap (sitemaps.org), or its index of parts beyond 50,000 addresses; usually asked for as /sitemap.xml.', responses: { 200: { description: 'A urlset or a sitemapindex.', content: { 'application/xml': { schema: { type: 'string' } } } }, ...problems('400', '404') } } } },
    { path: '/robots.txt', script: 'robots', operations: { get: { summary: 'robots.txt, naming the sitemap.', responses: { 200: { description: 'The rules for crawlers.', content: { 'text/plain': { schema: { type: 'string' } } } } } } } },
    { path: '/openapi', script: 'openapi', operations: { get: { summary: 'This document; usually asked for as /openapi.json.', responses: { 200: { description: 'OpenAPI 3.1.', content: { 'application/vnd.oai.openapi+json;version=3.1': { schema: { type: 'object' } } } } } } } },
  ];

  const paths: Json = {};
  const scriptPaths: Record<string, Json> = {};
  for (const resource of resources) {
    const operations = resource.path === '/index' ? (resources[0] as Resource).operations : resource.operations;
    const { pathParams = [], query = [] } = resource;
    const suffixNote = resource.script === 'robots' ? '' : ' The suffixes .html, .xml and .json name a representation instead of Accept.';
    paths[resource.path] = {
      ...(pathParams.length + query.length > 0 ? { parameters: [...pathParams, ...query] } : {}),
      ...Object.fromEntries(Object.entries(operations).map(([method, op]) => [method, { ...op, operationId: `${method}${operationName(resource.path)}`, description: `${(op as Json).summary as string}${suffixNote}` }])),
    };
    // The script's address: the path parameters become query parameters; one entry per script.
    const entry = (scriptPaths[`/${resource.script}.php`] ??= { parameters: new Map<string, Json>(), operations: {} });
    // /person/{person} is person.php?pid=… or ?slug=….
    const asQuery = [...pathParams, ...query].flatMap((p) => (p === params.person ? [params.pid, params.slug] : [p]));
    for (const p of asQuery) (entry.parameters as Map<string, Json>).set(p.name as string, { ...p, in: 'query', required: false });
    for (const [method, op] of Object.entries(operations)) {
      (entry.operations as Json)[method] ??= { ...op, operationId: `${method}${operationName(`/${resource.script}.php`)}`, description: `${(op as Json).summary as string} The address the PHP site had; the same script as ${resource.path}.` };
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
      description: 'Persons, their works, loan lists and search result lists as documents, each at one stable URL, in HTML, XML and JSON (Accept, or the suffix .html, .xml, .json). Every resource also answers at the address of the PHP site it replaces (/person.php?pid=1).',
    },
    servers: [{ url: link('') || '/' }],
    paths,
    components: {
      securitySchemes: {
        basic: { type: 'http', scheme: 'basic', description: 'An account\'s name and password; creates no session. Changes with it must send JSON or XML.' },
        session: { type: 'apiKey', in: 'cookie', name: 'portfolio_session', description: 'The session cookie that POST /login sets.' },
        csrf: { type: 'apiKey', in: 'header', name: 'X-CSRF-Token', description: 'The session\'s CSRF token (the form field csrf_token), required with the session cookie for every change.' },
      },
      headers: {
        Link: { description: 'The canonical address, the other representations (rel="alternate"), and for a page of a list the next, previous, first and last pages (RFC 8288), in that order, as many as fit in 2,048 bytes; commas in its URLs are written %2C.', schema: { type: 'string' } },
        ETag: { description: 'A strong validator of the body; If-None-Match answers 304. Absent on private documents.', schema: { type: 'string' } },
        Location: { description: 'The address of the new or current resource.', schema: { type: 'string', format: 'uri-reference' } },
        RetryAfter: { description: 'Seconds until trying again makes sense.', schema: { type: 'integer', minimum: 0 } },
      },
      responses: Object.fromEntries(problemCodes.map((code) => [`Problem${code}`, {
        description: reasons[code],
        ...(code === '429' || code === '503' ? { headers: { 'Retry-After': { $ref: '#/components/headers/RetryAfter' } } } : {}),
        content: {
          'application/problem+json': { schema: schema('problem') },
          'application/problem+xml': { schema: xml('problem') },
          'text/html': { schema: html },
        },
      }])),
      schemas: {
        PersonInput: {
          type: 'object', required: ['vorname', 'nachname'],
          properties: {
            vorname: { type: 'string', minLength: 1, maxLength: 200 }, nachname: { type: 'string', minLength: 1, maxLength: 200 },
            username: { type: 'string', description: 'Required for a new person; a PUT without it keeps the current one.' },
            image: { type: 'string', description: 'An http(s) URL or a path on this site; empty for the placeholder.' },
          },
        },
        WerkInput: {
          type: 'object', required: ['titel'],
          properties: {
            titel: { type: 'string', minLength: 1, maxLength: 300 }, jahr: { type: ['integer', 'null'], minimum: -3000, maximum: 3000 },
            art: { type: 'string', maxLength: 100 }, beschreibung: { type: 'string', maxLength: 10000 },
          },
        },
        LoanInput: {
          type: 'object', required: ['url'],
          properties: { url: { type: 'string', description: 'The work\'s address on this site, or its id.' }, bis: { type: 'string', format: 'date', description: 'The due date; absent: four weeks from today.' } },
        },
      },
    },
  };
}

/** getPersonPerson for /person/{person}, getPersonPhp for /person.php, getRoot for /. */
function operationName(path: string): string {
  const words = path.replace(/\.php$/, '/php').split(/[^A-Za-z0-9]+/).filter(Boolean);
  return words.map((w) => w[0]?.toUpperCase() + w.slice(1)).join('') || 'Root';
}
