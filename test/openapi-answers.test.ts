// The OpenAPI document (scripts/openapi.ts) against the server's answers: a table of requests,
// each with the status the server answers, which the document must list for its operation; every
// error status the document lists for an operation is answered by one of them; and its parameter
// and body schemas take exactly what the server takes. On PostgreSQL the database then goes away
// (a relay on loopback closes), and every operation that reads it answers 503.
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import { Ajv2020 } from 'ajv/dist/2020.js';
import sharp from 'sharp';
import { openPostgres } from '../lib/db/index.ts';
import type { TestServer } from './helpers.ts';
import { backend, openTestDb, rawRequest, startTestServer } from './helpers.ts';
import { csrfTokenOf } from './change-helpers.ts';
import { basic, logInAs } from './login-helpers.ts';

type Json = Record<string, any>;
type Spec = { paths: Record<string, Record<string, Json>>; components: { schemas: Record<string, Json> } };

interface Sample {
  /** The operation: method and path template as the document names them, e.g. 'put /person/{person}'. */
  op: string;
  target: string;
  method?: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  status: number;
}

const json = { 'content-type': 'application/json', accept: 'application/json' };
const mebibyte = 1024 * 1024;

let server: TestServer;
let spec: Spec;
/** The librarian's session cookie and its CSRF token: a password check per request (Basic) would take a good part of a second. */
let librarian: Record<string, string>;
/** A PNG of 56 million pixels, over the limit of 50 million (PICTURE_MAX_PIXELS): one colour, so a few kilobytes. */
let bomb: Buffer;
/** On PostgreSQL the server reaches the database through this relay, which closes for the outage. */
let relay: Relay | null = null;
/** Addresses the setup made: a deleted person and work, a person's old slug, a work on loan and its person. */
const made = { goneSlug: '', goneWerk: 0, oldSlug: '', lentWerk: 0, lentSlug: '' };

before(async () => {
  if (backend === 'postgres') {
    const direct = await openTestDb();
    relay = await startRelay(new URL(direct.url as string));
    const url = new URL(direct.url as string);
    url.port = String(relay.port);
    const db = openPostgres({ connectionString: url.href, statementTimeoutMs: 10_000, connectTimeoutMs: 1000 });
    server = await startTestServer(
      {},
      {
        db: {
          db,
          url: url.href,
          drop: async () => {
            await db.close();
            await direct.drop();
          },
        },
      },
    );
  } else {
    server = await startTestServer();
  }
  spec = (await (await fetch(`${server.origin}/openapi.json`)).json()) as Spec;
  const cookie = await logInAs(server.origin, 'bibliothek');
  librarian = { cookie, 'x-csrf-token': await csrfTokenOf(server.origin, cookie, '/personen/neu') };
  bomb = await sharp({ create: { width: 8000, height: 7000, channels: 3, background: '#7a3e1d' } })
    .png({ compressionLevel: 9 })
    .toBuffer();
  /** A change as the librarian; the Location of what it made. */
  const api = async (method: string, target: string, body?: Json) => {
    const res = await fetch(server.origin + target, {
      method,
      headers: { ...json, ...librarian },
      body: body && JSON.stringify(body),
    });
    assert.ok(res.status < 300, `${method} ${target}: ${res.status} ${await res.clone().text()}`);
    await res.arrayBuffer();
    return (res.headers.get('location') ?? '').replace(/^.*\/(person|werk)\//, '');
  };
  made.goneSlug = await api('POST', '/personen', { vorname: 'Gelöschte', nachname: 'Person', username: 'geloeschte' });
  await api('DELETE', `/person/${made.goneSlug}`);
  made.goneWerk = Number(await api('POST', '/person/max-muster/werke', { titel: 'Gelöschtes Werk' }));
  await api('DELETE', `/werk/${made.goneWerk}`);
  // A slug is made from the name: renamed, the person keeps the old one as a way to the new.
  await api('POST', '/personen', { vorname: 'Alter', nachname: 'Name', username: 'altername' });
  made.oldSlug = 'alter-name';
  await api('PUT', `/person/${made.oldSlug}`, { vorname: 'Neuer', nachname: 'Name' });
  made.lentSlug = await api('POST', '/personen', { vorname: 'Leih', nachname: 'Gabe', username: 'leihgabe' });
  made.lentWerk = Number(await api('POST', `/person/${made.lentSlug}/werke`, { titel: 'Verliehen' }));
  await api('POST', '/entlehnte/2', { url: String(made.lentWerk) });
});
after(async () => {
  await server?.close();
  relay?.close();
});

/** The document's operations of the rewritten addresses, as 'method /template'. */
const operations = () =>
  Object.entries(spec.paths)
    .filter(([path]) => !path.endsWith('.php'))
    .flatMap(([path, item]) => ['get', 'post', 'put', 'delete'].filter((m) => m in item).map((m) => `${m} ${path}`));
const documented = (op: string): string[] => {
  const [method, path] = op.split(' ') as [string, string];
  const operation = spec.paths[path]?.[method];
  assert.ok(operation, `the document has ${op}`);
  return Object.keys(operation.responses);
};
/** A template's address with example values. */
const example = (template: string, values: Record<string, string> = {}) =>
  template.replace(
    /\{(\w+)\}/g,
    (_, name: string) =>
      values[name] ??
      (({ person: 'max-muster', id: '1', uid: '2', wid: '1' } as Record<string, string>)[name] as string),
  );

/** Scripts with one representation: a suffix of another is their 406. */
const onlySuffix: Record<string, string> = {
  '/feed': '.json',
  '/person/{person}/feed': '.json',
  '/sitemap': '.json',
  '/me': '.xml',
  '/openapi': '.xml',
  '/robots.txt': '.json',
};
const bodies: Record<string, Json> = {
  'post /personen': { vorname: 'Neu', nachname: 'Person', username: 'neuperson' },
  'put /person/{person}': { vorname: 'Max', nachname: 'Muster' },
  'post /person/{person}/werke': { titel: 'Ein Werk' },
  'put /werk/{id}': { titel: 'Ein Werk' },
  'post /entlehnte/{uid}': { url: '1' },
};

/** Requests any operation of its kind answers alike: a Host not served here, no acceptable representation, a body too large or of another type. */
function commonSamples(): Sample[] {
  return operations().flatMap((op): Sample[] => {
    const [method, path] = op.split(' ') as [string, string];
    const target = example(path);
    const samples: Sample[] = [
      { op, target, method: method.toUpperCase(), headers: { host: 'elsewhere.example' }, status: 400 },
      onlySuffix[path] !== undefined
        ? { op, target: target + onlySuffix[path], method: method.toUpperCase(), status: 406 }
        : { op, target, method: method.toUpperCase(), headers: { accept: 'image/png', ...librarian }, status: 406 },
    ];
    const [, template] = op.split(' ') as [string, string];
    if ('requestBody' in (spec.paths[template]?.[method] ?? {})) {
      const picture = path.endsWith('/bild');
      samples.push(
        {
          op,
          target,
          method: method.toUpperCase(),
          headers: { ...json, 'content-type': picture ? 'image/png' : json['content-type'], ...librarian },
          body: Buffer.alloc((picture ? 10 : 1) * mebibyte + 1, 32),
          status: 413,
        },
        {
          op,
          target,
          method: method.toUpperCase(),
          headers: { ...json, 'content-type': 'text/plain', ...librarian },
          body: 'x',
          status: 415,
        },
      );
    }
    return samples;
  });
}

/** The requests each operation answers in its own way. */
function ownSamples(): Sample[] {
  const anonymous: Sample[] = [
    'get /entlehnte/{uid}',
    'get /entlehnte/{uid}/{wid}',
    'get /personen/neu',
    'get /person/{person}/bearbeiten',
    'get /person/{person}/loeschen',
    'get /person/{person}/bild',
    'get /person/{person}/werke/neu',
    'get /werk/{id}/bearbeiten',
    'get /werk/{id}/loeschen',
  ].map((op) => ({ op, target: example(op.split(' ')[1] as string), status: 403 }));
  // Every change from another site is refused before anything is read.
  const changes = operations().filter((op) => !op.startsWith('get '));
  const crossOrigin: Sample[] = changes.map((op) => ({
    op,
    target: example(op.split(' ')[1] as string),
    method: op.split(' ')[0]?.toUpperCase(),
    headers: { origin: 'http://elsewhere.example', ...librarian },
    status: 403,
  }));
  const withPerson = operations().filter((op) => op.includes('{person}'));
  const withWerk = operations().filter((op) => op.includes('{id}'));
  const asLibrarian = (op: string, values: Record<string, string>, status: number): Sample => {
    const [method, path] = op.split(' ') as [string, string];
    // A picture is sent as its bytes: the one too large to decode, unless a sample says otherwise.
    const picture = path.endsWith('/bild');
    const body = bodies[op] ? JSON.stringify(bodies[op]) : picture && method === 'post' ? bomb : undefined;
    return {
      op,
      target: example(path, values),
      method: method.toUpperCase(),
      status,
      headers: { ...json, ...librarian, ...(picture ? { 'content-type': 'image/png' } : {}) },
      ...(body ? { body } : {}),
    };
  };
  const missing = [
    ...withPerson.map((op) => asLibrarian(op, { person: 'niemand-da' }, 404)),
    ...withWerk.map((op) => asLibrarian(op, { id: '99999' }, 404)),
  ];
  const gone = [
    ...withPerson.map((op) => asLibrarian(op, { person: made.goneSlug }, 410)),
    ...withWerk.map((op) => asLibrarian(op, { id: String(made.goneWerk) }, 410)),
  ];
  const moved = withPerson
    .filter((op) => op.startsWith('get '))
    .map((op) => asLibrarian(op, { person: made.oldSlug }, 301));
  const movedChanges = withPerson
    .filter((op) => !op.startsWith('get '))
    .map((op) => asLibrarian(op, { person: made.oldSlug }, 308));
  const invalid: Sample[] = Object.keys(bodies).map((op) => ({ ...asLibrarian(op, {}, 422), body: '{}' }));
  const post = (target: string, body: string) => ({
    method: 'POST',
    target,
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body,
  });
  return [
    ...anonymous,
    ...crossOrigin,
    ...missing,
    ...gone,
    ...moved,
    ...movedChanges,
    ...invalid,
    asLibrarian('get /person/{person}/werke', {}, 303),
    asLibrarian('post /person/{person}/bild', {}, 422),
    { ...asLibrarian('post /person/{person}/bild', {}, 415), body: Buffer.from('GIF89a') },
    { op: 'get /personen', target: '/personen?offset=-1', status: 400 },
    { op: 'get /personen', target: '/personen?offset=1000000000', status: 400 },
    { op: 'get /search', target: '/search?query=any,contains,m%C3%BCller', status: 200 },
    { op: 'get /search', target: '/search?query=foo,contains,x', status: 400 },
    { op: 'get /search', target: '/search?term=m%C3%BCller&field=any&match=contains', status: 303 },
    { op: 'get /sitemap', target: '/sitemap.xml?personen=1&werke=1', status: 400 },
    { op: 'get /sitemap', target: '/sitemap.xml?personen=99', status: 404 },
    { op: 'get /entlehnte/{uid}', target: '/entlehnte/99999', headers: { ...librarian }, status: 404 },
    asLibrarian('post /entlehnte/{uid}', { uid: '99999' }, 404),
    { ...asLibrarian('post /entlehnte/{uid}', {}, 409), body: JSON.stringify({ url: String(made.lentWerk) }) },
    { op: 'get /entlehnte/{uid}/{wid}', target: '/entlehnte/2/99999', headers: { ...librarian }, status: 404 },
    {
      op: 'delete /entlehnte/{uid}/{wid}',
      target: '/entlehnte/2/99999',
      method: 'DELETE',
      headers: { ...json, ...librarian },
      status: 404,
    },
    asLibrarian('delete /person/{person}', { person: made.lentSlug }, 409),
    asLibrarian('delete /werk/{id}', { id: String(made.lentWerk) }, 409),
    { op: 'post /login', ...post('/login', 'username=bibliothek&password=falsch&csrf_token=x'), status: 403 },
    {
      op: 'post /login',
      ...post('/login', 'username=bibliothek&password=falsch&csrf_token=x'),
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: 'Basic !' },
      status: 400,
    },
    { op: 'get /werk/{id}', target: '/werk/0', status: 400 },
    { op: 'get /werk/{id}', target: '/werk/2147483648', status: 400 },
    { op: 'get /werk/{id}', target: '/werk.php', status: 400 },
    // Last, as it changes what the requests above find: a return recorded.
    {
      op: 'delete /entlehnte/{uid}/{wid}',
      target: '/entlehnte/3/1',
      method: 'DELETE',
      headers: { ...json, ...librarian },
      status: 204,
    },
  ];
}

async function answer(sample: Sample): Promise<number> {
  if (sample.headers?.host)
    return (await rawRequest(server.origin, sample.target, { method: sample.method, headers: sample.headers })).status;
  const res = await fetch(server.origin + sample.target, {
    method: sample.method ?? 'GET',
    headers: sample.headers,
    body: sample.body,
    redirect: 'manual',
  });
  await res.arrayBuffer();
  return res.status;
}

/** Each sample's answer, with what is wrong: another status than the table says, or one the document does not list. */
async function check(samples: Sample[]): Promise<string[]> {
  const wrong: string[] = [];
  for (const sample of samples) {
    const status = await answer(sample);
    const line = `${sample.method ?? 'GET'} ${sample.target} (${sample.op})`;
    if (status !== sample.status) wrong.push(`${line}: answered ${status}, the table says ${sample.status}`);
    if (!documented(sample.op).includes(String(status)))
      wrong.push(`${line}: answered ${status}, which the document does not list`);
  }
  return wrong;
}

/** Operations' documented error statuses that no sample shows. */
function unshown(samples: Sample[], leaveOut: string[]): string[] {
  return operations().flatMap((op) =>
    documented(op)
      .filter((s) => Number(s) >= 400 && !leaveOut.includes(s))
      .filter((s) => !samples.some((sample) => sample.op === op && String(sample.status) === s))
      .map((s) => `${op} ${s}`),
  );
}

describe('the OpenAPI document against the answers', () => {
  test('every answer to the table of requests is the status the table says, and the document lists it', async (t) => {
    const samples = [...commonSamples(), ...ownSamples()];
    t.diagnostic(`${samples.length} requests to ${new Set(samples.map((s) => s.op)).size} operations`);
    assert.deepEqual(await check(samples), []);
  });

  test('every error status the document lists for an operation is answered to a request of the table', () => {
    // 429 and 503 have tables of their own below.
    assert.deepEqual(unshown([...commonSamples(), ...ownSamples()], ['429', '503']), []);
  });

  test('every operation that reads credentials answers 429 once an account failed too often from one address', async () => {
    const wrongly = basic('aschaefer', 'falsch');
    for (let i = 0; i < 11; i++)
      await answer({ op: 'get /me', target: '/me.json', headers: { authorization: wrongly }, status: 200 });
    const samples = operations()
      .filter((op) => documented(op).includes('429'))
      .map((op): Sample => {
        const [method, path] = op.split(' ') as [string, string];
        // The login and the log-out take forms: the login's own fields name the account.
        const form = method === 'post' && (path === '/login' || path === '/logout');
        const headers = {
          ...json,
          authorization: wrongly,
          ...(form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
        };
        const body = form
          ? 'username=aschaefer&password=falsch&csrf_token=x'
          : bodies[op]
            ? JSON.stringify(bodies[op])
            : undefined;
        return { op, target: example(path), method: method.toUpperCase(), headers, body, status: 429 };
      });
    assert.ok(samples.length >= 15, `${samples.length} operations read credentials`);
    assert.deepEqual(await check(samples), []);
  });

  test('parameters: the document takes exactly the values the server takes', async () => {
    const schemaOf = (path: string, name: string) => {
      const parameter = (spec.paths[path]?.parameters as Json[]).find((p) => p.name === name) as Json;
      return parameter.schema.items ?? parameter.schema;
    };
    const ajv = new Ajv2020({ strict: false });
    const cases: [string, string, string, string[]][] = [
      ['/werk/{id}', 'id', '/werk/', ['1', '0', '2147483647', '2147483648', '99999999999']],
      ['/person/{person}', 'person', '/person/', ['1', '0', 'max-muster', '2147483648']],
      ['/personen', 'offset', '/personen?offset=', ['0', '50', '999999999', '1000000000', '-1', 'x']],
      [
        '/search',
        'query',
        '/search?query=',
        [
          'any,contains,x',
          'title,exact,Hafen',
          'cdate,begins_with,19',
          'any,contains,x,AND',
          'foo,contains,x',
          'any,foo,x',
          'any,contains,',
          'any,contains, ',
          'any,contains,,AND',
          'any,contains, ,OR',
          'any',
          'any,contains',
        ],
      ],
      [
        '/search',
        'facet',
        '/search?query=any,contains,x&facet=',
        [
          'rtype,include,Roman',
          'creator,exclude,Max%20Muster',
          'decade,include,1990',
          'decade,include,1995',
          'foo,include,x',
          'rtype,maybe,x',
          'rtype,include,',
          'rtype,include,%20',
        ],
      ],
      ['/search', 'sortby', '/search?query=any,contains,x&sortby=', ['rank', 'date_d', 'newest']],
      ['/sitemap', 'personen', '/sitemap.xml?personen=', ['1', '0', '-1']],
    ];
    const wrong: string[] = [];
    for (const [path, name, prefix, values] of cases) {
      const validate = ajv.compile(schemaOf(path, name));
      for (const value of values) {
        const decoded = decodeURIComponent(value);
        const typed = /^-?[0-9]+$/.test(decoded) && schemaOf(path, name).type === 'integer' ? Number(decoded) : decoded;
        const takes = validate(typed);
        const status = await answer({ op: '', target: prefix + value, status: 0 });
        if (takes !== (status !== 400))
          wrong.push(`${name}=${value}: the document ${takes ? 'takes' : 'refuses'} it, the server answers ${status}`);
      }
    }
    assert.deepEqual(wrong, []);
  });

  test('bodies: the document requires exactly the fields the server requires', async () => {
    const ajv = new Ajv2020({ strict: false });
    const cases: [string, string, string, Json[]][] = [
      [
        'NewPersonInput',
        'POST',
        '/personen',
        [
          {},
          { vorname: 'A', nachname: 'B' },
          { vorname: ' ', nachname: 'B', username: 'ab1' },
          { vorname: 'A', nachname: 'B', username: 'ab2' },
        ],
      ],
      [
        'PersonInput',
        'PUT',
        '/person/neuer-name',
        [
          {},
          { vorname: 'Neuer' },
          { vorname: 'Neuer', nachname: 'Name' },
          { vorname: 'x'.repeat(201), nachname: 'Name' },
        ],
      ],
      [
        'WerkInput',
        'PUT',
        `/werk/${made.lentWerk}`,
        [
          {},
          { titel: '' },
          { titel: 'Verliehen', jahr: 3001 },
          { titel: 'Verliehen', jahr: '1999' },
          { titel: 'Verliehen', jahr: null },
          { titel: 'Verliehen', jahr: '19x' },
        ],
      ],
      ['LoanInput', 'POST', '/entlehnte/2', [{}, { url: ' ' }, { url: '1', bis: '24.12.2026' }]],
    ];
    const wrong: string[] = [];
    for (const [name, method, target, values] of cases) {
      const validate = ajv.compile(spec.components.schemas[name] as Json);
      for (const value of values) {
        const takes = validate(value);
        const status = await answer({
          op: '',
          target,
          method,
          headers: { ...json, ...librarian },
          body: JSON.stringify(value),
          status: 0,
        });
        if (takes !== (status !== 422))
          wrong.push(
            `${name} ${JSON.stringify(value)}: the document ${takes ? 'takes' : 'refuses'} it, the server answers ${status}`,
          );
      }
    }
    assert.deepEqual(wrong, []);
  });

  test('every operation that reads the database answers 503 while it is away, and only those', {
    skip: backend !== 'postgres' && 'the relay stands between the server and PostgreSQL; PGlite runs in the process',
  }, async () => {
    relay?.close();
    const targets: Record<string, string> = {
      '/sitemap': '/sitemap.xml',
      '/search': '/search?query=any,contains,m%C3%BCller',
    };
    const samples = operations().map((op): Sample => {
      const [method, path] = op.split(' ') as [string, string];
      // With credentials, so that the operations that read them do; public documents never read them.
      const form = method === 'post' && (path === '/login' || path === '/logout');
      const headers = {
        ...json,
        ...librarian,
        ...(form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
      };
      const body = form
        ? `username=bibliothek&password=bibliothek-demo&csrf_token=${librarian['x-csrf-token']}`
        : bodies[op]
          ? JSON.stringify(bodies[op])
          : undefined;
      return {
        op,
        target: targets[path] ?? example(path),
        method: method.toUpperCase(),
        headers,
        body,
        status: documented(op).includes('503') ? 503 : 200,
      };
    });
    assert.deepEqual(await check(samples), []);
    assert.deepEqual(unshown(samples, ['400', '403', '404', '406', '409', '410', '413', '415', '422', '429']), []);
  });
});

interface Relay {
  port: number;
  /** Refuses new connections and cuts those there are: the database is away. */
  close: () => void;
}

/** A TCP relay on loopback to the PostgreSQL server of `url`. */
async function startRelay(url: URL): Promise<Relay> {
  const sockets = new Set<net.Socket>();
  const relayServer = net.createServer((client) => {
    const upstream = net.connect(Number(url.port || 5432), url.hostname);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => socket.destroy());
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => relayServer.listen(0, '127.0.0.1', resolve));
  return {
    port: (relayServer.address() as net.AddressInfo).port,
    close: () => {
      relayServer.close();
      for (const socket of sockets) socket.destroy();
    },
  };
}
