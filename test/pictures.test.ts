// Person pictures: the person themself and librarians upload a JPEG, PNG or WebP (a form with the
// CSRF token, or the picture's bytes with Basic credentials); it is stored in the database under a
// content-hash name in 160 and 480 pixels, served immutable (the folder keeping a copy of each
// served), and all three representations point at it. Bad input is a 4xx problem with nothing
// stored, and an upload cut off leaves no file behind.
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import sharp from 'sharp';
import { csrfTokenOf, personRow } from './change-helpers.ts';
import type { TestServer } from './helpers.ts';
import { readJson, startTestServer, waitFor } from './helpers.ts';
import { basic, demo, logInAs } from './login-helpers.ts';

describe('person pictures', () => {
  let server: TestServer;
  let dir: string;
  let png: Buffer;
  let jpeg: Buffer;
  const files = () => readdirSync(dir).sort();
  /** The names of the pictures in the database. */
  const pictures = async () =>
    (await server.db.query<{ name: string }>('SELECT name FROM picture ORDER BY name')).map((r) => r.name);

  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'portfolio-bilder-'));
    server = await startTestServer({
      PICTURES_DIR: dir,
      PICTURE_MAX_BYTES: String(256 * 1024),
      PICTURE_MAX_PIXELS: '1000000',
    });
    png = await sharp({ create: { width: 600, height: 400, channels: 3, background: '#3366aa' } })
      .png()
      .toBuffer();
    jpeg = await sharp({ create: { width: 300, height: 500, channels: 3, background: '#aa6633' } })
      .jpeg()
      .toBuffer();
  });
  after(async () => {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** The upload form of a person, sent as a browser sends it. */
  async function sendForm(
    slug: string,
    file: { bytes: Buffer; type: string; name: string } | null,
    options: { cookie: string; token?: string | null; accept?: string },
  ): Promise<Response> {
    const form = new FormData();
    const token =
      options.token === undefined
        ? await csrfTokenOf(server.origin, options.cookie, `/person/${slug}/bild`)
        : options.token;
    if (token !== null) form.append('csrf_token', token);
    if (file) form.append('bild', new Blob([file.bytes], { type: file.type }), file.name);
    return fetch(`${server.origin}/person/${slug}/bild`, {
      method: 'POST',
      redirect: 'manual',
      body: form,
      headers: { cookie: options.cookie, accept: options.accept ?? 'text/html' },
    });
  }

  test('the person uploads a PNG through the form: stored in both sizes, and every representation points at it', async () => {
    const cookie = await logInAs(server.origin, 'mmuster');
    const page = await (await fetch(`${server.origin}/person/max-muster/bild`, { headers: { cookie } })).text();
    assert.match(page, /enctype="multipart\/form-data"/);
    assert.match(page, /type="file"/);
    const res = await sendForm('max-muster', { bytes: png, type: 'image/png', name: 'ich.png' }, { cookie });
    assert.equal(res.status, 303, await res.clone().text());
    assert.equal(res.headers.get('location'), `${server.origin}/person/max-muster`);
    const names = await pictures();
    assert.equal(names.length, 2, names.join(' '));
    assert.deepEqual(files(), [], 'the folder holds only copies of pictures served');
    assert.match(names[0] as string, /^[0-9a-f]{32}-160\.webp$/);
    const hash = (names[0] as string).slice(0, 32);
    assert.deepEqual(names, [`${hash}-160.webp`, `${hash}-480.webp`]);

    const json = await readJson(await fetch(`${server.origin}/person/max-muster.json`));
    assert.equal(json.image, `${server.origin}/bilder/${hash}-480.webp`);
    const xml = await (await fetch(`${server.origin}/person/max-muster.xml`)).text();
    assert.match(xml, new RegExp(`<image ref="${server.origin}/bilder/${hash}-480\\.webp"/>`));
    const html = await (await fetch(`${server.origin}/person/max-muster`)).text();
    assert.match(html, new RegExp(`<img class="portrait" src="/bilder/${hash}-480\\.webp"`));
    // The person list shows the small one; a picture given as an address stays as it is.
    const list = await (await fetch(`${server.origin}/personen`)).text();
    assert.match(list, new RegExp(`<img src="/bilder/${hash}-160\\.webp" alt="" width="64" height="64">`));
    assert.doesNotMatch(list, /-480\.webp/);

    for (const width of [160, 480]) {
      const picture = await fetch(`${server.origin}/bilder/${hash}-${width}.webp`);
      assert.equal(picture.status, 200);
      assert.equal(picture.headers.get('content-type'), 'image/webp');
      assert.equal(picture.headers.get('cache-control'), 'public, max-age=31536000, immutable');
      const meta = await sharp(Buffer.from(await picture.arrayBuffer())).metadata();
      assert.deepEqual([meta.format, meta.width, meta.height], ['webp', width, width]);
    }
    assert.deepEqual(files(), names, 'a copy of each picture served');
    // A copy that is gone (another machine, a cleared folder) comes from the database again, the same.
    rmSync(path.join(dir, names[1] as string));
    const again = await fetch(`${server.origin}/bilder/${names[1]}`);
    assert.equal(again.status, 200);
    assert.deepEqual(files(), names);
  });

  test('a picture address that names no picture is 404, kept by no cache', async () => {
    for (const name of ['0123456789abcdef0123456789abcdef-480.webp', 'nichts.webp', '..%2Fsecret.webp', 'a/b.webp']) {
      const res = await fetch(`${server.origin}/bilder/${name}`);
      await res.arrayBuffer();
      assert.equal(res.status, 404, name);
      assert.equal(res.headers.get('cache-control'), 'no-store', name);
    }
  });

  test('a librarian sends a JPEG as the body with Basic credentials and gets the person', async () => {
    const res = await fetch(`${server.origin}/person/juergen-mueller/bild`, {
      method: 'POST',
      body: jpeg,
      headers: {
        authorization: basic('bibliothek', demo.bibliothek.password),
        'content-type': 'image/jpeg',
        accept: 'application/json',
      },
    });
    assert.equal(res.status, 200);
    const person = await readJson(res);
    assert.match(person.image, new RegExp(`^${server.origin}/bilder/[0-9a-f]{32}-480\\.webp$`));
    assert.equal(person.nachname, 'Müller');
    assert.equal((await fetch(person.image)).status, 200);
    assert.ok(!files().some((f) => f.startsWith('.')), files().join(' '));
  });

  describe('refused, with nothing stored and the person unchanged', () => {
    let cookie: string;
    let stored: string[];
    let row: Record<string, unknown> | null;
    before(async () => {
      cookie = await logInAs(server.origin, 'mmuster');
      stored = [...(await pictures()), ...files()];
      row = await personRow(server.db, 1);
    });
    const unchanged = async () => {
      assert.deepEqual([...(await pictures()), ...files()], stored);
      assert.deepEqual(await personRow(server.db, 1), row);
    };
    const problem = async (res: Response, status: number, message: RegExp) => {
      assert.equal(res.status, status);
      assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/);
      const body = await readJson(res);
      assert.equal(body.status, status);
      assert.match(body.detail, message);
      await unchanged();
    };

    test('a file that is not a picture, whatever its Content-Type says: 415', async () => {
      const res = await sendForm(
        'max-muster',
        { bytes: Buffer.from('<?php echo "hello"; ?>\n'.repeat(50)), type: 'image/png', name: 'x.png' },
        { cookie, accept: 'application/json' },
      );
      await problem(res, 415, /not a JPEG, PNG or WebP/);
    });

    test('a PNG that is cut off after its header: 4xx', async () => {
      const res = await sendForm(
        'max-muster',
        { bytes: png.subarray(0, 60), type: 'image/png', name: 'cut.png' },
        { cookie, accept: 'application/json' },
      );
      assert.ok([415, 422].includes(res.status), String(res.status));
      await problem(res, res.status, /cannot be (read|decoded)/);
    });

    test('a file over the size limit: 413', async () => {
      const noise = await sharp(Buffer.from(Array.from({ length: 300 * 300 * 3 }, (_, i) => (i * 2654435761) % 251)), {
        raw: { width: 300, height: 300, channels: 3 },
      })
        .png({ compressionLevel: 0 })
        .toBuffer();
      assert.ok(noise.length > 256 * 1024 && noise.length < 300 * 1024, `${noise.length} bytes`);
      await problem(
        await sendForm(
          'max-muster',
          { bytes: noise, type: 'image/png', name: 'big.png' },
          { cookie, accept: 'application/json' },
        ),
        413,
        /larger than/,
      );
      const huge = Buffer.alloc(2 * 1024 * 1024);
      await problem(
        await sendForm(
          'max-muster',
          { bytes: huge, type: 'image/png', name: 'huge.png' },
          { cookie, accept: 'application/json' },
        ),
        413,
        /larger than/,
      );
    });

    test('a decompression bomb (more pixels than the limit, small file): 422 before it is decoded', async () => {
      const bomb = await sharp({ create: { width: 2000, height: 2000, channels: 3, background: '#ffffff' } })
        .png({ compressionLevel: 9 })
        .toBuffer();
      assert.ok(bomb.length < 64 * 1024, `${bomb.length} bytes`);
      await problem(
        await sendForm(
          'max-muster',
          { bytes: bomb, type: 'image/png', name: 'bomb.png' },
          { cookie, accept: 'application/json' },
        ),
        422,
        /2000 × 2000 pixels/,
      );
    });

    test('a form without a file: 422', async () => {
      await problem(await sendForm('max-muster', null, { cookie, accept: 'application/json' }), 422, /No picture/);
    });

    test('without the CSRF token: 403', async () => {
      await problem(
        await sendForm(
          'max-muster',
          { bytes: png, type: 'image/png', name: 'ich.png' },
          { cookie, token: null, accept: 'application/json' },
        ),
        403,
        /CSRF token/,
      );
      await problem(
        await sendForm(
          'max-muster',
          { bytes: png, type: 'image/png', name: 'ich.png' },
          { cookie, token: 'wrong', accept: 'application/json' },
        ),
        403,
        /CSRF token/,
      );
    });

    test('anonymous, someone else, or a form with Basic credentials: 403, 403 and 415', async () => {
      const form = new FormData();
      form.append('bild', new Blob([png], { type: 'image/png' }), 'ich.png');
      const anonymous = await fetch(`${server.origin}/person/max-muster/bild`, {
        method: 'POST',
        body: form,
        headers: { accept: 'application/json' },
      });
      await problem(anonymous, 403, /Log in/);
      const other = await logInAs(server.origin, 'jmueller');
      const token = await csrfTokenOf(server.origin, other, '/person/juergen-mueller/bild');
      await problem(
        await sendForm(
          'max-muster',
          { bytes: png, type: 'image/png', name: 'ich.png' },
          { cookie: other, token, accept: 'application/json' },
        ),
        403,
        /only your own person/,
      );
      const withBasic = await fetch(`${server.origin}/person/max-muster/bild`, {
        method: 'POST',
        body: form,
        headers: { accept: 'application/json', authorization: basic('mmuster', demo.mmuster.password) },
      });
      await problem(withBasic, 415, /Basic credentials/);
      const page = await fetch(`${server.origin}/person/max-muster/bild`, { headers: { cookie: other } });
      assert.equal(page.status, 403);
    });

    test('another type of body: 415', async () => {
      const res = await fetch(`${server.origin}/person/max-muster/bild`, {
        method: 'POST',
        body: '{}',
        headers: { cookie, 'content-type': 'application/json', 'x-csrf-token': 'x', accept: 'application/json' },
      });
      await problem(res, 415, /multipart\/form-data/);
      const librarian = { authorization: basic('bibliothek', demo.bibliothek.password), accept: 'application/json' };
      for (const [type, body] of [
        ['multipart/form-data', 'xx'],
        ['multipart/form-data; boundary=abc', '--abc\r\nbroken'],
      ]) {
        await problem(
          await fetch(`${server.origin}/person/max-muster/bild`, {
            method: 'POST',
            body,
            headers: { ...librarian, 'content-type': type as string },
          }),
          400,
          /form is malformed/,
        );
      }
    });
  });

  test('an upload cut off half-way leaves no file behind, and the server goes on', async () => {
    const stored = files();
    const cookie = await logInAs(server.origin, 'mmuster');
    const token = await csrfTokenOf(server.origin, cookie, '/person/max-muster/bild');
    const boundary = 'portfolio-test-boundary';
    const head =
      `--${boundary}\r\nContent-Disposition: form-data; name="csrf_token"\r\n\r\n${token}\r\n` +
      `--${boundary}\r\nContent-Disposition: form-data; name="bild"; filename="ich.png"\r\nContent-Type: image/png\r\n\r\n`;
    const declared = head.length + 200 * 1024;
    const socket = net.connect(Number(new URL(server.origin).port), '127.0.0.1');
    socket.on('error', () => {});
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    socket.write(
      `POST /person/max-muster/bild HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: ${cookie}\r\nContent-Type: multipart/form-data; boundary=${boundary}\r\nContent-Length: ${declared}\r\n\r\n`,
    );
    socket.write(head);
    socket.write(png.subarray(0, Math.min(png.length, 1000)));
    socket.write(Buffer.alloc(50 * 1024, 7));
    // The upload is being written to its temporary file …
    await waitFor(files, (names) => names.some((n) => n.startsWith('.upload-')), 5000);
    // … when the client goes away.
    socket.destroy();
    await waitFor(files, (names) => names.length === stored.length, 5000);
    assert.deepEqual(files(), stored);
    assert.equal((await fetch(`${server.origin}/person/max-muster.json`)).status, 200);
  });
});
