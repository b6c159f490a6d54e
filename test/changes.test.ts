// Changing data through the API (docs/interface.md, Changing data): every row of the table in JSON and in XML,
// with Basic credentials, on the run's database backend: 201 with Location, 200 with the new
// representation, 204, then 410 for what was deleted and 301 from a slug that moved.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { TestServer } from './helpers.ts';
import { readJson, startTestServer } from './helpers.ts';
import type { ApiFormat } from './change-helpers.ts';
import { asUser, loanBody, personBody, werkBody } from './change-helpers.ts';
import { demo } from './login-helpers.ts';

let server: TestServer;

before(async () => {
  server = await startTestServer();
});
after(() => server.close());

/** The answer's body as plain data: JSON parsed, XML as text with the origin written ORIGIN. */
async function bodyOf(res: Response): Promise<unknown> {
  const text = (await res.text()).replaceAll(server.origin, 'ORIGIN');
  return (res.headers.get('content-type') ?? '').includes('json') ? JSON.parse(text) : text;
}

for (const format of ['json', 'xml'] as const satisfies readonly ApiFormat[]) {
  describe(`every row of the table of changes in ${format.toUpperCase()}`, () => {
    const surname = `Öhlschläger ${format}`;
    let personId = 0;
    let werkId = 0;

    test('POST /personen: a librarian creates a person, 201 with Location /person/<id> and the new person', async () => {
      const res = await asUser(server.origin, 'bibliothek', {
        method: 'POST',
        path: '/personen',
        format,
        body: personBody(format, { vorname: 'Ida', nachname: surname, username: `ida-${format}` }),
      });
      assert.equal(res.status, 201);
      const location = res.headers.get('location') ?? '';
      assert.match(location, new RegExp(`^${server.origin}/person/[0-9]+$`));
      personId = Number(location.split('/').pop());
      assert.equal(res.headers.get('content-type'), `application/${format}; charset=utf-8`);
      assert.equal(res.headers.get('cache-control'), 'private, no-store');
      const expected =
        format === 'json'
          ? { image: 'ORIGIN/img/person.svg', vorname: 'Ida', nachname: surname, werk: [] }
          : `<?xml version="1.0" encoding="UTF-8"?>\n<person>\n  <image ref="ORIGIN/img/person.svg"/>\n  <vorname>Ida</vorname>\n  <nachname>${surname}</nachname>\n  <username>ida-${format}</username>\n  <werke/>\n</person>\n`;
      assert.deepEqual(await bodyOf(res), expected);
      const page = await fetch(`${location}.json`);
      assert.equal(page.status, 200);
      assert.equal(
        page.headers.get('link')?.split(',')[0],
        `<${server.origin}/person/ida-oehlschlaeger-${format}>; rel="canonical"`,
      );
    });

    test("POST /person/<slug>/werke: the person's own account adds a work, 201 with Location /werk/<id>", async () => {
      // The account becomes this person's, as the accounts tool does with --person.
      await server.db.query('UPDATE account SET person_username = $1 WHERE username = $2', [
        `ida-${format}`,
        'aschaefer',
      ]);
      const res = await asUser(server.origin, 'aschaefer', {
        method: 'POST',
        path: `/person/ida-oehlschlaeger-${format}/werke`,
        format,
        body: werkBody(format, {
          titel: 'Erste Arbeit',
          jahr: 2024,
          art: 'Zeichnung',
          beschreibung: 'Tusche auf Papier.\nZwei Zeilen.',
        }),
      });
      assert.equal(res.status, 201);
      const location = res.headers.get('location') ?? '';
      assert.match(location, new RegExp(`^${server.origin}/werk/[0-9]+$`));
      werkId = Number(location.split('/').pop());
      const expected =
        format === 'json'
          ? {
              titel: 'Erste Arbeit',
              url: `ORIGIN/werk/${werkId}`,
              jahr: 2024,
              art: 'Zeichnung',
              beschreibung: 'Tusche auf Papier.\nZwei Zeilen.',
              person: { vorname: 'Ida', nachname: surname, url: `ORIGIN/person/ida-oehlschlaeger-${format}` },
              personen: 'ORIGIN/personen',
            }
          : `<?xml version="1.0" encoding="UTF-8"?>\n<werk ref="ORIGIN/werk/${werkId}">\n  <titel>Erste Arbeit</titel>\n  <jahr>2024</jahr>\n  <art>Zeichnung</art>\n` +
            `  <beschreibung>Tusche auf Papier.\nZwei Zeilen.</beschreibung>\n  <person ref="ORIGIN/person/ida-oehlschlaeger-${format}">\n    <vorname>Ida</vorname>\n    <nachname>${surname}</nachname>\n  </person>\n  <personen ref="ORIGIN/personen"/>\n</werk>\n`;
      assert.deepEqual(await bodyOf(res), expected);
    });

    test('PUT /werk/<id>: 200 with the new representation', async () => {
      const res = await asUser(server.origin, 'aschaefer', {
        method: 'PUT',
        path: `/werk/${werkId}`,
        format,
        body: werkBody(format, { titel: 'Erste Arbeit (überarbeitet)', jahr: null }),
      });
      assert.equal(res.status, 200);
      const body = await bodyOf(res);
      if (format === 'json')
        assert.deepEqual(
          { ...(body as object), person: undefined },
          {
            titel: 'Erste Arbeit (überarbeitet)',
            url: `ORIGIN/werk/${werkId}`,
            jahr: null,
            art: '',
            beschreibung: '',
            person: undefined,
            personen: 'ORIGIN/personen',
          },
        );
      else
        assert.match(
          body as string,
          /<titel>Erste Arbeit \(überarbeitet\)<\/titel>\n {2}<jahr\/>\n {2}<art\/>\n {2}<beschreibung\/>/,
        );
      const [row] = await server.db.query('SELECT titel, jahr, art, beschreibung FROM werk WHERE id = $1', [werkId]);
      assert.deepEqual(row, { titel: 'Erste Arbeit (überarbeitet)', jahr: null, art: '', beschreibung: '' });
    });

    test("POST /entlehnte/<user_id>: a librarian lends the work, 201 with the loan's Location; the loan list shows it", async () => {
      const res = await asUser(server.origin, 'bibliothek', {
        method: 'POST',
        path: `/entlehnte/${demo.aschaefer.id}`,
        format,
        body: loanBody(format, { url: `${server.origin}/werk/${werkId}`, bis: '2999-12-31' }),
      });
      assert.equal(res.status, 201);
      assert.equal(res.headers.get('location'), `${server.origin}/entlehnte/${demo.aschaefer.id}/${werkId}`);
      const [{ today }] = (await server.db.query<{ today: string }>(
        `SELECT to_char(current_date, 'YYYY-MM-DD') AS today`,
      )) as [{ today: string }];
      const expected =
        format === 'json'
          ? {
              url: `ORIGIN/entlehnte/4/${werkId}`,
              benutzer: { name: 'aschaefer', entlehnte: 'ORIGIN/entlehnte/4' },
              werk: { titel: 'Erste Arbeit (überarbeitet)', url: `ORIGIN/werk/${werkId}` },
              person: { name: `Ida ${surname}`, url: `ORIGIN/person/ida-oehlschlaeger-${format}` },
              seit: today,
              bis: '2999-12-31',
              zurueck: null,
              ueberfaellig: false,
            }
          : `<?xml version="1.0" encoding="UTF-8"?>\n<entlehnung ref="ORIGIN/entlehnte/4/${werkId}" seit="${today}" bis="2999-12-31" ueberfaellig="false">\n` +
            `  <benutzer name="aschaefer" ref="ORIGIN/entlehnte/4"/>\n  <werk ref="ORIGIN/werk/${werkId}">Erste Arbeit (überarbeitet)</werk>\n  <person ref="ORIGIN/person/ida-oehlschlaeger-${format}">Ida ${surname}</person>\n</entlehnung>\n`;
      assert.deepEqual(await bodyOf(res), expected);
      const list = await readJson(
        await asUser(server.origin, 'aschaefer', {
          method: 'GET',
          path: `/entlehnte/${demo.aschaefer.id}.json`,
          format: 'json',
        }),
      );
      assert.ok(list.entlehnt.some((loan: { url: string }) => loan.url === `${server.origin}/werk/${werkId}`));
    });

    test('POST /entlehnte/<user_id> for a work on loan: 409 with the message at the field werk, nothing lent', async () => {
      const res = await asUser(server.origin, 'bibliothek', {
        method: 'POST',
        path: `/entlehnte/${demo.mmuster.id}`,
        format,
        body: loanBody(format, { url: `${server.origin}/werk/${werkId}` }),
      });
      assert.equal(res.status, 409);
      const message = '"Erste Arbeit (überarbeitet)" is on loan to aschaefer; record its return first.';
      if (format === 'json') assert.deepEqual((await readJson(res)).errors, [{ field: 'werk', message }]);
      else
        assert.match(
          await res.text(),
          new RegExp(
            `<errors>\\n {4}<error field="werk">&quot;Erste Arbeit \\(überarbeitet\\)&quot; is on loan to aschaefer; record its return first.</error>\\n {2}</errors>`,
          ),
        );
      const [{ count }] = (await server.db.query<{ count: number }>(
        'SELECT count(*)::int AS count FROM loan WHERE werk_id = $1',
        [werkId],
      )) as [{ count: number }];
      assert.equal(count, 1);
    });

    test('DELETE /person/<slug> while a work is on loan: 409, nothing deleted', async () => {
      const res = await asUser(server.origin, 'bibliothek', { method: 'DELETE', path: `/person/${personId}`, format });
      assert.equal(res.status, 409);
      assert.equal((await fetch(`${server.origin}/person/${personId}.json`)).status, 200);
    });

    test('DELETE /entlehnte/<user_id>/<work_id>: a librarian records the return, 204; the loan URL says when it came back', async () => {
      const res = await asUser(server.origin, 'bibliothek', {
        method: 'DELETE',
        path: `/entlehnte/${demo.aschaefer.id}/${werkId}`,
        format,
      });
      assert.equal(res.status, 204);
      assert.equal(await res.text(), '');
      const again = await asUser(server.origin, 'bibliothek', {
        method: 'DELETE',
        path: `/entlehnte/${demo.aschaefer.id}/${werkId}`,
        format,
      });
      assert.equal(again.status, 404);
      const loan = await readJson(
        await asUser(server.origin, 'aschaefer', {
          method: 'GET',
          path: `/entlehnte/${demo.aschaefer.id}/${werkId}.json`,
          format: 'json',
        }),
      );
      assert.match(loan.zurueck, /^[0-9]{4}-[0-9]{2}-[0-9]{2}$/);
    });

    test('PUT /person/<slug>: 200 with the new representation; the old slug answers 301 to the new one', async () => {
      const res = await asUser(server.origin, 'aschaefer', {
        method: 'PUT',
        path: `/person/ida-oehlschlaeger-${format}`,
        format,
        body: personBody(format, { vorname: 'Ida Maria', nachname: surname, image: 'https://example.org/ida.jpg' }),
      });
      assert.equal(res.status, 200);
      const newSlug = `ida-maria-oehlschlaeger-${format}`;
      assert.equal(res.headers.get('link')?.split(',')[0], `<${server.origin}/person/${newSlug}>; rel="canonical"`);
      const body = await bodyOf(res);
      if (format === 'json')
        assert.deepEqual(body, {
          image: 'https://example.org/ida.jpg',
          vorname: 'Ida Maria',
          nachname: surname,
          werk: [{ titel: 'Erste Arbeit (überarbeitet)', url: `ORIGIN/werk/${werkId}` }],
        });
      // XML without a username keeps it, as JSON must (its representation has none).
      else
        assert.match(
          body as string,
          new RegExp(
            `<image ref="https://example.org/ida.jpg"/>\\n {2}<vorname>Ida Maria</vorname>\\n {2}<nachname>${surname}</nachname>\\n {2}<username>ida-${format}</username>`,
          ),
        );
      for (const [from, to] of [
        [`/person/ida-oehlschlaeger-${format}`, `/person/${newSlug}`],
        [`/person/ida-oehlschlaeger-${format}.json`, `/person/${newSlug}.json`],
        [`/person.php?slug=ida-oehlschlaeger-${format}`, `/person/${newSlug}`],
      ]) {
        const moved = await fetch(server.origin + from, { redirect: 'manual' });
        assert.equal(moved.status, 301, from);
        assert.equal(moved.headers.get('location'), server.origin + to);
      }
      // A change sent to the old slug is redirected with its method kept.
      const put = await asUser(server.origin, 'aschaefer', {
        method: 'PUT',
        path: `/person/ida-oehlschlaeger-${format}`,
        format,
        body: personBody(format, { vorname: 'Ida Maria', nachname: surname }),
      });
      assert.deepEqual([put.status, put.headers.get('location')], [308, `${server.origin}/person/${newSlug}`]);
    });

    test('DELETE /werk/<id>: 204, then the work answers 410', async () => {
      const res = await asUser(server.origin, 'aschaefer', { method: 'DELETE', path: `/werk/${werkId}`, format });
      assert.equal(res.status, 204);
      for (const path of [`/werk/${werkId}`, `/werk/${werkId}.xml`, `/werk.php?id=${werkId}`])
        assert.equal((await fetch(server.origin + path)).status, 410, path);
      const put = await asUser(server.origin, 'aschaefer', {
        method: 'PUT',
        path: `/werk/${werkId}`,
        format,
        body: werkBody(format, { titel: 'Wieder da?' }),
      });
      assert.equal(put.status, 410);
    });

    test('DELETE /person/<id>: 204, then its id, its slugs old and new and its works answer 410', async () => {
      const werk = await asUser(server.origin, 'bibliothek', {
        method: 'POST',
        path: `/person/${personId}/werke`,
        format,
        body: werkBody(format, { titel: 'Zweite Arbeit' }),
      });
      const secondWerk = Number(werk.headers.get('location')?.split('/').pop());
      const res = await asUser(server.origin, 'bibliothek', { method: 'DELETE', path: `/person/${personId}`, format });
      assert.equal(res.status, 204);
      const paths = [
        `/person/${personId}`,
        `/person/ida-maria-oehlschlaeger-${format}`,
        `/person/ida-oehlschlaeger-${format}.json`,
        `/person.php?pid=${personId}`,
        `/werk/${secondWerk}`,
      ];
      const statuses = await Promise.all(
        paths.map(async (path) => (await fetch(server.origin + path, { redirect: 'manual' })).status),
      );
      assert.deepEqual(statuses, [410, 410, 410, 410, 410]);
      assert.equal(
        (await fetch(`${server.origin}/person/${personId}.json`)).headers.get('content-type'),
        'application/problem+json; charset=utf-8',
      );
      const [account] = await server.db.query('SELECT person_username FROM account WHERE username = $1', ['aschaefer']);
      assert.deepEqual(account, { person_username: null });
    });
  });
}
