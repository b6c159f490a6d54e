// What a request body may cost (docs/robustness.md, Request bodies): a change from someone who
// may change nothing is answered before its body is read; a body someone logged in sends is
// counted before it is parsed, so none holds the event loop; bodies that are not UTF-8, and
// changes a page of another site sends, are refused. The server runs as a process of its own,
// so that the clients' work does not count as its.
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import { csrfTokenOf } from './change-helpers.ts';
import { readJson } from './helpers.ts';
import { logInAs } from './login-helpers.ts';
import type { OwnProgram } from './program.ts';
import { startOwnProgram } from './program.ts';

let own: OwnProgram;
let server: { origin: string };
let session: { cookie: string; token: string };

before(async () => {
  own = await startOwnProgram();
  server = { origin: own.program.origin };
  const cookie = await logInAs(server.origin, 'bibliothek');
  session = { cookie, token: await csrfTokenOf(server.origin, cookie, '/person/max-muster/bearbeiten') };
});
after(() => own.close());

const megabyte = 1000 * 1000;

/** Bodies of about a megabyte that cost the most to parse, each of one kind. */
const hostile = {
  'application/xml': () => {
    const attributes = Array.from({ length: megabyte / 12 }, (_, i) => `a${i}="x"`).join(' ');
    return `<person ${attributes}/>`;
  },
  'application/x-www-form-urlencoded': () => 'a=b&'.repeat(megabyte / 4),
  'application/json': () => `{${Array.from({ length: megabyte / 12 }, (_, i) => `"k${i}":1`).join(',')}}`,
} as const;

type Kind = keyof typeof hostile;

/** The median time of `count` person pages fetched one after another. */
async function personTimes(count: number): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < count; i++) {
    const started = performance.now();
    const res = await fetch(`${server.origin}/person/max-muster.json`);
    assert.equal(res.status, 200);
    await res.arrayBuffer();
    times.push(performance.now() - started);
  }
  return times;
}

function median(times: number[]): number {
  const sorted = [...times].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

/**
 * The person pages' median beside `senders` clients that each send a hostile body of a megabyte
 * every 100 ms (10 MB/s, at most 100 bodies each), as a ratio to the median alone, measured now;
 * and the statuses the senders got. Parsed whole, one such body held the event loop for a second.
 */
async function besideSenders(
  senders: number,
  send: () => Promise<Response>,
): Promise<{ ratio: number; statuses: Set<number> }> {
  // Alone: before the senders and after them, so that what else the machine does (another test
  // file beside this one) falls on both sides.
  const alone = await personTimes(20);
  const statuses = new Set<number>();
  let measuring = true;
  const loops = Array.from({ length: senders }, async () => {
    for (let i = 0; i < 100 && measuring; i++) {
      const next = new Promise((resolve) => setTimeout(resolve, 100));
      const res = await send();
      statuses.add(res.status);
      await res.arrayBuffer();
      await next;
    }
  });
  // The senders' first bodies are on their way before the measurement starts.
  await new Promise((resolve) => setTimeout(resolve, 50));
  const beside = median(await personTimes(20));
  measuring = false;
  await Promise.all(loops);
  alone.push(...(await personTimes(20)));
  // Below a millisecond, a timer's resolution decides the ratio; a millisecond is the floor.
  return { ratio: beside / Math.max(median(alone), 1), statuses };
}

describe('a change from someone who may change nothing', () => {
  test('is answered 403 before its body arrives, with a login link back to the page it came from', async () => {
    // The headers promise a megabyte that is never sent: an answer can only come before it is read.
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = net.connect(Number(new URL(server.origin).port), '127.0.0.1', () => {
        socket.write(
          [
            'PUT /person/max-muster HTTP/1.1',
            `Host: ${new URL(server.origin).host}`,
            'Content-Type: application/x-www-form-urlencoded',
            `Content-Length: ${megabyte}`,
            `Referer: ${server.origin}/person/max-muster/bearbeiten`,
            '',
            '',
          ].join('\r\n'),
        );
      });
      let received = '';
      socket.on('data', (chunk: Buffer) => {
        received += chunk.toString('latin1');
        if (received.includes('</html>')) {
          socket.destroy();
          resolve(received);
        }
      });
      socket.on('error', reject);
      setTimeout(() => reject(new Error(`no answer within 5 s; received: ${received}`)), 5000).unref();
    });
    assert.match(answer, /^HTTP\/1\.1 403 /);
    assert.match(
      answer,
      /Log in to change this: with the login form, or with HTTP Basic credentials and a JSON or XML body\./,
    );
    assert.match(answer, /<a class="login" href="login\?back=\/person\/max-muster\/bearbeiten">/);
  });

  test('with a cookie that names no session: a form is read to be shown again up to 128 KiB, a larger one is 413', async () => {
    const post = (beschreibung: string) =>
      fetch(`${server.origin}/person/max-muster/werke`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: `portfolio_session=${'x'.repeat(43)}` },
        body: new URLSearchParams({ titel: 'Neu', beschreibung }).toString(),
      });
    const small = await post('Kurz.');
    assert.equal(small.status, 403);
    assert.match(
      await small.text(),
      /Your session has expired; log in again and repeat the change\.[\s\S]*name="titel"[^>]*value="Neu"/,
    );
    const large = await post('x'.repeat(200 * 1024));
    assert.equal(large.status, 413);
    assert.match(await large.text(), /The request body is larger than 128 KiB\./);
  });

  for (const kind of Object.keys(hostile) as Kind[]) {
    test(`sends ${kind} bodies that slow nobody's pages down: 403 each`, async () => {
      const body = hostile[kind]();
      const max = await (await fetch(`${server.origin}/person/max-muster.json`)).text();
      const { ratio, statuses } = await besideSenders(2, () =>
        fetch(`${server.origin}/personen`, {
          method: 'POST',
          headers: { 'content-type': kind, accept: 'application/json' },
          body,
        }),
      );
      assert.deepEqual([...statuses], [403]);
      assert.ok(ratio < 5, `person pages took ${ratio.toFixed(1)} times as long beside the senders`);
      assert.equal(await (await fetch(`${server.origin}/person/max-muster.json`)).text(), max);
    });
  }
});

describe('a body someone logged in sends', () => {
  const expected: Record<Kind, [number, string]> = {
    'application/xml': [
      413,
      'The XML body has more than 1000 elements, attributes and other parts; a person, a work or a loan needs a few dozen at most. Send the fields of one resource.',
    ],
    'application/x-www-form-urlencoded': [
      413,
      'The form has more than 1000 fields; a person, a work or a loan needs a few dozen at most. Send the fields of one resource.',
    ],
    'application/json': [
      413,
      'The JSON body has more than 1000 values; a person, a work or a loan needs a few dozen at most. Send the fields of one resource.',
    ],
  };

  for (const kind of Object.keys(hostile) as Kind[]) {
    test(`of many small parts, ${kind}, is 413 at once and slows nobody's pages down`, async () => {
      const body = hostile[kind]();
      const send = () =>
        fetch(`${server.origin}/personen`, {
          method: 'POST',
          headers: {
            'content-type': kind,
            accept: 'application/json',
            cookie: session.cookie,
            'x-csrf-token': session.token,
          },
          body,
        });
      const res = await send();
      assert.deepEqual([res.status, (await readJson(res)).detail], expected[kind]);
      const { ratio, statuses } = await besideSenders(2, send);
      assert.deepEqual([...statuses], [413]);
      assert.ok(ratio < 5, `person pages took ${ratio.toFixed(1)} times as long beside the senders`);
    });
  }

  test('of many XML parts behind a quote in a comment or a processing instruction is 413 as well', async () => {
    const parts = '<a/>'.repeat(5000);
    for (const hide of ["<!-- ' -->", '<?note " ?>']) {
      const res = await fetch(`${server.origin}/personen`, {
        method: 'POST',
        headers: {
          'content-type': 'application/xml',
          accept: 'application/json',
          cookie: session.cookie,
          'x-csrf-token': session.token,
        },
        body: `<person>${hide}${parts}${hide}</person>`,
      });
      assert.deepEqual([res.status, (await readJson(res)).detail], [413, expected['application/xml'][1]], hide);
    }
  });

  test('nested more than 32 deep is 400, as JSON and as XML', async () => {
    for (const [type, body, detail] of [
      [
        'application/json',
        `${'['.repeat(40)}${']'.repeat(40)}`,
        'The JSON body nests values more than 32 deep; send a flatter document.',
      ],
      [
        'application/xml',
        `<person>${'<a>'.repeat(40)}${'</a>'.repeat(40)}</person>`,
        'The XML body nests elements more than 32 deep; send a flatter document.',
      ],
    ] as const) {
      const res = await fetch(`${server.origin}/personen`, {
        method: 'POST',
        headers: {
          'content-type': type,
          accept: 'application/json',
          cookie: session.cookie,
          'x-csrf-token': session.token,
        },
        body,
      });
      assert.deepEqual([res.status, (await readJson(res)).detail], [400, detail]);
    }
  });

  test('that is not UTF-8 is 400, as JSON, XML and a form', async () => {
    const latin1 = Buffer.from('{"vorname": "M\xfcller", "nachname": "X"}', 'latin1');
    const cases = [
      ['application/json', latin1, 'The body is not valid UTF-8; send it in UTF-8.'],
      [
        'application/xml',
        Buffer.from('<person><vorname>M\xfcller</vorname></person>', 'latin1'),
        'The body is not valid UTF-8; send it in UTF-8.',
      ],
      [
        'application/x-www-form-urlencoded',
        Buffer.from('vorname=M%FCller&nachname=X'),
        'The form has percent-encoded bytes that are not UTF-8: write each byte of UTF-8 as %XX.',
      ],
    ] as const;
    for (const [type, body, detail] of cases) {
      const res = await fetch(`${server.origin}/person/max-muster`, {
        method: 'PUT',
        headers: {
          'content-type': type,
          accept: 'application/json',
          cookie: session.cookie,
          'x-csrf-token': session.token,
        },
        body,
      });
      assert.deepEqual([res.status, (await readJson(res)).detail], [400, detail], type);
    }
  });
});

describe('a change sent from a page of another site', () => {
  test('is 403 when its Referer names the other site and no Origin comes, and goes through from this site', async () => {
    const put = (referer: string) =>
      fetch(`${server.origin}/person/max-muster.json`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json', cookie: session.cookie, 'x-csrf-token': session.token, referer },
        body: JSON.stringify({ vorname: 'Max', nachname: 'Muster', image: '/img/max-muster.svg', username: 'mmuster' }),
      });
    const foreign = await put('https://evil.example/page');
    assert.deepEqual(
      [foreign.status, (await readJson(foreign)).detail],
      [403, `A PUT from https://evil.example is not accepted here; send it from ${server.origin}.`],
    );
    const own = await put(`${server.origin}/person/max-muster/bearbeiten`);
    assert.equal(own.status, 200);
  });
});
