// What a change refuses, and that a refused change changes nothing (docs/interface.md, Changing data): other users'
// data, missing or wrong CSRF tokens, a foreign Origin, an expired session, bodies of the
// wrong type, too large or malformed, invalid fields, methods a resource does not support;
// and a failure half-way through a change rolls it back.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { createAccount } from '../lib/auth/index.ts';
import type { TestServer } from './helpers.ts';
import { readJson, startTestServer } from './helpers.ts';
import { asUser, csrfTokenOf, personRow, werkBody } from './change-helpers.ts';
import { basic, demo, logIn, logInAs, tokenOf } from './login-helpers.ts';

let server: TestServer;
let max: Record<string, unknown> | null;

before(async () => {
  server = await startTestServer();
  max = await personRow(server.db, 1);
});
after(() => server.close());

const maxJson = JSON.stringify({ vorname: 'Max', nachname: 'Muster', image: '/img/max-muster.svg' });

function putMax(headers: Record<string, string>, body = maxJson): Promise<Response> {
  return fetch(`${server.origin}/person/max-muster.json`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json', ...headers },
    body,
  });
}

async function detailOf(res: Response): Promise<string> {
  return (await readJson(res)).detail;
}

describe('who may change what', () => {
  test('another user is 403 for a person, its works and lending, and nothing changes', async () => {
    const res = await putMax(
      { authorization: basic('jmueller', demo.jmueller.password) },
      JSON.stringify({ vorname: 'Evil', nachname: 'Twin' }),
    );
    assert.equal(res.status, 403);
    assert.equal(
      await detailOf(res),
      'You may change only your own person and its works, not Max Muster; a librarian may change everything.',
    );
    for (const [method, path, body] of [
      ['PUT', '/werk/1.json', werkBody('json', { titel: 'Mine now' })],
      ['DELETE', '/werk/1.json', undefined],
      ['DELETE', '/person/max-muster.json', undefined],
      ['POST', '/person/max-muster/werke.json', werkBody('json', { titel: 'Untergeschoben' })],
    ] as const) {
      const refused = await asUser(server.origin, 'jmueller', {
        method,
        path,
        format: 'json',
        ...(body ? { body } : {}),
      });
      assert.equal(refused.status, 403, `${method} ${path}`);
    }
    const lending = await asUser(server.origin, 'mmuster', {
      method: 'POST',
      path: '/entlehnte/2',
      format: 'json',
      body: JSON.stringify({ url: '5' }),
    });
    assert.deepEqual([lending.status, await detailOf(lending)], [403, 'Only a librarian may lend works.']);
    const returning = await asUser(server.origin, 'mmuster', {
      method: 'DELETE',
      path: '/entlehnte/2/7',
      format: 'json',
    });
    assert.equal(returning.status, 403);
    assert.deepEqual(await personRow(server.db, 1), max);
    const [werk] = await server.db.query('SELECT titel FROM werk WHERE id = 1');
    assert.deepEqual(werk, { titel: 'Stillleben mit Zitronen' });
    assert.equal((await server.db.query('SELECT 1 FROM werk WHERE person_id = 1')).length, 5);
    assert.equal((await server.db.query('SELECT 1 FROM loan WHERE werk_id = 7 AND returned_at IS NULL')).length, 1);
  });

  test('an anonymous client and wrong Basic credentials are 403 with a login link back to the page they came from, else to the resource', async () => {
    for (const headers of [{}, { authorization: basic('mmuster', 'wrong-password') }] as Record<string, string>[]) {
      const res = await fetch(`${server.origin}/person/max-muster`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json', ...headers },
        body: maxJson,
      });
      assert.equal(res.status, 403);
      assert.match(
        await res.text(),
        /Log in to change this: with the login form, or with HTTP Basic credentials and a JSON or XML body\.[\s\S]*<a class="login" href="login\?back=\/person\/max-muster">/,
      );
      const fromForm = await fetch(`${server.origin}/person/max-muster`, {
        method: 'PUT',
        headers: {
          'content-type': 'application/json',
          referer: `${server.origin}/person/max-muster/bearbeiten`,
          ...headers,
        },
        body: maxJson,
      });
      assert.match(await fromForm.text(), /<a class="login" href="login\?back=\/person\/max-muster\/bearbeiten">/);
    }
    assert.deepEqual(await personRow(server.db, 1), max);
  });

  test('a session needs its CSRF token (X-CSRF-Token) and a matching Origin; the right ones change the person', async () => {
    const cookie = await logInAs(server.origin, 'mmuster');
    const token = await csrfTokenOf(server.origin, cookie, '/person/max-muster/bearbeiten');
    const renamed = JSON.stringify({
      vorname: 'Max',
      nachname: 'Muster',
      image: '/img/max-muster.svg',
      username: 'mmuster',
    });
    const refusals = [
      [
        { cookie },
        'The CSRF token is missing or wrong: the form has expired or did not come from this site. Reload the form and send it again (API clients: send the token in X-CSRF-Token).',
      ],
      [
        { cookie, 'x-csrf-token': 'x'.repeat(43) },
        'The CSRF token is missing or wrong: the form has expired or did not come from this site. Reload the form and send it again (API clients: send the token in X-CSRF-Token).',
      ],
      [
        { cookie, 'x-csrf-token': token, origin: 'https://evil.example' },
        `A PUT from https://evil.example is not accepted here; send it from ${server.origin}.`,
      ],
    ] as const;
    for (const [headers, detail] of refusals) {
      const res = await putMax(headers, JSON.stringify({ vorname: 'Gefälscht', nachname: 'Muster' }));
      assert.deepEqual([res.status, await detailOf(res)], [403, detail]);
    }
    assert.deepEqual(await personRow(server.db, 1), max);
    const ok = await putMax({ cookie, 'x-csrf-token': token, origin: server.origin }, renamed);
    assert.equal(ok.status, 200);
    assert.deepEqual(await personRow(server.db, 1), max);
  });

  test('a session past its time-out is 403 for a change and says to log in again', async () => {
    const cookie = await logInAs(server.origin, 'mmuster');
    const token = await csrfTokenOf(server.origin, cookie, '/person/max-muster/bearbeiten');
    const id = createHash('sha256').update(tokenOf(cookie)).digest('hex');
    await server.db.query(`UPDATE session SET last_seen_at = now() - interval '31 minutes' WHERE id = $1`, [id]);
    const res = await putMax(
      { cookie, 'x-csrf-token': token },
      JSON.stringify({ vorname: 'Spät', nachname: 'Muster' }),
    );
    assert.deepEqual(
      [res.status, await detailOf(res)],
      [403, 'Your session has expired; log in again and repeat the change.'],
    );
    assert.deepEqual(await personRow(server.db, 1), max);
  });
});

describe('what a body must be', () => {
  const mm = { authorization: basic('mmuster', demo.mmuster.password) };

  test('another media type is 415, and a form with Basic credentials too: forms need a session and its token', async () => {
    const plain = await fetch(`${server.origin}/person/max-muster.json`, {
      method: 'PUT',
      headers: { ...mm, 'content-type': 'text/plain' },
      body: 'Max Muster',
    });
    assert.deepEqual(
      [plain.status, await detailOf(plain)],
      [415, 'Send the body as application/x-www-form-urlencoded, application/json or application/xml, not text/plain.'],
    );
    const form = await fetch(`${server.origin}/person/max-muster.json`, {
      method: 'POST',
      headers: { ...mm, 'content-type': 'application/x-www-form-urlencoded' },
      body: '_method=PUT&vorname=Form&nachname=Muster',
    });
    assert.deepEqual(
      [form.status, await detailOf(form)],
      [
        415,
        'With HTTP Basic credentials send the body as application/json or application/xml; HTML forms need a login session and its CSRF token.',
      ],
    );
    assert.deepEqual(await personRow(server.db, 1), max);
  });

  test('a body over 1 MiB is 413', async () => {
    const res = await putMax(mm, JSON.stringify({ vorname: 'x'.repeat(1024 * 1024), nachname: 'Muster' }));
    assert.deepEqual([res.status, await detailOf(res)], [413, 'The request body is larger than 1 MiB.']);
  });

  test('malformed JSON and XML are 400; XML with a DOCTYPE or an unknown entity too', async () => {
    const cases = [
      [
        'application/json',
        '{"vorname": "Max",',
        /^The JSON body is malformed: .+\. Send one JSON object in the shape of the representation\.$/,
      ],
      [
        'application/xml',
        '<person><vorname>Max</person>',
        /^The XML body is not well-formed: .+ \(line 1, column \d+\)\.$/,
      ],
      [
        'application/xml',
        '<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;">]><person><vorname>&lol2;</vorname></person>',
        /^The XML body contains a DOCTYPE or an entity declaration, which are not accepted; send the document without them\.$/,
      ],
      [
        'application/xml',
        '<person><vorname>&nbsp;Max</vorname><nachname>Muster</nachname></person>',
        /^The XML body uses the entity &nbsp; which XML does not define; use a character reference such as &#160; instead\.$/,
      ],
      [
        'application/xml',
        '<person/><person/>',
        /^The XML body (is not well-formed: .+|must have exactly one root element\.)$/,
      ],
    ] as const;
    for (const [type, body, detail] of cases) {
      const res = await fetch(`${server.origin}/person/max-muster.json`, {
        method: 'PUT',
        headers: { ...mm, 'content-type': type },
        body,
      });
      assert.equal(res.status, 400, body);
      assert.match(await detailOf(res), detail);
    }
    assert.deepEqual(await personRow(server.db, 1), max);
  });

  test('invalid fields are 422 with one message per field, in JSON and in XML problem details', async () => {
    const json = await putMax(
      mm,
      JSON.stringify({
        vorname: '   ',
        nachname: 'M'.repeat(201),
        username: 'Max Muster!',
        image: 'javascript:alert(1)',
      }),
    );
    assert.equal(json.status, 422);
    assert.deepEqual(await readJson(json), {
      type: 'about:blank',
      title: 'Unprocessable Entity',
      status: 422,
      detail: 'The person was not changed: 4 fields are invalid.',
      errors: [
        { field: 'vorname', message: 'Required: it must not be empty.' },
        { field: 'nachname', message: 'At most 200 characters, not 201.' },
        {
          field: 'username',
          message:
            'Use 1 to 64 lower-case letters, digits, dots, hyphens or underscores, beginning with a letter or digit.',
        },
        {
          field: 'image',
          message:
            'Must be an http or https URL (https://example.org/bild.jpg) or a path on this site (/img/name.svg).',
        },
      ],
    });
    const xml = await fetch(`${server.origin}/werk/1.xml`, {
      method: 'PUT',
      headers: { ...mm, 'content-type': 'application/xml' },
      body: '<werk><titel></titel><jahr>im Sommer</jahr></werk>',
    });
    assert.equal(xml.status, 422);
    assert.equal(
      await xml.text(),
      '<?xml version="1.0" encoding="UTF-8"?>\n<problem xmlns="urn:ietf:rfc:7807">\n  <type>about:blank</type>\n  <title>Unprocessable Entity</title>\n  <status>422</status>\n' +
        '  <detail>The work was not changed: 2 fields are invalid.</detail>\n  <errors>\n    <error field="titel">Required: it must not be empty.</error>\n' +
        '    <error field="jahr">A year from -3000 to 3000, or empty when it is not known.</error>\n  </errors>\n</problem>\n',
    );
    const root = await fetch(`${server.origin}/person/max-muster.json`, {
      method: 'PUT',
      headers: { ...mm, 'content-type': 'application/xml' },
      body: '<werk><titel>Falsch</titel></werk>',
    });
    assert.deepEqual(
      [root.status, (await readJson(root)).errors],
      [422, [{ field: 'person', message: 'The root element must be <person>, not <werk>.' }]],
    );
    const lend = await asUser(server.origin, 'bibliothek', {
      method: 'POST',
      path: '/entlehnte/2',
      format: 'json',
      body: JSON.stringify({ url: `${server.origin}/werk/30`, bis: '2026-02-30' }),
    });
    assert.deepEqual(
      [lend.status, (await readJson(lend)).errors],
      [422, [{ field: 'bis', message: 'A date as YYYY-MM-DD, for example 2026-12-24.' }]],
    );
    const foreign = await asUser(server.origin, 'bibliothek', {
      method: 'POST',
      path: '/entlehnte/2',
      format: 'json',
      body: JSON.stringify({ url: 'http://example.org/werk/5' }),
    });
    assert.deepEqual(
      [foreign.status, (await readJson(foreign)).errors],
      [422, [{ field: 'werk', message: 'Give the work as its id (14) or its URL on this site (…/werk/14).' }]],
    );
    const missing = await asUser(server.origin, 'bibliothek', {
      method: 'POST',
      path: '/entlehnte/2',
      format: 'json',
      body: JSON.stringify({ url: `${server.origin}/werk/99999` }),
    });
    assert.deepEqual(
      [missing.status, (await readJson(missing)).errors],
      [422, [{ field: 'werk', message: 'There is no work with the id 99999.' }]],
    );
    const past = await asUser(server.origin, 'bibliothek', {
      method: 'POST',
      path: '/entlehnte/2',
      format: 'json',
      body: JSON.stringify({ url: '30', bis: '2000-01-01' }),
    });
    assert.deepEqual(
      [past.status, (await readJson(past)).errors],
      [422, [{ field: 'bis', message: 'The due date must not be before today.' }]],
    );
  });

  test('a user name another person has is 422, and the name changed before it is rolled back with it', async () => {
    const res = await putMax(mm, JSON.stringify({ vorname: 'Maximilian', nachname: 'Muster', username: 'jmueller' }));
    assert.equal(res.status, 422);
    assert.deepEqual((await readJson(res)).errors, [
      { field: 'username', message: 'This user name belongs to another person; choose another.' },
    ]);
    // The slug history row and the new slug were written before the user name failed: both are gone.
    assert.deepEqual(await personRow(server.db, 1), max);
    assert.deepEqual(await server.db.query('SELECT slug FROM person_slug_history WHERE person_id = 1'), []);
    assert.equal((await fetch(`${server.origin}/person/maximilian-muster`)).status, 404);
  });
});

describe('methods', () => {
  test('405 with Allow for a method a resource does not support; OPTIONS answers 204 with Allow', async () => {
    const cases = [
      ['/personen', 'DELETE', 'GET, HEAD, OPTIONS, POST'],
      ['/person/max-muster', 'POST', 'GET, HEAD, OPTIONS, PUT, DELETE'],
      ['/person/max-muster/werke', 'PUT', 'GET, HEAD, OPTIONS, POST'],
      ['/werk/1', 'POST', 'GET, HEAD, OPTIONS, PUT, DELETE'],
      ['/entlehnte/2', 'DELETE', 'GET, HEAD, OPTIONS, POST'],
      ['/entlehnte/2/7', 'PUT', 'GET, HEAD, OPTIONS, DELETE'],
      ['/person/max-muster/bearbeiten', 'PUT', 'GET, HEAD, OPTIONS'],
    ] as const;
    for (const [path, method, allow] of cases) {
      const refused = await fetch(server.origin + path, {
        method,
        headers: { 'content-type': 'application/json' },
        body: '{}',
      });
      assert.deepEqual([refused.status, refused.headers.get('allow')], [405, allow], `${method} ${path}`);
      const options = await fetch(server.origin + path, { method: 'OPTIONS' });
      assert.deepEqual([options.status, options.headers.get('allow')], [204, allow], `OPTIONS ${path}`);
    }
    const head = await fetch(`${server.origin}/person/max-muster/werke`, { method: 'HEAD', redirect: 'manual' });
    assert.deepEqual([head.status, head.headers.get('location')], [303, `${server.origin}/person/max-muster`]);
  });

  test('X-HTTP-Method-Override on a POST runs PUT or DELETE; other values are 400', async () => {
    const headers = { authorization: basic('mmuster', demo.mmuster.password), 'content-type': 'application/json' };
    const put = await fetch(`${server.origin}/werk/2.json`, {
      method: 'POST',
      headers: { ...headers, 'x-http-method-override': 'PUT' },
      body: werkBody('json', { titel: 'Hafen im Nebel', jahr: 1994, art: 'Gemälde', beschreibung: 'Neu beschrieben.' }),
    });
    assert.equal(put.status, 200);
    assert.equal((await readJson(put)).beschreibung, 'Neu beschrieben.');
    const bad = await fetch(`${server.origin}/werk/2.json`, {
      method: 'POST',
      headers: { ...headers, 'x-http-method-override': 'GET' },
      body: '{}',
    });
    assert.deepEqual(
      [bad.status, await detailOf(bad)],
      [400, 'The X-HTTP-Method-Override header may name PUT or DELETE, not "GET".'],
    );
    const cookie = await logInAs(server.origin, 'mmuster');
    const form = await fetch(`${server.origin}/werk/2.json`, {
      method: 'POST',
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
      body: '_method=PATCH',
    });
    assert.deepEqual(
      [form.status, await detailOf(form)],
      [400, 'The form field _method may name PUT or DELETE, not "PATCH".'],
    );
  });
});

describe('two librarians lending the same work at the same moment', () => {
  test('one gets 201, the other 409, and the work is lent once', async () => {
    await createAccount(server.db, {
      username: 'zweite',
      password: 'zweite-bibliothek',
      role: 'librarian',
      personUsername: null,
    });
    const sessions = await Promise.all([
      logInAs(server.origin, 'bibliothek'),
      logIn(server.origin, 'zweite', 'zweite-bibliothek'),
    ]);
    const tokens = await Promise.all(sessions.map((cookie) => csrfTokenOf(server.origin, cookie, '/personen/neu')));
    // Works nobody has on loan; each round sends both lendings at once.
    for (const werkId of [20, 21, 22, 23, 24]) {
      const answers = await Promise.all(
        sessions.map((cookie, i) =>
          fetch(`${server.origin}/entlehnte/${i === 0 ? 3 : 4}.json`, {
            method: 'POST',
            headers: { cookie, 'x-csrf-token': tokens[i] as string, 'content-type': 'application/json' },
            body: JSON.stringify({ url: `${server.origin}/werk/${werkId}` }),
          }),
        ),
      );
      assert.deepEqual(answers.map((a) => a.status).sort(), [201, 409], `work ${werkId}`);
      const [{ open }] = (await server.db.query<{ open: number }>(
        'SELECT count(*)::int AS open FROM loan WHERE werk_id = $1 AND returned_at IS NULL',
        [werkId],
      )) as [{ open: number }];
      assert.equal(open, 1);
    }
  });
});

describe('a title with markup, an ampersand and quotes', () => {
  test('comes back escaped and intact in HTML, XML and JSON', async () => {
    const titel = '<script>alert(1)</script> & "Zitat"';
    const res = await asUser(server.origin, 'jmueller', {
      method: 'POST',
      path: '/person/juergen-mueller/werke',
      format: 'json',
      body: werkBody('json', { titel }),
    });
    assert.equal(res.status, 201);
    const id = Number(res.headers.get('location')?.split('/').pop());
    const [row] = await server.db.query('SELECT titel FROM werk WHERE id = $1', [id]);
    assert.deepEqual(row, { titel });
    const html = await (await fetch(`${server.origin}/werk/${id}.html`)).text();
    assert.ok(html.includes('<h1>&lt;script&gt;alert(1)&lt;/script&gt; &amp; &#34;Zitat&#34;</h1>'), html);
    assert.doesNotMatch(html, /<script>/);
    const person = await (await fetch(`${server.origin}/person/juergen-mueller.html`)).text();
    assert.ok(
      person.includes(`<li><a href="werk/${id}">&lt;script&gt;alert(1)&lt;/script&gt; &amp; &#34;Zitat&#34;</a></li>`),
    );
    const xml = await (await fetch(`${server.origin}/werk/${id}.xml`)).text();
    assert.ok(xml.includes('<titel>&lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;Zitat&quot;</titel>'), xml);
    assert.equal((await readJson(await fetch(`${server.origin}/werk/${id}.json`))).titel, titel);
    // Sent back as XML, the title arrives as it was.
    const xmlPut = await asUser(server.origin, 'jmueller', {
      method: 'PUT',
      path: `/werk/${id}.json`,
      format: 'xml',
      body: werkBody('xml', { titel }),
    });
    assert.equal(xmlPut.status, 200);
    assert.deepEqual(await server.db.query('SELECT titel FROM werk WHERE id = $1', [id]), [{ titel }]);
  });
});
