// The schemas of public/schema/ (docs/interface.md, Schemas) against the server's own documents:
// every XML document through xmllint --schema, every JSON document through ajv (draft 2020-12),
// for the demo data (every person, work, page, loan), 200 generated persons with 5 works each,
// hostile text stored through the API and, for control characters, straight into the database,
// and the problem details of errors. The schemas themselves compile and are served under /schema/.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { ValidateFunction } from 'ajv';
import { Ajv2020 } from 'ajv/dist/2020.js';
import ajvFormats from 'ajv-formats';
import { generateData } from '../../bin/lib/fill-database.ts';
import { describeSite } from '../../lib/page/index.ts';
import { ScriptLoader } from '../../lib/scripts/index.ts';
import { csrfTokenOf, loanBody, personBody, werkBody } from '../change-helpers.ts';
import type { ApiFormat } from '../change-helpers.ts';
import type { TestServer } from '../helpers.ts';
import { missingTool, rawRequest, root, startTestServer, xmllint } from '../helpers.ts';
import { basic, demo, logInAs, tokenOf } from '../login-helpers.ts';

const schemaDir = path.join(root, 'public/schema');

/**
 * The schemas the scripts name in their OpenAPI fragments (lib/page/api-description.ts), as
 * /openapi.json gathers them: a document's schema is named where its script declares its answers
 * (login and me have JSON only), the problem documents' where the errors are described.
 */
async function declaredSchemas(): Promise<{ xml: string[]; json: string[] }> {
  const loader = new ScriptLoader(path.join(root, 'scripts'), { reload: false });
  const names = { xsd: new Set<string>(), json: new Set<string>() };
  const walk = (value: unknown): void => {
    const named = typeof value === 'string' ? /^\/schema\/([a-z-]+)\.(xsd|json)$/.exec(value) : null;
    if (named) names[named[2] as 'xsd' | 'json'].add(named[1] as string);
    else if (value && typeof value === 'object') for (const inner of Object.values(value)) walk(inner);
  };
  walk(describeSite(await loader.all(), (site) => site));
  return { xml: [...names.xsd].sort(), json: [...names.json].sort() };
}
const declared = await declaredSchemas();
const xmlSchemas = declared.xml;
const jsonSchemas = declared.json;
type SchemaName = string;

const noXmllint = missingTool('/usr/bin/xmllint', 'libxml2-utils');

// --- Validators --------------------------------------------------------------------------

function newAjv(): Ajv2020 {
  // strictRequired is left off: a "required" inside if/then names properties declared beside it.
  const ajv = new Ajv2020({ allErrors: true, strict: true, strictRequired: false });
  (ajvFormats as unknown as { default: (a: Ajv2020) => void }).default(ajv);
  return ajv;
}

function readSchema(file: string): Record<string, unknown> {
  return JSON.parse(readFileSync(path.join(schemaDir, file), 'utf8')) as Record<string, unknown>;
}

const ajv = newAjv();
const validators = new Map<SchemaName, ValidateFunction>();
function validatorOf(name: SchemaName): ValidateFunction {
  let validate = validators.get(name);
  if (!validate) validators.set(name, (validate = ajv.compile(readSchema(`${name}.json`))));
  return validate;
}

/** A response as read once: status, Content-Type and body. */
interface Fetched {
  label: string;
  status: number;
  type: string;
  body: string;
}

const documentTypes = { xml: 'application/xml; charset=utf-8', json: 'application/json; charset=utf-8' };
const problemTypes = { xml: 'application/problem+xml; charset=utf-8', json: 'application/problem+json; charset=utf-8' };

/** How many documents each test validated, per schema file. */
class Tally {
  readonly counts = new Map<string, number>();
  add(file: string): void {
    this.counts.set(file, (this.counts.get(file) ?? 0) + 1);
  }
  get total(): number {
    let sum = 0;
    for (const n of this.counts.values()) sum += n;
    return sum;
  }
  toString(): string {
    return `${this.total} documents: ${[...this.counts].map(([file, n]) => `${file} ${n}`).join(', ')}`;
  }
}

const overall = new Tally();

/** The document matches its schema, with the status and media type a document or a problem has. */
async function expectValid(
  tally: Tally,
  schema: SchemaName,
  format: ApiFormat,
  doc: Fetched,
  status?: number,
): Promise<void> {
  const where = `${doc.label} (${doc.status} ${doc.type})`;
  if (status !== undefined) assert.equal(doc.status, status, `${where}:\n${doc.body.slice(0, 1000)}`);
  else if (schema === 'problem') assert.ok(doc.status >= 400, where);
  else assert.ok(doc.status === 200 || doc.status === 201, `${where}:\n${doc.body.slice(0, 1000)}`);
  assert.equal(doc.type, (schema === 'problem' ? problemTypes : documentTypes)[format], where);
  const file = `${schema}.${format === 'xml' ? 'xsd' : 'json'}`;
  if (format === 'xml') {
    const { code, messages } = await xmllint(path.join(schemaDir, file), doc.body);
    assert.equal(code, 0, `${where} does not match ${file}:\n${messages}\n${doc.body.slice(0, 3000)}`);
  } else {
    const validate = validatorOf(schema);
    if (!validate(JSON.parse(doc.body))) {
      assert.fail(
        `${where} does not match ${file}:\n${ajv.errorsText(validate.errors, { separator: '\n' })}\n${doc.body.slice(0, 3000)}`,
      );
    }
  }
  tally.add(file);
  overall.add(file);
}

/** Runs one validation test per representation: XML skipped where xmllint is missing, JSON always. */
function bothFormats(name: string, run: (format: ApiFormat, tally: Tally) => Promise<void>): void {
  for (const format of ['xml', 'json'] as const) {
    test(`${name} (${format.toUpperCase()})`, { skip: format === 'xml' ? noXmllint : false }, async (t) => {
      const tally = new Tally();
      await run(format, tally);
      assert.ok(tally.total > 0, 'nothing was validated');
      t.diagnostic(tally.toString());
    });
  }
}

// --- The schemas themselves ------------------------------------------------------------

describe('the schemas', () => {
  test('public/schema/ holds exactly one XSD and one JSON Schema per representation', () => {
    const expected = [...xmlSchemas.map((n) => `${n}.xsd`), ...jsonSchemas.map((n) => `${n}.json`)].sort();
    assert.deepEqual(readdirSync(schemaDir).sort(), expected);
  });

  for (const name of jsonSchemas) {
    test(`${name}.json is a draft 2020-12 schema that compiles in strict mode, closed, with $id, title and description`, () => {
      const schema = readSchema(`${name}.json`);
      assert.equal(schema.$schema, 'https://json-schema.org/draft/2020-12/schema');
      assert.equal(schema.$id, `${name}.json`);
      assert.equal(typeof schema.title, 'string');
      assert.match(schema.description as string, /^[A-Z].{20,}/);
      assert.equal(schema.additionalProperties, false);
      const fresh = newAjv();
      assert.equal(fresh.validateSchema(schema), true, fresh.errorsText());
      fresh.compile(schema);
      // Every object anywhere in it is closed, and names what it requires.
      const open: string[] = [];
      (function walk(node: unknown, at: string): void {
        if (Array.isArray(node)) return node.forEach((item, i) => walk(item, `${at}/${i}`));
        if (node === null || typeof node !== 'object') return;
        const object = node as Record<string, unknown>;
        if (object.type === 'object' && (object.additionalProperties !== false || !Array.isArray(object.required)))
          open.push(at);
        for (const [key, value] of Object.entries(object)) walk(value, `${at}/${key}`);
      })(schema, '#');
      assert.deepEqual(open, []);
    });
  }

  for (const name of xmlSchemas) {
    test(`${name}.xsd is an XML Schema that xmllint compiles`, { skip: noXmllint }, async () => {
      const file = path.join(schemaDir, `${name}.xsd`);
      const xsd = readFileSync(file, 'utf8');
      assert.match(xsd, /^<\?xml version="1\.0" encoding="UTF-8"\?>\n/);
      assert.match(xsd, /<xs:schema xmlns:xs="http:\/\/www\.w3\.org\/2001\/XMLSchema"/);
      assert.doesNotMatch(xsd, /<xs:any[ >]|<xs:anyAttribute|processContents="lax"/, 'closed content: no wildcards');
      // A document with an undeclared root fails validation (exit 3), not the schema's compilation (exit 5).
      const { code, messages } = await xmllint(file, '<undeclared/>');
      assert.equal(code, 3, messages);
      assert.match(messages, /No matching global declaration available for the validation root/);
      assert.doesNotMatch(messages, /failed to compile|parser error/);
    });
  }

  describe('they refuse what the server never writes', () => {
    const person = {
      image: 'http://127.0.0.1:8080/img/max-muster.svg',
      vorname: 'Max',
      nachname: 'Muster',
      werk: [{ titel: 'Hafen im Nebel', url: 'http://127.0.0.1:8080/werk/2' }],
    };
    const cases: [string, SchemaName, unknown][] = [
      ['an extra property', 'person', { ...person, username: 'mmuster' }],
      ['a missing property', 'person', { image: person.image, vorname: 'Max', nachname: 'Muster' }],
      ['an extra property of a work in the list', 'person', { ...person, werk: [{ ...person.werk[0], jahr: 1 }] }],
      ['a URL that is no URI', 'person', { ...person, werk: [{ titel: 'x', url: 'werk/2' }] }],
      ['an empty name', 'person', { ...person, vorname: '' }],
      [
        'a year as a string',
        'werk',
        {
          titel: 'T',
          url: 'http://h/werk/1',
          jahr: '1986',
          art: '',
          beschreibung: '',
          person: { vorname: 'A', nachname: 'B', url: 'http://h/person/a-b' },
          personen: 'http://h/personen',
        },
      ],
      [
        'a missing next on a list page',
        'personen',
        { total: 0, offset: 0, limit: 50, url: 'http://h/personen', previous: null, person: [] },
      ],
      [
        'a work hit without its person',
        'search',
        {
          query: ['any,contains,x'],
          tab: 'default_tab',
          search_scope: 'default_scope',
          vid: 'portfolio',
          total: 1,
          offset: 0,
          limit: 10,
          url: 'http://h/search?query=any,contains,x&tab=default_tab&search_scope=default_scope&vid=portfolio',
          previous: null,
          next: null,
          treffer: [{ typ: 'werk', titel: 'x', url: 'http://h/werk/1' }],
        },
      ],
      [
        'a date that is no day',
        'entlehnung',
        {
          url: 'http://h/entlehnte/2/14',
          benutzer: { name: 'mmuster', entlehnte: 'http://h/entlehnte/2' },
          werk: { titel: 'T', url: 'http://h/werk/14' },
          person: { name: 'A B', url: 'http://h/person/a-b' },
          seit: '2026-02-30',
          bis: '2026-03-01',
          zurueck: null,
          ueberfaellig: false,
        },
      ],
      [
        'alternates on a 404',
        'problem',
        {
          type: 'about:blank',
          title: 'Not Found',
          status: 404,
          detail: '',
          alternates: [{ format: 'html', type: 'text/html', href: 'http://h/x.html' }],
        },
      ],
      [
        'a 406 without alternates',
        'problem',
        { type: 'about:blank', title: 'Not Acceptable', status: 406, detail: 'x' },
      ],
      ['a 200 as a problem', 'problem', { type: 'about:blank', title: 'OK', status: 200, detail: 'x' }],
    ];
    for (const [what, schema, value] of cases) {
      test(`${schema}.json refuses ${what}`, () => {
        assert.equal(validatorOf(schema)(value), false);
      });
    }

    const xmlCases: [string, string, string][] = [
      [
        'an element it does not declare',
        'person',
        '<person><image ref="http://h/img/x.svg"/><vorname>A</vorname><nachname>B</nachname><username>ab</username><werke/><extra/></person>',
      ],
      [
        'an attribute it does not declare',
        'werk',
        '<werk ref="http://h/werk/1" id="1"><titel>T</titel><jahr/><art/><beschreibung/><person ref="http://h/person/a-b"><vorname>A</vorname><nachname>B</nachname></person><personen ref="http://h/personen"/></werk>',
      ],
      [
        'a year out of range',
        'werk',
        '<werk ref="http://h/werk/1"><titel>T</titel><jahr>3001</jahr><art/><beschreibung/><person ref="http://h/person/a-b"><vorname>A</vorname><nachname>B</nachname></person><personen ref="http://h/personen"/></werk>',
      ],
      [
        'elements out of order',
        'personen',
        '<personen ref="http://h/personen" total="0" offset="0" limit="50"><next ref="http://h/personen?offset=50"/><previous ref="http://h/personen"/></personen>',
      ],
      [
        'another page size',
        'search',
        '<suche ref="http://h/search?tab=default_tab&amp;search_scope=default_scope&amp;vid=portfolio" tab="default_tab" search_scope="default_scope" vid="portfolio" total="0" offset="0" limit="20"/>',
      ],
      [
        'a problem outside its namespace',
        'problem',
        '<problem><type>about:blank</type><title>Not Found</title><status>404</status><detail/></problem>',
      ],
    ];
    for (const [what, schema, xml] of xmlCases) {
      test(`${schema}.xsd refuses ${what}`, { skip: noXmllint }, async () => {
        const { code, messages } = await xmllint(path.join(schemaDir, `${schema}.xsd`), xml);
        assert.equal(code, 3, messages);
      });
    }
  });
});

// --- A server and its documents ----------------------------------------------------------

function client(server: () => TestServer) {
  return async function get(
    target: string,
    options: { headers?: Record<string, string>; method?: string; body?: string } = {},
  ): Promise<Fetched> {
    const res = await fetch(server().origin + target, {
      method: options.method ?? 'GET',
      redirect: 'manual',
      headers: options.headers ?? {},
      ...(options.body === undefined ? {} : { body: options.body }),
    });
    const label = `${options.method ?? 'GET'} ${target}`;
    return { label, status: res.status, type: res.headers.get('content-type') ?? '', body: await res.text() };
  };
}

/** The column v of a statement's rows on the server's database. */
function columnOf(server: () => TestServer) {
  return async <T>(sql: string): Promise<T[]> => (await server().db.query<{ v: T }>(sql)).map((row) => row.v);
}

/** A target in the representation asked for: the suffix goes before the query. */
function as(format: ApiFormat, target: string): string {
  const mark = target.indexOf('?');
  return mark === -1 ? `${target}.${format}` : `${target.slice(0, mark)}.${format}${target.slice(mark)}`;
}

const accepts: Record<ApiFormat, string> = { xml: 'application/xml', json: 'application/json' };

describe('the demo data', () => {
  let server: TestServer;
  const get = client(() => server);
  /** Session cookies: no scrypt for each request, as Basic credentials cost. */
  const cookies: Record<string, string> = {};

  before(async () => {
    // Production: the public documents are kept rendered, as clients get them.
    server = await startTestServer({ NODE_ENV: 'production' });
    for (const user of ['bibliothek', 'mmuster'] as const) cookies[user] = await logInAs(server.origin, user);
  });
  after(() => server.close());

  const column = columnOf(() => server);

  bothFormats('every person, by slug and by id', async (format, tally) => {
    for (const slug of await column<string>('SELECT slug AS v FROM person ORDER BY id')) {
      await expectValid(tally, 'person', format, await get(`/person/${slug}.${format}`), 200);
    }
    for (const id of await column<number>('SELECT id AS v FROM person ORDER BY id LIMIT 3')) {
      await expectValid(
        tally,
        'person',
        format,
        await get(`/person.php?pid=${id}`, { headers: { accept: accepts[format] } }),
        200,
      );
    }
  });

  bothFormats('every work', async (format, tally) => {
    for (const id of await column<number>('SELECT id AS v FROM werk ORDER BY id')) {
      await expectValid(tally, 'werk', format, await get(`/werk/${id}.${format}`), 200);
    }
  });

  bothFormats('every page of the person list, one in between and one past the end', async (format, tally) => {
    const [total] = await column<number>('SELECT count(*)::int AS v FROM person');
    const offsets = [7, (total as number) + 100, 999999999];
    for (let offset = 0; offset < (total as number); offset += 50) offsets.push(offset);
    for (const offset of offsets)
      await expectValid(tally, 'personen', format, await get(as(format, `/personen?offset=${offset}`)), 200);
    await expectValid(tally, 'personen', format, await get('/personen', { headers: { accept: accepts[format] } }), 200);
  });

  bothFormats('the start page in every URL form', async (format, tally) => {
    await expectValid(tally, 'index', format, await get(`/index.${format}`), 200);
    await expectValid(tally, 'index', format, await get('/', { headers: { accept: accepts[format] } }), 200);
    await expectValid(tally, 'index', format, await get('/index.php', { headers: { accept: accepts[format] } }), 200);
  });

  const searches = [
    '', // the empty search page
    'query=any,contains,m%C3%BCller',
    'query=creator,contains,m%C3%BCller',
    'query=title,begins_with,nacht',
    'query=title,exact,Nachtschicht',
    'query=creator,exact,J%C3%BCrgen%20M%C3%BCller',
    'query=any,begins_with,%C3%9C',
    'query=any,contains,zzzzzz',
    'query=any,contains,ge*%20OR%20st*',
    'query=any,contains,ge*%20OR%20st*&offset=10',
    'query=any,contains,ge*%20OR%20st*&offset=80',
    'query=any,contains,ge*%20OR%20st*&offset=1000',
    'query=any,contains,m%C3%BCller&sortby=date_d&facet=rtype,include,Fotografie&facet=decade,exclude,2010&lang=de',
    'query=any,contains,m%C3%BCller&facet=creator,include,J%C3%BCrgen%20M%C3%BCller&sortby=author',
    'query=title,contains,nebel%20OR%20deich%20NOT%20%22am%20deich%22,OR&query=desc,contains,leinwand&query=rtype,exact,Roman',
    'query=cdate,contains,1988&vid=01XYZ_INST:MAIN&tab=Everything&search_scope=MyInst_and_CI&mode=advanced',
    'query=any,contains,muellr',
    'query=any,contains,a&query=title,contains,e&search_scope=werke&vid=druck',
    'query=creator,begins_with,m&search_scope=personen',
    'query=title,contains,e&search_scope=personen',
    'query=any,contains,%25_',
    'query=any,contains,a,b,c',
    'query=any,contains,%20%20Meer%20%20',
    'query=any,contains,%22das%22&tab=default_tab&vid=portfolio&search_scope=default_scope',
    // The longest term: 200 characters, in words of 100 letters at most (longer ones are 400).
    `query=any,contains,${'x'.repeat(100)}%20${'x'.repeat(99)}`,
    'query=any,contains,e&query=any,contains,r&query=any,contains,i&query=any,contains,n&query=any,contains,s',
  ];
  bothFormats(
    'searches: every field and match type, several conditions, scopes, empty results and paging',
    async (format, tally) => {
      for (const search of searches)
        await expectValid(tally, 'search', format, await get(`/search.${format}?${search}`), 200);
      await expectValid(
        tally,
        'search',
        format,
        await get('/search.php?query=any,contains,ge*%20OR%20st*&offset=20', { headers: { accept: accepts[format] } }),
        200,
      );
      // Every page of a long result, following next.
      let next: string | null = `/search.${format}?query=any,contains,ge*%20OR%20st*`;
      let pages = 0;
      while (next) {
        const doc = await get(next);
        await expectValid(tally, 'search', format, doc, 200);
        const url: string | null =
          format === 'json'
            ? JSON.parse(doc.body).next
            : (/<next ref="([^"]+)"/.exec(doc.body)?.[1]?.replaceAll('&amp;', '&') ?? null);
        next = url === null ? null : as(format, url.slice(server.origin.length));
        pages++;
      }
      assert.ok(pages > 3, `${pages} pages`);
    },
  );

  bothFormats('every loan list and every loan, as a librarian and as the borrower', async (format, tally) => {
    const librarian = { cookie: cookies.bibliothek as string };
    for (const uid of await column<number>('SELECT id AS v FROM account ORDER BY id')) {
      await expectValid(
        tally,
        'entlehnte',
        format,
        await get(`/entlehnte/${uid}.${format}`, { headers: librarian }),
        200,
      );
      await expectValid(
        tally,
        'entlehnte',
        format,
        await get(`/entlehnte/${uid}.${format}?offset=50`, { headers: librarian }),
        200,
      );
    }
    // Returned loans too: the page of a loan keeps working after the return.
    const loans = await server.db.query<{ uid: number; wid: number }>(
      'SELECT account_id AS uid, werk_id AS wid FROM loan ORDER BY id',
    );
    assert.ok(loans.length >= 4);
    for (const { uid, wid } of loans) {
      await expectValid(
        tally,
        'entlehnung',
        format,
        await get(`/entlehnte/${uid}/${wid}.${format}`, { headers: librarian }),
        200,
      );
    }
    // The borrower, with Basic credentials and with a session.
    const owner = { authorization: basic('mmuster', demo.mmuster.password) };
    await expectValid(
      tally,
      'entlehnte',
      format,
      await get(`/entlehnte/${demo.mmuster.id}`, { headers: { ...owner, accept: accepts[format] } }),
      200,
    );
    await expectValid(
      tally,
      'entlehnte',
      format,
      await get(`/entlehnte.php?uid=${demo.mmuster.id}`, {
        headers: { cookie: cookies.mmuster as string, accept: accepts[format] },
      }),
      200,
    );
  });

  bothFormats('a loan list of more than one page', async (format, tally) => {
    // aschaefer borrows every work nobody has, some of them overdue: more than 50 (once; the
    // second run finds nothing left to lend).
    await server.db.query(
      `INSERT INTO loan (account_id, werk_id, since, until)
       SELECT $1, w.id, current_date - 30, current_date + (w.id % 5) - 2 FROM werk w
        WHERE NOT EXISTS (SELECT 1 FROM loan l WHERE l.werk_id = w.id AND l.returned_at IS NULL)`,
      [demo.aschaefer.id],
    );
    const librarian = { cookie: cookies.bibliothek as string };
    const [total] = await column<number>(
      `SELECT count(*)::int AS v FROM loan WHERE account_id = ${demo.aschaefer.id} AND returned_at IS NULL`,
    );
    assert.ok((total as number) > 50, `${total} loans`);
    for (const offset of [0, 1, 50, 100]) {
      await expectValid(
        tally,
        'entlehnte',
        format,
        await get(`/entlehnte/${demo.aschaefer.id}.${format}?offset=${offset}`, { headers: librarian }),
        200,
      );
    }
  });

  test('login.json: anonymous, with a session, with Basic credentials, wrong ones, an expired session and after logging out', async (t) => {
    const tally = new Tally();
    const expired = await logInAs(server.origin, 'mmuster');
    const sha256 = createHash('sha256').update(tokenOf(expired)).digest('hex');
    await server.db.query(`UPDATE session SET last_seen_at = now() - interval '31 minutes' WHERE id = $1`, [sha256]);
    const variants: [string, Record<string, string>, string | null][] = [
      ['/login.json', {}, null],
      ['/login.json', { cookie: cookies.bibliothek as string }, 'librarian'],
      ['/login.json', { cookie: cookies.mmuster as string }, 'user'],
      ['/login.json', { authorization: basic('jmueller', demo.jmueller.password) }, 'user'],
      ['/login.json', { authorization: basic('mmuster', 'wrong-password') }, null],
      ['/login.json', { cookie: expired }, null],
      ['/login.json?logged_out=1', {}, null],
      ['/login.php?back=/entlehnte/2', { accept: 'application/json' }, null],
    ];
    for (const [target, headers, role] of variants) {
      const doc = await get(target, { headers });
      await expectValid(tally, 'login', 'json', doc, 200);
      assert.equal(JSON.parse(doc.body).angemeldet?.rolle ?? null, role, target);
    }
    const messages = await Promise.all([
      get('/login.json', { headers: { cookie: expired } }),
      get('/login.json?logged_out=1'),
    ]);
    assert.deepEqual(
      messages.map((m) => typeof JSON.parse(m.body).meldung),
      ['string', 'string'],
    );
    // A refused login answers the login document, not problem details.
    const refused = await get('/login', {
      method: 'POST',
      headers: { accept: 'application/json', 'content-type': 'application/x-www-form-urlencoded' },
      body: 'username=x&password=y&csrf_token=z',
    });
    await expectValid(tally, 'login', 'json', refused, 403);
    t.diagnostic(tally.toString());
  });

  test('me.json: anonymous, a user with a person, a librarian without one, Basic credentials', async (t) => {
    const tally = new Tally();
    const variants: [Record<string, string>, string | null, string | null, boolean][] = [
      [{}, null, null, false],
      [{ cookie: cookies.mmuster as string }, 'user', `${server.origin}/person/max-muster`, true],
      [{ cookie: cookies.bibliothek as string }, 'librarian', null, true],
      [
        { authorization: basic('jmueller', demo.jmueller.password) },
        'user',
        `${server.origin}/person/juergen-mueller`,
        false,
      ],
    ];
    for (const [headers, role, person, token] of variants) {
      const doc = await get('/me.json', { headers });
      await expectValid(tally, 'me', 'json', doc, 200);
      const { angemeldet } = JSON.parse(doc.body);
      assert.deepEqual(
        [angemeldet?.rolle ?? null, angemeldet?.person ?? null, typeof angemeldet?.csrf_token === 'string'],
        [role, person, token],
      );
    }
    t.diagnostic(tally.toString());
  });

  bothFormats('problem details: 400, 403, 404, 405, 406, 409, 410, 415 and 422', async (format, tally) => {
    const accept = { accept: accepts[format] };
    const problem = async (
      status: number,
      target: string,
      options: { headers?: Record<string, string>; method?: string; body?: string } = {},
    ) =>
      expectValid(
        tally,
        'problem',
        format,
        await get(target, { ...options, headers: { accept: accepts[format], ...options.headers } }),
        status,
      );
    const librarian = {
      cookie: cookies.bibliothek as string,
      'x-csrf-token': await csrfTokenOf(server.origin, cookies.bibliothek as string, '/personen/neu'),
    };
    const type = { 'content-type': accepts[format] };

    await problem(400, as(format, '/search?query=foo,contains,x'));
    await problem(400, '/search?query=any,contains,x&offset=-1');
    await problem(400, '/person.php');
    await problem(400, as(format, '/person/1?slug=max-muster'));
    const badEncoding = await rawRequest(server.origin, `/person/%zz.${format}`);
    await expectValid(
      tally,
      'problem',
      format,
      {
        label: `GET /person/%zz.${format}`,
        status: badEncoding.status,
        type: String(badEncoding.headers['content-type']),
        body: badEncoding.body,
      },
      400,
    );
    await problem(400, '/werk/7', {
      method: 'PUT',
      headers: { ...librarian, ...type },
      body: format === 'json' ? '{"titel": ' : '<werk><titel>',
    });
    await problem(403, as(format, `/entlehnte/${demo.jmueller.id}`));
    await problem(403, `/entlehnte/${demo.jmueller.id}/1`, { headers: { cookie: cookies.mmuster as string } });
    await problem(403, as(format, '/.env'));
    await problem(403, '/personen', {
      method: 'POST',
      headers: { cookie: cookies.mmuster as string, ...type },
      body: personBody(format, { vorname: 'A', nachname: 'B', username: 'ab' }),
    });
    await problem(404, as(format, '/person/niemand'));
    await problem(404, as(format, '/werk/999999'));
    await problem(404, as(format, '/nope'));
    await problem(404, as(format, '/schema/nope'));
    await problem(404, as(format, `/entlehnte/999`), { headers: { cookie: cookies.bibliothek as string } });
    await problem(405, '/search', { method: 'DELETE' });
    await problem(405, '/index', { method: 'PUT', headers: type, body: '{}' });
    // 406: login has no XML; the problem comes in the type Accept ranks first among problem types.
    await expectValid(
      tally,
      'problem',
      format,
      await get(format === 'xml' ? '/login.xml' : '/login', {
        headers: { accept: 'application/xml;q=0.9, application/problem+json' },
      }),
      406,
    );
    await problem(406, '/person/max-muster', { headers: { accept: `image/png, application/problem+${format};q=0.1` } });
    // 409: a work that is on loan already.
    const onLoan = await column<number>('SELECT werk_id AS v FROM loan WHERE returned_at IS NULL ORDER BY id LIMIT 1');
    await problem(409, `/entlehnte/${demo.mmuster.id}`, {
      method: 'POST',
      headers: { ...librarian, ...type },
      body: loanBody(format, { url: String(onLoan[0]) }),
    });
    await problem(409, `/werk/${onLoan[0]}`, { method: 'DELETE', headers: librarian });
    // 410: a work that was deleted.
    const created = await get('/person/max-muster/werke', {
      method: 'POST',
      headers: { ...librarian, ...type, ...accept },
      body: werkBody(format, { titel: `Kurz da (${format})` }),
    });
    await expectValid(tally, 'werk', format, created, 201);
    const werkUrl =
      format === 'json'
        ? (JSON.parse(created.body).url as string)
        : (/<werk ref="([^"]+)"/.exec(created.body)?.[1] as string);
    const werkPath = werkUrl.slice(server.origin.length);
    assert.equal((await get(werkPath, { method: 'DELETE', headers: librarian })).status, 204);
    await problem(410, as(format, werkPath));
    await problem(415, '/personen', {
      method: 'POST',
      headers: {
        authorization: basic('bibliothek', demo.bibliothek.password),
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: 'vorname=A',
    });
    await problem(422, '/werk/7', {
      method: 'PUT',
      headers: { ...librarian, ...type },
      body: werkBody(format, { titel: '', jahr: 5000 }),
    });
    await problem(422, '/personen', {
      method: 'POST',
      headers: { ...librarian, ...type },
      body: personBody(format, {
        vorname: ' ',
        nachname: 'N'.repeat(201),
        username: 'Nicht Gültig',
        image: 'javascript:alert(1)',
      }),
    });
    await problem(422, `/entlehnte/${demo.mmuster.id}`, {
      method: 'POST',
      headers: { ...librarian, ...type },
      body: loanBody(format, { url: 'https://elsewhere.example/werk/1', bis: '2026-02-30' }),
    });
  });

  describe('hostile text', () => {
    // What test/injection.test.ts and test/fuzz.test.ts throw at the site, stored through the API
    // where the API takes it: markup, quotes, entities, CDATA ends, the longest names and titles
    // in characters outside the BMP, direction overrides, noncharacters, and pictures whose
    // addresses are no URIs. Control characters the API refuses go straight into the database.
    const persons = [
      {
        vorname: '<script>alert("x")</script>',
        nachname: "O'Brien & <b>Söhne</b> ]]> &amp;",
        username: 'hostile.markup',
        image: '/img/x.svg?a="><script>alert(2)</script>',
      },
      {
        vorname: '😀'.repeat(200),
        nachname: 'e\u0301'.repeat(100),
        username: 'hostile.long',
        image: 'https://example.org/bär{x}|^`.jpg',
      },
      {
        vorname: '\u202Eevil\u202C',
        nachname: '\uFFFD\uFFFE\uFEFF 漢字 \u2028',
        username: 'hostile.odd',
        image: '/img/%zz#a#b',
      },
    ];
    const works = [
      {
        titel: '</title><img src=x onerror=alert(1)> <!-- "\'',
        jahr: -3000,
        art: '<i>Art</i>',
        beschreibung: 'Zeile 1\n<style>body{display:none}</style>\r\nZeile 3\t]]>',
      },
      { titel: `${'T'.repeat(299)}😀`, jahr: 3000, art: 'a'.repeat(100), beschreibung: 'ü'.repeat(10000) },
      { titel: '0', jahr: null, art: '', beschreibung: '' },
      { titel: '&lt;&#0;&#x1;', jahr: 0, art: '\uFFFE', beschreibung: '\u0085\u00A0\u2029' },
    ];
    const paths: string[] = [];
    const loans: string[] = [];
    let librarian: Record<string, string>;

    before(async () => {
      librarian = {
        cookie: cookies.bibliothek as string,
        'x-csrf-token': await csrfTokenOf(server.origin, cookies.bibliothek as string, '/personen/neu'),
      };
    });

    test('the API stores it and answers with documents that match their schemas', async (t) => {
      const tally = new Tally();
      for (const [i, person] of persons.entries()) {
        const format: ApiFormat = i % 2 === 0 ? 'json' : 'xml';
        const body = personBody(format, person);
        const created = await get('/personen', {
          method: 'POST',
          headers: { ...librarian, 'content-type': accepts[format], accept: accepts[format] },
          body,
        });
        if (format === 'json' || !noXmllint) await expectValid(tally, 'person', format, created, 201);
        const [row] = await server.db.query<{ slug: string; vorname: string }>(
          'SELECT slug, vorname FROM person WHERE username = $1',
          [person.username],
        );
        assert.equal(row?.vorname, person.vorname);
        paths.push(`/person/${row?.slug}`);
        for (const [j, werk] of works.entries()) {
          const werkFormat: ApiFormat = j % 2 === 0 ? 'xml' : 'json';
          const added = await get(`/person/${row?.slug}/werke`, {
            method: 'POST',
            headers: { ...librarian, 'content-type': accepts[werkFormat], accept: accepts[werkFormat] },
            body: werkBody(werkFormat, werk),
          });
          if (werkFormat === 'json' || !noXmllint) await expectValid(tally, 'werk', werkFormat, added, 201);
          const url =
            werkFormat === 'json'
              ? (JSON.parse(added.body).url as string)
              : (/<werk ref="([^"]+)"/.exec(added.body)?.[1] as string);
          paths.push(url.slice(server.origin.length));
        }
      }
      // A change answers with the new representation too (the same names keep the slug).
      const changed = await get(paths[1] as string, {
        method: 'PUT',
        headers: { ...librarian, 'content-type': 'application/json', accept: 'application/json' },
        body: JSON.stringify({ ...works[0], titel: `${works[0]?.titel} (2)` }),
      });
      await expectValid(tally, 'werk', 'json', changed, 200);
      const replaced = await get(paths[0] as string, {
        method: 'PUT',
        headers: { ...librarian, 'content-type': 'application/json', accept: 'application/json' },
        body: JSON.stringify(persons[0]),
      });
      await expectValid(tally, 'person', 'json', replaced, 200);
      // Lent to mmuster: the loan list and the loans show the hostile titles and names.
      for (const path of paths.filter((p) => p.startsWith('/werk/')).slice(0, 6)) {
        const lent = await get(`/entlehnte/${demo.mmuster.id}`, {
          method: 'POST',
          headers: { ...librarian, 'content-type': 'application/json', accept: 'application/json' },
          body: loanBody('json', { url: server.origin + path, bis: '2999-12-31' }),
        });
        await expectValid(tally, 'entlehnung', 'json', lent, 201);
        loans.push(`/entlehnte/${demo.mmuster.id}/${path.slice('/werk/'.length)}`);
      }
      t.diagnostic(tally.toString());
    });

    test('control characters stored straight into the database (the API refuses them)', async () => {
      const [person] = await server.db.query<{ id: number; slug: string }>(
        `INSERT INTO person (slug, vorname, nachname, username, image) VALUES ('control-chars', $1, $2, 'control', '/img/person.svg') RETURNING id, slug`,
        ['Null\u0001Eins\u0008', 'Esc\u001b[31m\u007f\u000b\u000c'],
      );
      const [werk] = await server.db.query<{ id: number }>(
        'INSERT INTO werk (person_id, titel, jahr, art, beschreibung) VALUES ($1, $2, NULL, $3, $4) RETURNING id',
        [person?.id, 'Tab\u0008Back\u000e\u001f', '\u0002', 'Zeile\u0001\n\u001f\r\n'],
      );
      await server.db.query(
        `INSERT INTO loan (account_id, werk_id, since, until) VALUES ($1, $2, current_date, current_date + 1)`,
        [demo.mmuster.id, werk?.id],
      );
      paths.push(`/person/${person?.slug}`, `/werk/${werk?.id}`);
      loans.push(`/entlehnte/${demo.mmuster.id}/${werk?.id}`);
    });

    bothFormats('every document that shows it', async (format, tally) => {
      const headers = { cookie: cookies.bibliothek as string };
      for (const path of paths)
        await expectValid(
          tally,
          path.startsWith('/werk/') ? 'werk' : 'person',
          format,
          await get(`${path}.${format}`),
          200,
        );
      for (const offset of [0, 50])
        await expectValid(tally, 'personen', format, await get(`/personen.${format}?offset=${offset}`), 200);
      await expectValid(tally, 'index', format, await get(`/index.${format}`), 200);
      await expectValid(
        tally,
        'entlehnte',
        format,
        await get(`/entlehnte/${demo.mmuster.id}.${format}`, { headers }),
        200,
      );
      for (const loan of loans)
        await expectValid(tally, 'entlehnung', format, await get(`${loan}.${format}`, { headers }), 200);
      const terms = [
        '<script>',
        '"\'',
        ']]>',
        '&amp;',
        '😀',
        'e\u0301',
        '\u202E',
        '\uFFFE',
        'onerror',
        `${'x'.repeat(100)} ${'x'.repeat(99)}`,
        `${'ä'.repeat(100)} ${'ä'.repeat(99)}`,
      ];
      for (const term of terms) {
        for (const field of ['any', 'title', 'creator']) {
          await expectValid(
            tally,
            'search',
            format,
            await get(`/search.${format}?query=${field},contains,${encodeURIComponent(term)}`),
            200,
          );
        }
      }
      await expectValid(
        tally,
        'problem',
        format,
        await get(`/person/${encodeURIComponent('<script>"\'')}.${format}`),
        404,
      );
      await expectValid(
        tally,
        'problem',
        format,
        await get(`/search.${format}?query=any,contains,${'\u00e4'.repeat(201)}`),
        400,
      );
      // A control character is no text: 400, and the message shows it as U+FFFD.
      for (const term of ['\u0001', 'Esc\u001b'])
        await expectValid(
          tally,
          'problem',
          format,
          await get(`/search.${format}?query=any,contains,${encodeURIComponent(term)}&vid=${encodeURIComponent(term)}`),
          400,
        );
    });
  });

  describe('the schema files are served', () => {
    for (const name of jsonSchemas) {
      test(`/schema/${name}.json is application/schema+json with the file's bytes`, async () => {
        const res = await fetch(`${server.origin}/schema/${name}.json`);
        assert.equal(res.status, 200);
        assert.equal(res.headers.get('content-type'), 'application/schema+json');
        assert.deepEqual(Buffer.from(await res.arrayBuffer()), readFileSync(path.join(schemaDir, `${name}.json`)));
      });
    }
    for (const name of xmlSchemas) {
      test(`/schema/${name}.xsd is application/xml with the file's bytes`, async () => {
        const res = await fetch(`${server.origin}/schema/${name}.xsd`);
        assert.equal(res.status, 200);
        assert.equal(res.headers.get('content-type'), 'application/xml; charset=utf-8');
        assert.deepEqual(Buffer.from(await res.arrayBuffer()), readFileSync(path.join(schemaDir, `${name}.xsd`)));
      });
    }
    test('a schema that does not exist is 404, and only schema JSON is served from public/', async () => {
      for (const [target, type] of [
        ['/schema/nope.json', 'application/problem+json; charset=utf-8'],
        ['/schema/nope.xsd', 'text/html; charset=utf-8'],
        ['/schema/person.xml', 'application/problem+xml; charset=utf-8'],
      ]) {
        const res = await fetch(server.origin + (target as string));
        await res.arrayBuffer();
        assert.deepEqual([res.status, res.headers.get('content-type')], [404, type], target);
      }
    });
  });
});

// --- Generated data ----------------------------------------------------------------------

describe('generated data: 200 persons with 5 works each', () => {
  let server: TestServer;
  const get = client(() => server);

  before(async () => {
    server = await startTestServer({ NODE_ENV: 'production', DEMO_DATA: '0' });
    await generateData(server.db, { persons: 200, works: 5, seed: 20261124, replace: false });
  });
  after(() => server.close());

  const column = columnOf(() => server);

  bothFormats(
    'a sample of persons and works, every page of the list, the start page and searches',
    async (format, tally) => {
      // Every 9th person and every 23rd work, the first and the last.
      for (const slug of await column<string>(
        'SELECT slug AS v FROM person WHERE id % 9 = 1 OR id = (SELECT max(id) FROM person) ORDER BY id',
      )) {
        await expectValid(tally, 'person', format, await get(`/person/${slug}.${format}`), 200);
      }
      for (const id of await column<number>(
        'SELECT id AS v FROM werk WHERE id % 23 = 1 OR id = (SELECT max(id) FROM werk) ORDER BY id',
      )) {
        await expectValid(tally, 'werk', format, await get(`/werk/${id}.${format}`), 200);
      }
      for (const offset of [0, 50, 100, 150, 199, 200, 250])
        await expectValid(tally, 'personen', format, await get(`/personen.${format}?offset=${offset}`), 200);
      await expectValid(tally, 'index', format, await get(`/index.${format}`), 200);
      const [title] = await column<string>('SELECT titel AS v FROM werk ORDER BY id LIMIT 1');
      const [name] = await column<string>(`SELECT vorname || ' ' || nachname AS v FROM person ORDER BY id LIMIT 1`);
      const searches = [
        `query=title,exact,${encodeURIComponent(title as string)}`,
        `query=creator,exact,${encodeURIComponent(name as string)}`,
        'query=creator,begins_with,b',
        'query=title,contains,licht&search_scope=werke',
        'query=any,contains,er&search_scope=personen',
        'query=any,contains,a',
        'query=any,contains,a&offset=10',
        'query=any,contains,a&offset=500',
        'query=any,contains,a&offset=100000',
        'query=any,contains,%C3%B6&query=title,begins_with,d&vid=druck',
      ];
      for (const search of searches)
        await expectValid(tally, 'search', format, await get(`/search.${format}?${search}`), 200);
    },
  );
});

test('how many documents were validated', (t) => {
  t.diagnostic(`validated ${overall}`);
});
