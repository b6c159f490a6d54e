// Injection and escaping: SQL injection strings in every parameter, field, cookie and credential
// of every endpoint change nothing; script and markup in names and titles come back escaped in
// HTML, XML and JSON; control characters in request lines are escaped in the logs as Apache does.
import assert from 'node:assert/strict';
import net from 'node:net';
import { performance } from 'node:perf_hooks';
import { after, before, describe, test } from 'node:test';
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import type { TestServer } from './helpers.ts';
import { rawRequest, readJson, startTestServer, waitFor } from './helpers.ts';
import { basic, openLoginForm, postForm } from './login-helpers.ts';

let server: TestServer;
before(async () => {
  server = await startTestServer({ NODE_ENV: 'production' });
});
after(() => server.close());

const payloads = [
  "' OR '1'='1",
  "' OR 1=1 --",
  '1; DROP TABLE person; --',
  "1' UNION SELECT password_hash, 1 FROM account --",
  "'); DELETE FROM werk; --",
  "\\'; TRUNCATE loan CASCADE; --",
  "%' OR '%'='",
  '1 OR 1=1',
  '$1',
  "'||pg_sleep(3)||'",
  '1)::int; UPDATE account SET role = $$librarian$$; --',
  "admin'--",
  '" OR ""="',
  '1e99',
  '-1 UNION SELECT 1',
];

/** Every row of the tables a change could touch, as one comparable string per table. */
async function snapshot(): Promise<Record<string, string>> {
  const tables = ['person', 'werk', 'account', 'loan', 'schema_migrations'];
  const result: Record<string, string> = {};
  for (const table of tables) {
    const [row] = await server.db.query<{ rows: string }>(
      `SELECT coalesce(string_agg(t::text, E'\\n' ORDER BY t::text), '') AS rows FROM ${table} t`,
    );
    result[table] = row?.rows ?? '';
  }
  const [sessions] = await server.db.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM session WHERE account_id IS NOT NULL',
  );
  result.loggedIn = String(sessions?.n);
  return result;
}

describe('SQL injection', () => {
  test('in every parameter of every endpoint: no 500, no delay, no match, nothing changed', async () => {
    const before = await snapshot();
    const [counted] = await server.db.query<{ n: number }>(
      'SELECT ((SELECT count(*) FROM person) + (SELECT count(*) FROM werk))::int AS n',
    );
    const everything = counted?.n ?? 0;
    const seen = new Map<string, number>();
    const expect = async (what: string, run: () => Promise<Response>, allowed: number[]) => {
      const started = performance.now();
      const res = await run();
      const body = await res.text();
      seen.set(what, res.status);
      assert.ok(allowed.includes(res.status), `${what}: ${res.status} ${body.slice(0, 300)}`);
      // pg_sleep(3) would show here if it ever ran.
      assert.ok(performance.now() - started < 2500, `${what} took ${performance.now() - started} ms`);
      // Messages may quote the input; what must never show is the database talking or a stored hash.
      assert.doesNotMatch(body, /syntax error|ERROR:|relation "|column "|scrypt\$|\bat [\w.]+ \(/, what);
      return body;
    };
    const get =
      (target: string, headers: Record<string, string> = {}) =>
      () =>
        fetch(server.origin + target, { redirect: 'manual', headers });
    for (const p of payloads) {
      const e = encodeURIComponent(p);
      await expect(`person ${p}`, get(`/person/${e}.json`), [404]);
      await expect(`pid ${p}`, get(`/person.php?pid=${e}`), [400, 404]);
      await expect(`slug ${p}`, get(`/person.php?slug=${e}`), [400, 404]);
      await expect(`werk ${p}`, get(`/werk/${e}`), [400, 404]);
      await expect(`werk id ${p}`, get(`/werk.php?id=${e}`), [400, 404]);
      await expect(`personen offset ${p}`, get(`/personen?offset=${e}`), [400]);
      // Words are searched as words (1 OR 1=1 finds the works with the word 1), never as SQL
      // that would match every row.
      for (const field of ['any', 'title', 'creator']) {
        const body = await expect(`search ${field} ${p}`, get(`/search.json?query=${field},contains,${e}`), [200]);
        assert.ok(JSON.parse(body).total < everything, `search ${field} ${p}: ${JSON.parse(body).total} hits`);
      }
      await expect(`search query ${p}`, get(`/search.json?query=${e}`), [400]);
      // Another installation's view, tab or scope is answered with ours (docs/interface.md, Search).
      for (const parameter of ['tab', 'search_scope', 'vid']) {
        const body = await expect(
          `search ${parameter} ${p}`,
          get(`/search.json?query=any,contains,x&${parameter}=${e}`),
          [200],
        );
        assert.deepEqual(
          JSON.parse(body).replaced.map((r: { requested: string }) => r.requested),
          [p],
          `search ${parameter} ${p}`,
        );
      }
      await expect(`search offset ${p}`, get(`/search.json?query=any,contains,x&offset=${e}`), [400]);
      for (const parameter of ['sortby', 'facet']) {
        await expect(`search ${parameter} ${p}`, get(`/search.json?query=any,contains,x&${parameter}=${e}`), [400]);
      }
      await expect(`entlehnte ${p}`, get(`/entlehnte/${e}`), [403, 404]);
      await expect(`entlehnte uid ${p}`, get(`/entlehnte.php?uid=${e}`), [400, 403, 404]);
      await expect(`login back ${p}`, get(`/login?back=${e}`), [200]);
      await expect(`cookie ${p}`, get('/entlehnte/2.json', { cookie: `portfolio_session=${e}` }), [403]);
      await expect(`basic user ${p}`, get('/entlehnte/2.json', { authorization: basic(p, 'mmuster-demo') }), [403]);
      await expect(`basic password ${p}`, get('/entlehnte/2.json', { authorization: basic('mmuster', p) }), [403]);
      const form = await openLoginForm(server.origin);
      const post = (fields: Record<string, string>) => () =>
        postForm(
          server.origin,
          '/login',
          { username: 'mmuster', password: 'mmuster-demo', csrf_token: form.csrfToken, ...fields },
          { cookie: form.cookie },
        );
      await expect(`login username ${p}`, post({ username: p }), [403]);
      await expect(`login password ${p}`, post({ password: p }), [403]);
      await expect(`login csrf_token ${p}`, post({ csrf_token: p }), [403]);
      await expect(
        `logout csrf_token ${p}`,
        () => postForm(server.origin, '/logout', { csrf_token: p }, { cookie: form.cookie }),
        [303],
      );
      await server.db.query('DELETE FROM login_attempt');
    }
    assert.ok(seen.size >= (25 * payloads.length) / 2, `${seen.size} cases`);
    assert.deepEqual(await snapshot(), before);
  });

  test('a way back with SQL in it is only a path: the login still lands on this site', async () => {
    const form = await openLoginForm(server.origin);
    const res = await postForm(
      server.origin,
      '/login',
      {
        username: 'mmuster',
        password: 'mmuster-demo',
        csrf_token: form.csrfToken,
        back: "/personen?offset=1'; DROP TABLE person; --",
      },
      { cookie: form.cookie },
    );
    assert.equal(res.status, 303);
    assert.equal(res.headers.get('location'), `${server.origin}/personen?offset=1%27;%20DROP%20TABLE%20person;%20--`);
    assert.equal((await fetch(`${server.origin}/person/max-muster.json`)).status, 200);
  });
});

describe('script and markup in names and titles', () => {
  const vorname = '<script>alert("x")</script>';
  const nachname = "O'Brien & <b>Söhne</b> ]]> &amp;";
  const titel = '</title><img src=x onerror=alert(1)> <!-- "\'';
  const image = '/img/x.svg?a="><script>alert(2)</script>';
  let workId = 0;

  before(async () => {
    const [person] = await server.db.query<{ id: number }>(
      'INSERT INTO person (slug, vorname, nachname, username, image) VALUES ($1, $2, $3, $4, $5) RETURNING id',
      ['hostile-markup', vorname, nachname, 'hostile', image],
    );
    const [work] = await server.db.query<{ id: number }>(
      'INSERT INTO werk (person_id, titel, jahr, art, beschreibung) VALUES ($1, $2, 2000, $3, $4) RETURNING id',
      [person?.id, titel, '<i>Art</i>', 'Zeile 1\n<style>body{display:none}</style>'],
    );
    workId = work?.id as number;
  });

  const rawMarkup = /<script>alert|<img src=x|<b>Söhne|<style>body|<i>Art/;

  for (const target of [
    '/person/hostile-markup',
    '/personen?offset=0',
    '/search?query=creator,contains,brien',
    '/search?query=title,contains,title',
  ]) {
    test(`HTML of ${target} shows the text escaped, never as markup`, async () => {
      const html = await (await fetch(server.origin + target)).text();
      assert.doesNotMatch(html, rawMarkup);
      assert.match(
        html,
        /&lt;script&gt;alert\(&#34;x&#34;\)&lt;\/script&gt;|&lt;\/title&gt;&lt;img src=x onerror=alert\(1\)&gt;/,
      );
    });
  }

  test('HTML of the work and the person escape every field, attributes included', async () => {
    const work = await (await fetch(`${server.origin}/werk/${workId}`)).text();
    assert.doesNotMatch(work, rawMarkup);
    assert.match(work, /&lt;\/title&gt;&lt;img src=x onerror=alert\(1\)&gt; &lt;!-- &#34;&#39;/);
    assert.match(work, /&lt;style&gt;body\{display:none\}&lt;\/style&gt;/);
    const person = await (await fetch(`${server.origin}/person/hostile-markup`)).text();
    assert.match(
      person,
      /src="http:\/\/127\.0\.0\.1:\d+\/img\/x\.svg\?a=&#34;&gt;&lt;script&gt;alert\(2\)&lt;\/script&gt;"|src="\/img\/x\.svg\?a=&#34;&gt;&lt;script&gt;alert\(2\)&lt;\/script&gt;"/,
    );
    assert.match(person, /O&#39;Brien &amp; &lt;b&gt;Söhne&lt;\/b&gt; \]\]&gt; &amp;amp;/);
  });

  test('XML is well-formed and gives back every value exactly', async () => {
    const parser = new XMLParser({ ignoreAttributes: false, parseTagValue: false, processEntities: true });
    const person = await (await fetch(`${server.origin}/person/hostile-markup.xml`)).text();
    assert.equal(XMLValidator.validate(person), true);
    const doc = parser.parse(person).person;
    assert.equal(doc.vorname, vorname);
    assert.equal(doc.nachname, nachname);
    assert.equal(doc.image['@_ref'], server.origin + image);
    assert.equal(doc.werke.werk['#text'], titel);
    const work = await (await fetch(`${server.origin}/werk/${workId}.xml`)).text();
    assert.equal(XMLValidator.validate(work), true);
    assert.equal(parser.parse(work).werk.beschreibung, 'Zeile 1\n<style>body{display:none}</style>');
  });

  test('JSON gives back every value exactly', async () => {
    const person = await readJson(await fetch(`${server.origin}/person/hostile-markup.json`));
    assert.deepEqual(person, {
      image: server.origin + image,
      vorname,
      nachname,
      werk: [{ titel, url: `${server.origin}/werk/${workId}` }],
    });
    const search = await readJson(await fetch(`${server.origin}/search.json?query=title,contains,onerror`));
    assert.equal(search.treffer[0].titel, titel);
  });
});

describe('control characters in the logs', () => {
  function send(bytes: string): Promise<string> {
    return new Promise((resolve) => {
      const socket = net.connect(Number(new URL(server.origin).port), '127.0.0.1', () =>
        socket.end(Buffer.from(bytes, 'latin1')),
      );
      let received = '';
      socket.on('data', (chunk: Buffer) => {
        received += chunk.toString('latin1');
      });
      socket.on('error', () => {});
      socket.on('close', () => resolve(received.slice(0, received.indexOf('\r\n'))));
    });
  }

  test('a request line with control characters is 400 and logged with them escaped as Apache does', async () => {
    const lines = {
      'GET /a\x01b HTTP/1.1': '"GET /a\\x01b HTTP/1.1" 400 -',
      'GET /\x1b[31mred HTTP/1.1': '"GET /\\x1b[31mred HTTP/1.1" 400 -',
      'GET /x\x7f HTTP/1.1': '"GET /x\\x7f HTTP/1.1" 400 -',
      'GET /caf\xc3\xa9?q="\\ HTTP/1.1': '"GET /caf\\xc3\\xa9?q=\\"\\\\ HTTP/1.1" 400 -',
      'GET /x\tHTTP/1.1': '"GET /x\\tHTTP/1.1" 400 -',
      'GE\x00T / HTTP/1.1': '"GE\\x00T / HTTP/1.1" 400 -',
    };
    for (const line of Object.keys(lines))
      assert.equal(await send(`${line}\r\nHost: 127.0.0.1\r\n\r\n`), 'HTTP/1.1 400 Bad Request', line);
    const log = await waitFor(server.accessLog, (text) => text.includes('GE\\x00T'));
    for (const expected of Object.values(lines))
      assert.ok(log.includes(`] ${expected} "-" "-"\n`), `${expected} in\n${log}`);
    // One line per request: no control character reaches the file.
    assert.doesNotMatch(log, /[\x00-\x09\x0b-\x1f\x7f]/);
  });

  test('quotes, backslashes and tabs in accepted headers cannot end a field early', async () => {
    const res = await rawRequest(server.origin, '/personen.json?x=%22%5C', {
      headers: { 'user-agent': 'agent\t"quoted" \\ end', referer: 'http://127.0.0.1/"x"' },
    });
    assert.equal(res.status, 200);
    const log = await waitFor(server.accessLog, (text) => text.includes('agent'));
    assert.match(
      log,
      /"GET \/personen\.json\?x=%22%5C HTTP\/1\.1" 200 \d+ "http:\/\/127\.0\.0\.1\/\\"x\\"" "agent\\t\\"quoted\\" \\\\ end"\n/,
    );
  });
});
