// The loan list /entlehnte/<user_id>: who gets which status (docs/interface.md) in all three
// representations, its shapes with links to the works and persons, and its cache headers.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { TestServer } from './helpers.ts';
import { readJson, startTestServer } from './helpers.ts';
import { basic, demo, logInAs, tokenOf } from './login-helpers.ts';

let server: TestServer;
const cookies: Record<string, string> = {};
let today = '';

before(async () => {
  server = await startTestServer();
  for (const user of ['mmuster', 'jmueller', 'bibliothek'] as const) cookies[user] = await logInAs(server.origin, user);
  cookies.expired = await logInAs(server.origin, 'mmuster');
  // The idle time-out (30 minutes by default) has passed for this one.
  await server.db.query(`UPDATE session SET last_seen_at = now() - interval '31 minutes' WHERE id = $1`, [
    sha256(tokenOf(cookies.expired)),
  ]);
  const [row] = await server.db.query<{ today: string }>(`SELECT to_char(current_date, 'YYYY-MM-DD') AS today`);
  today = (row as { today: string }).today;
});
after(() => server.close());

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** The demo loans are dated relative to the day the demo data was loaded: today. */
function daysFromToday(days: number): string {
  const date = new Date(`${today}T00:00:00Z`);
  date.setUTCDate(date.getUTCDate() + days);
  return date.toISOString().slice(0, 10);
}

const clients: {
  name: string;
  headers: () => Record<string, string>;
  owner: number;
  other: number;
  unknown: number;
}[] = [
  {
    name: 'the owner (session)',
    headers: () => ({ cookie: cookies.mmuster as string }),
    owner: 200,
    other: 403,
    unknown: 403,
  },
  {
    name: 'the owner (Basic credentials)',
    headers: () => ({ authorization: basic('mmuster', demo.mmuster.password) }),
    owner: 200,
    other: 403,
    unknown: 403,
  },
  {
    name: 'a librarian',
    headers: () => ({ cookie: cookies.bibliothek as string }),
    owner: 200,
    other: 200,
    unknown: 404,
  },
  {
    name: 'another user',
    headers: () => ({ cookie: cookies.jmueller as string }),
    owner: 403,
    other: 200,
    unknown: 403,
  },
  { name: 'an anonymous client', headers: () => ({}), owner: 403, other: 403, unknown: 403 },
  {
    name: 'a client with wrong Basic credentials',
    headers: () => ({ authorization: basic('mmuster', 'wrong-password') }),
    owner: 403,
    other: 403,
    unknown: 403,
  },
  {
    name: 'a client with an expired session',
    headers: () => ({ cookie: cookies.expired as string }),
    owner: 403,
    other: 403,
    unknown: 403,
  },
];

describe('who may read a loan list', () => {
  for (const client of clients) {
    for (const suffix of ['html', 'xml', 'json']) {
      test(`${client.name}: mmuster's list ${client.owner}, jmueller's ${client.other}, an unknown id ${client.unknown} (${suffix})`, async () => {
        const statuses = [];
        for (const uid of [demo.mmuster.id, demo.jmueller.id, 999]) {
          const res = await fetch(`${server.origin}/entlehnte/${uid}.${suffix}`, { headers: client.headers() });
          await res.arrayBuffer();
          statuses.push(res.status);
        }
        assert.deepEqual(statuses, [client.owner, client.other, client.unknown]);
      });
    }
  }

  test('the script-style URL answers the same', async () => {
    const res = await fetch(`${server.origin}/entlehnte.php?uid=2`, {
      headers: { cookie: cookies.mmuster as string, accept: 'application/json' },
    });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('link')?.split(', ')[0], `<${server.origin}/entlehnte/2>; rel="canonical"`);
  });

  test('the 403 page offers the login link with the way back', async () => {
    const res = await fetch(`${server.origin}/entlehnte/2`);
    assert.equal(res.status, 403);
    assert.equal(res.headers.get('cache-control'), 'no-store');
    const html = await res.text();
    assert.match(html, /<p>This loan list is protected\. Log in as its owner or as a librarian to see it\.<\/p>/);
    assert.match(html, /<a class="login" href="login\?back=\/entlehnte\/2">Log in<\/a> to see it\./);
  });

  test('the 403 page says when the session has expired', async () => {
    const expired = await logInAs(server.origin, 'mmuster');
    await server.db.query(`UPDATE session SET expires_at = now() - interval '1 second' WHERE id = $1`, [
      sha256(tokenOf(expired)),
    ]);
    const res = await fetch(`${server.origin}/entlehnte/2`, { headers: { cookie: expired } });
    assert.equal(res.status, 403);
    assert.match(
      await res.text(),
      /<p>This loan list is protected\. Your session has expired; log in again to see it\.<\/p>/,
    );
  });

  test('403 and 404 as problem details', async () => {
    const anonymous = await fetch(`${server.origin}/entlehnte/3.json`);
    assert.equal(anonymous.headers.get('content-type'), 'application/problem+json; charset=utf-8');
    assert.deepEqual(await anonymous.json(), {
      type: 'about:blank',
      title: 'Forbidden',
      status: 403,
      detail: 'This loan list is protected. Log in as its owner or as a librarian to see it.',
    });
    const unknown = await fetch(`${server.origin}/entlehnte/999.json`, {
      headers: { cookie: cookies.bibliothek as string },
    });
    assert.deepEqual(await unknown.json(), {
      type: 'about:blank',
      title: 'Not Found',
      status: 404,
      detail: 'There is no user with the id 999.',
    });
  });

  test('a malformed user id is 400 for everyone', async () => {
    assert.equal((await fetch(`${server.origin}/entlehnte.php?uid=abc`)).status, 400);
    assert.equal(
      (await fetch(`${server.origin}/entlehnte.php?uid=0`, { headers: { cookie: cookies.bibliothek as string } }))
        .status,
      400,
    );
  });
});

describe('representations of a loan list', () => {
  test("JSON lists the works on loan with links to each work, its person and the user's person page", async () => {
    const res = await fetch(`${server.origin}/entlehnte/2.json`, { headers: { cookie: cookies.mmuster as string } });
    assert.equal(res.headers.get('content-type'), 'application/json; charset=utf-8');
    const o = server.origin;
    assert.deepEqual(await res.json(), {
      url: `${o}/entlehnte/2`,
      benutzer: { name: 'mmuster', person: `${o}/person/max-muster` },
      total: 2,
      offset: 0,
      limit: 50,
      previous: null,
      next: null,
      entlehnt: [
        {
          titel: 'Das Haus am Deich',
          url: `${o}/werk/14`,
          seit: daysFromToday(-40),
          bis: daysFromToday(-12),
          ueberfaellig: true,
          person: { name: 'Anna-Lena Schäfer', url: `${o}/person/anna-lena-schaefer` },
        },
        {
          titel: 'Über "das" Meer',
          url: `${o}/werk/7`,
          seit: daysFromToday(-20),
          bis: daysFromToday(8),
          ueberfaellig: false,
          person: { name: 'Jürgen Müller', url: `${o}/person/juergen-mueller` },
        },
      ],
    });
  });

  test('XML has one root with the same links, and every value escaped', async () => {
    const res = await fetch(`${server.origin}/entlehnte/2.xml`, { headers: { cookie: cookies.mmuster as string } });
    assert.equal(res.headers.get('content-type'), 'application/xml; charset=utf-8');
    const o = server.origin;
    assert.equal(
      await res.text(),
      `<?xml version="1.0" encoding="UTF-8"?>
<entlehnte ref="${o}/entlehnte/2" total="2" offset="0" limit="50">
  <benutzer name="mmuster" ref="${o}/person/max-muster"/>
  <werk ref="${o}/werk/14" seit="${daysFromToday(-40)}" bis="${daysFromToday(-12)}" ueberfaellig="true">
    <titel>Das Haus am Deich</titel>
    <person ref="${o}/person/anna-lena-schaefer">Anna-Lena Schäfer</person>
  </werk>
  <werk ref="${o}/werk/7" seit="${daysFromToday(-20)}" bis="${daysFromToday(8)}" ueberfaellig="false">
    <titel>Über &quot;das&quot; Meer</titel>
    <person ref="${o}/person/juergen-mueller">Jürgen Müller</person>
  </werk>
</entlehnte>
`,
    );
  });

  test("HTML links each work and the user's person page, and marks what is overdue", async () => {
    const res = await fetch(`${server.origin}/entlehnte/2`, { headers: { cookie: cookies.mmuster as string } });
    const html = await res.text();
    assert.match(
      html,
      /<h1>Loans of mmuster<\/h1>\n<p><a href="person\/max-muster">Max Muster<\/a> has 2 works on loan\.<\/p>/,
    );
    assert.ok(html.includes(`<td data-label="Work"><a href="werk/14">Das Haus am Deich</a></td>`));
    assert.ok(
      html.includes(
        `<td data-label="Due" class="overdue"><time datetime="${daysFromToday(-12)}">${daysFromToday(-12)}</time> (overdue)</td>`,
      ),
    );
    assert.ok(html.includes(`<td data-label="Work"><a href="werk/7">Über &#34;das&#34; Meer</a></td>`));
  });

  test('a returned work is not on the list; a user without loans has an empty one', async () => {
    const jmueller = await readJson(
      await fetch(`${server.origin}/entlehnte/3.json`, { headers: { cookie: cookies.jmueller as string } }),
    );
    assert.deepEqual(
      jmueller.entlehnt.map((l: { titel: string }) => l.titel),
      ['Stillleben mit Zitronen'],
    );
    const empty = await readJson(
      await fetch(`${server.origin}/entlehnte/4.json`, { headers: { cookie: cookies.bibliothek as string } }),
    );
    assert.deepEqual(
      { total: empty.total, entlehnt: empty.entlehnt, benutzer: empty.benutzer },
      {
        total: 0,
        entlehnt: [],
        benutzer: { name: 'aschaefer', person: `${server.origin}/person/anna-lena-schaefer` },
      },
    );
  });

  test('an account that is no person has no person link', async () => {
    const res = await fetch(`${server.origin}/entlehnte/1.xml`, { headers: { cookie: cookies.bibliothek as string } });
    assert.match(
      await res.text(),
      /<entlehnte ref="[^"]+\/entlehnte\/1" total="0" offset="0" limit="50">\n {2}<benutzer name="bibliothek"\/>\n<\/entlehnte>/,
    );
  });

  test('a page past the end links back to the last page', async () => {
    const res = await fetch(`${server.origin}/entlehnte/2.json?offset=50`, {
      headers: { cookie: cookies.mmuster as string },
    });
    const list = await readJson(res);
    assert.deepEqual(
      { total: list.total, previous: list.previous, next: list.next, entlehnt: list.entlehnt },
      {
        total: 2,
        previous: `${server.origin}/entlehnte/2`,
        next: null,
        entlehnt: [],
      },
    );
  });
});

describe('caching of a protected page', () => {
  test('is private and never stored, without an ETag, in every representation', async () => {
    for (const suffix of ['', '.html', '.xml', '.json']) {
      const res = await fetch(`${server.origin}/entlehnte/2${suffix}`, {
        headers: { cookie: cookies.mmuster as string },
      });
      assert.equal(res.status, 200, suffix);
      assert.equal(res.headers.get('cache-control'), 'private, no-store', suffix);
      assert.equal(res.headers.get('etag'), null, suffix);
    }
  });

  test('If-None-Match never answers 304 across users', async () => {
    const res = await fetch(`${server.origin}/entlehnte/2.json`, {
      headers: { cookie: cookies.bibliothek as string, 'if-none-match': '*' },
    });
    assert.equal(res.status, 200);
  });

  test('the access log names the authenticated user (%u)', async () => {
    await (
      await fetch(`${server.origin}/entlehnte/3.json?log=basic`, {
        headers: { authorization: basic('jmueller', demo.jmueller.password) },
      })
    ).arrayBuffer();
    await (
      await fetch(`${server.origin}/entlehnte/3.json?log=session`, {
        headers: { cookie: cookies.bibliothek as string },
      })
    ).arrayBuffer();
    const log = await waitForLines(() => server.accessLog(), /log=session/);
    assert.match(log, /^127\.0\.0\.1 - jmueller \[[^\]]+\] "GET \/entlehnte\/3\.json\?log=basic HTTP\/1\.1" 200 /m);
    assert.match(log, /^127\.0\.0\.1 - bibliothek \[[^\]]+\] "GET \/entlehnte\/3\.json\?log=session HTTP\/1\.1" 200 /m);
  });
});

async function waitForLines(read: () => string, until: RegExp): Promise<string> {
  for (let i = 0; i < 100 && !until.test(read()); i++) await new Promise((resolve) => setTimeout(resolve, 20));
  return read();
}
