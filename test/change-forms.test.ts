// The HTML forms that change data: reachable from the pages they change, 403 with a login
// link for anyone who may not use them, 303 to the result after success, and after a failure
// the form again with what was typed and the messages beside the fields.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { HtmlValidate } from 'html-validate';
import type { TestServer } from './helpers.ts';
import { startTestServer } from './helpers.ts';
import { csrfTokenOf, personRow } from './change-helpers.ts';
import { logInAs, postForm, tokenOf } from './login-helpers.ts';

let server: TestServer;
let mmuster = '';
let bibliothek = '';

before(async () => {
  server = await startTestServer();
  mmuster = await logInAs(server.origin, 'mmuster');
  bibliothek = await logInAs(server.origin, 'bibliothek');
});
after(() => server.close());

const validator = new HtmlValidate({
  extends: ['html-validate:recommended', 'html-validate:document'],
  rules: { 'no-trailing-whitespace': 'off', 'require-sri': ['error', { target: 'crossorigin' }] },
});

async function page(path: string, cookie?: string): Promise<{ status: number; html: string }> {
  const res = await fetch(server.origin + path, { headers: cookie ? { cookie } : {} });
  return { status: res.status, html: await res.text() };
}

describe('where the forms are', () => {
  test('public pages link to them, hidden until js/site.js shows them, without reading the session', async () => {
    const person = await fetch(`${server.origin}/person/max-muster`);
    assert.equal(person.headers.get('set-cookie'), null);
    const html = await person.text();
    assert.ok(
      html.includes(
        '<p class="edit" data-may="person/max-muster" hidden><a rel="nofollow" href="person/max-muster/bearbeiten">Edit</a> · <a rel="nofollow" href="person/max-muster/bild">Change the picture</a> · <a rel="nofollow" href="person/max-muster/werke/neu">Add a work</a> · <a rel="nofollow" href="person/max-muster/loeschen">Delete</a></p>',
      ),
      html,
    );
    assert.ok(
      (await page('/werk/1')).html.includes(
        '<p class="edit" data-may="person/max-muster" hidden><a rel="nofollow" href="werk/1/bearbeiten">Edit</a> · <a rel="nofollow" href="werk/1/loeschen">Delete</a></p>',
      ),
    );
    assert.ok(
      (await page('/personen')).html.includes(
        '<p class="edit" data-may="librarian" hidden><a rel="nofollow" href="personen/neu">New person</a></p>',
      ),
    );
  });

  test('the form pages are valid HTML5, for those who may use them; others get 403 with a login link', async () => {
    for (const [path, cookie] of [
      ['/person/max-muster/bearbeiten', mmuster],
      ['/person/max-muster/bild', mmuster],
      ['/person/max-muster/werke/neu', mmuster],
      ['/werk/1/bearbeiten', mmuster],
      ['/personen/neu', bibliothek],
      ['/entlehnte/2', bibliothek],
    ] as const) {
      const { status, html } = await page(path, cookie);
      assert.equal(status, 200, path);
      const report = await validator.validateString(html);
      assert.deepEqual(
        report.results.flatMap((r) => r.messages.map((m) => `${m.line}:${m.column} ${m.ruleId}: ${m.message}`)),
        [],
        path,
      );
      assert.match(html, /<input type="hidden" name="csrf_token" value="[A-Za-z0-9_-]{43}">/, path);
    }
    const anonymous = await page('/person/max-muster/bearbeiten');
    assert.equal(anonymous.status, 403);
    assert.ok(anonymous.html.includes('<a class="login" href="login?back=/person/max-muster/bearbeiten">'));
    assert.equal((await page('/werk/6/bearbeiten', mmuster)).status, 403);
    assert.equal((await page('/personen/neu', mmuster)).status, 403);
    // Only a librarian's loan list has the lend form and the return buttons.
    assert.doesNotMatch((await page('/entlehnte/2', mmuster)).html, /Lend a work|name="_method"/);
  });
});

describe('sending a form', () => {
  test('success answers 303 to the result; PUT travels as _method', async () => {
    const csrf_token = await csrfTokenOf(server.origin, mmuster, '/werk/2/bearbeiten');
    const res = await postForm(
      server.origin,
      '/werk/2',
      { _method: 'PUT', csrf_token, titel: 'Hafen im Nebel', jahr: '1995', art: 'Gemälde', beschreibung: '' },
      { cookie: mmuster, origin: server.origin },
    );
    assert.deepEqual([res.status, res.headers.get('location')], [303, `${server.origin}/werk/2`]);
    assert.deepEqual(await server.db.query('SELECT jahr FROM werk WHERE id = 2'), [{ jahr: 1995 }]);
  });

  test('invalid fields: 422 and the form again, with the input filled in and the messages beside the fields', async () => {
    const csrf_token = await csrfTokenOf(server.origin, mmuster, '/person/max-muster/bearbeiten');
    const res = await postForm(
      server.origin,
      '/person/max-muster',
      {
        _method: 'PUT',
        csrf_token,
        vorname: 'Max <b>"Maxi"</b>',
        nachname: '',
        username: 'mmuster',
        image: 'kein bild',
      },
      { cookie: mmuster },
    );
    assert.equal(res.status, 422);
    const html = await res.text();
    assert.ok(
      html.includes(
        '<input id="feld-vorname" name="vorname" type="text" maxlength="200" value="Max &lt;b&gt;&#34;Maxi&#34;&lt;/b&gt;" required>',
      ),
      html,
    );
    assert.ok(
      html.includes(
        '<input id="feld-nachname" name="nachname" type="text" maxlength="200" value="" required aria-invalid="true" aria-describedby="feld-nachname-fehler">',
      ),
    );
    assert.ok(html.includes('<p class="error" id="feld-nachname-fehler">Required: it must not be empty.</p>'));
    assert.ok(html.includes('value="kein bild"'));
    assert.ok(
      html.includes(
        '<p class="error" id="feld-image-fehler">Must be an http or https URL (https://example.org/bild.jpg) or a path on this site (/img/name.svg).</p>',
      ),
    );
    assert.ok(html.includes('<p class="notice" role="alert">The person was not changed: 2 fields are invalid.</p>'));
    assert.equal((await personRow(server.db, 1))?.vorname, 'Max');
  });

  test('a missing CSRF token: 403 and the form again with a fresh token, nothing changed', async () => {
    const res = await postForm(server.origin, '/person/max-muster/werke', { titel: 'Ohne Token' }, { cookie: mmuster });
    assert.equal(res.status, 403);
    const html = await res.text();
    assert.ok(html.includes('value="Ohne Token"'));
    assert.match(html, /The CSRF token is missing or wrong/);
    const token = /name="csrf_token" value="([^"]+)"/.exec(html)?.[1] as string;
    const again = await postForm(
      server.origin,
      '/person/max-muster/werke',
      { titel: 'Mit Token', csrf_token: token },
      { cookie: mmuster },
    );
    assert.equal(again.status, 303);
    assert.match(again.headers.get('location') ?? '', /\/werk\/[0-9]+$/);
    assert.deepEqual(await server.db.query(`SELECT titel FROM werk WHERE titel IN ('Ohne Token', 'Mit Token')`), [
      { titel: 'Mit Token' },
    ]);
  });

  test('an expired session: 403, the form again with the input, and a link to log in again', async () => {
    const cookie = await logInAs(server.origin, 'mmuster');
    const csrf_token = await csrfTokenOf(server.origin, cookie, '/person/max-muster/werke/neu');
    await server.db.query(`UPDATE session SET last_seen_at = now() - interval '31 minutes' WHERE id = $1`, [
      createHash('sha256').update(tokenOf(cookie)).digest('hex'),
    ]);
    const res = await postForm(server.origin, '/person/max-muster/werke', { titel: 'Zu spät', csrf_token }, { cookie });
    assert.equal(res.status, 403);
    const html = await res.text();
    assert.ok(
      html.includes(
        '<p class="notice" role="alert">Your session has expired; log in again and repeat the change. <a class="login" href="login?back=/person/max-muster/werke/neu">Log in</a></p>',
      ),
      html,
    );
    assert.ok(html.includes('value="Zu spät"'));
  });

  test("a librarian lends and records the return through the loan list's forms", async () => {
    const csrf_token = await csrfTokenOf(server.origin, bibliothek, '/entlehnte/4');
    const lent = await postForm(
      server.origin,
      '/entlehnte/4',
      { werk: '33', bis: '', csrf_token },
      { cookie: bibliothek },
    );
    assert.deepEqual([lent.status, lent.headers.get('location')], [303, `${server.origin}/entlehnte/4`]);
    const list = (await page('/entlehnte/4', bibliothek)).html;
    assert.match(list, /<form class="return" method="post" action="entlehnte\/4\/33">/);
    const twice = await postForm(server.origin, '/entlehnte/2', { werk: '33', csrf_token }, { cookie: bibliothek });
    assert.equal(twice.status, 409);
    const html = await twice.text();
    assert.ok(html.includes('value="33"'));
    assert.match(
      html,
      /<p class="error" id="feld-werk-fehler">&#34;.+&#34; is on loan to aschaefer; record its return first.<\/p>/,
    );
    const returned = await postForm(
      server.origin,
      '/entlehnte/4/33',
      { _method: 'DELETE', csrf_token },
      { cookie: bibliothek },
    );
    assert.deepEqual([returned.status, returned.headers.get('location')], [303, `${server.origin}/entlehnte/4`]);
    assert.doesNotMatch((await page('/entlehnte/4', bibliothek)).html, /entlehnte\/4\/33/);
  });

  test('deleting a work through its edit form answers 303 to its person', async () => {
    const csrf_token = await csrfTokenOf(server.origin, mmuster, '/werk/4/bearbeiten');
    const res = await postForm(server.origin, '/werk/4', { _method: 'DELETE', csrf_token }, { cookie: mmuster });
    assert.deepEqual([res.status, res.headers.get('location')], [303, `${server.origin}/person/max-muster`]);
    assert.equal((await fetch(`${server.origin}/werk/4`)).status, 410);
    assert.equal((await page('/werk/4/bearbeiten', mmuster)).status, 410);
  });
});
