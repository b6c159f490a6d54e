// What a picture upload may cost (docs/robustness.md, Pictures): text chunks and colour profiles
// that unpack to hundreds of megabytes, and progressive JPEGs of thousands of scans, cost no more
// processor time than an ordinary picture; conversions run one at a time, the next ones wait in a
// short queue and the rest are 503 with Retry-After, while files and logins are answered as fast
// as without them. Times are compared with a control measured in the same test, never with a figure.
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import sharp from 'sharp';
import { readConfig } from '../lib/config.ts';
import { csrfTokenOf } from './change-helpers.ts';
import type { TestServer } from './helpers.ts';
import { readJson, startTestServer } from './helpers.ts';
import { brokenIccpChunk, iccpChunk, textChunk, withJpegScans, withPngChunks } from './hostile-pictures.ts';
import { logInAs } from './login-helpers.ts';

/** The value that the share q of the values are at most (0.5: the median). */
const quantile = (values: number[], q: number) =>
  [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(values.length * q))] as number;
const median = (values: number[]) => quantile(values, 0.5);

/** A person's picture sent through the form of a login session, as a browser sends it; the answer as JSON. */
async function upload(
  server: TestServer,
  session: { cookie: string; token: string },
  bytes: Buffer,
  type: string,
): Promise<Response> {
  const form = new FormData();
  form.append('csrf_token', session.token);
  form.append('bild', new Blob([bytes], { type }), 'bild');
  return fetch(`${server.origin}/person/max-muster/bild`, {
    method: 'POST',
    body: form,
    headers: { cookie: session.cookie, accept: 'application/json' },
  });
}

/** The processor time of the whole process (the server is in it, and sharp's threads) while fn runs, in ms. */
async function cpuOf<T>(fn: () => Promise<T>): Promise<{ result: T; ms: number }> {
  const start = process.cpuUsage();
  const result = await fn();
  const used = process.cpuUsage(start);
  return { result, ms: (used.user + used.system) / 1000 };
}

describe('what a picture upload costs', () => {
  let server: TestServer;
  let dir: string;
  let session: { cookie: string; token: string };
  let srgb: Buffer;
  /** A 600 × 400 PNG in #3366aa with the chunks given. */
  let pngWith: (chunks: Buffer[]) => Buffer;
  /** What the PNG with nothing but a title is stored as. */
  let plain: Buffer;
  /** A title of a length not used before: the picture it is put in has bytes of its own, so no upload finds its files made by an earlier one. */
  let titles = 0;
  const newTitle = () => textChunk('tEXt', 'Title', ++titles);

  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'portfolio-bilder-'));
    server = await startTestServer({ PICTURES_DIR: dir, PICTURE_MAX_BYTES: String(512 * 1024) });
    const cookie = await logInAs(server.origin, 'mmuster');
    session = { cookie, token: await csrfTokenOf(server.origin, cookie, '/person/max-muster/bild') };
    const png = await sharp({ create: { width: 600, height: 400, channels: 3, background: '#3366aa' } })
      .png()
      .toBuffer();
    pngWith = (chunks) => withPngChunks(png, chunks);
    srgb = (
      await sharp(
        await sharp({ create: { width: 8, height: 8, channels: 3, background: '#000' } })
          .withIccProfile('srgb')
          .png()
          .toBuffer(),
      ).metadata()
    ).icc as Buffer;
    // The first upload loads sharp: not a conversion's cost.
    const first = await upload(server, session, pngWith([newTitle()]), 'image/png');
    assert.equal(first.status, 200);
    plain = await stored(first);
  });
  after(async () => {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** The stored 480 pixel picture the answer names. */
  async function stored(res: Response): Promise<Buffer> {
    const person = await readJson(res);
    const picture = await fetch(person.image);
    assert.equal(picture.status, 200);
    return Buffer.from(await picture.arrayBuffer());
  }

  test('a PNG with small text chunks and an sRGB profile is stored, in its colours', async () => {
    const png = pngWith([
      textChunk('tEXt', 'Software', 40),
      textChunk('zTXt', 'Comment', 2000),
      textChunk('iTXt', 'Description', 2000),
      iccpChunk(srgb),
    ]);
    const res = await upload(server, session, png, 'image/png');
    assert.equal(res.status, 200);
    // The colours of the picture without them, within a step of WebP's rounding.
    const colours = async (webp: Buffer) => (await sharp(webp).stats()).channels.map((c) => Math.round(c.mean));
    const [got, plainColours] = [await colours(await stored(res)), await colours(plain)];
    assert.ok(
      got.every((c, i) => Math.abs(c - (plainColours[i] as number)) <= 1),
      `${got} against ${plainColours}`,
    );
  });

  /** The processor time of three uploads of the PNG with the chunks given and three without, taken in turns, as medians in ms. */
  async function costs(chunks: Buffer[], status: number) {
    const times = { ordinary: [] as number[], hostile: [] as number[] };
    const answers: Response[] = [];
    for (let round = 0; round < 3; round++) {
      const ordinary = await cpuOf(() => upload(server, session, pngWith([newTitle()]), 'image/png'));
      assert.equal(ordinary.result.status, 200);
      times.ordinary.push(ordinary.ms);
      const hostile = await cpuOf(() => upload(server, session, pngWith([...chunks, newTitle()]), 'image/png'));
      assert.equal(hostile.result.status, status);
      times.hostile.push(hostile.ms);
      answers.push(hostile.result);
    }
    return { ordinary: median(times.ordinary), hostile: median(times.hostile), answers };
  }

  test('text chunks that unpack to 240 MiB cost no more than an ordinary picture: they are dropped unread', async (t) => {
    const chunks = [0, 1, 2, 3, 4].map((i) => textChunk(i % 2 ? 'iTXt' : 'zTXt', `Comment${i}`, 48 * 1024 * 1024));
    assert.ok(pngWith(chunks).length < 512 * 1024, `${pngWith(chunks).length} bytes`);
    const cost = await costs(chunks, 200);
    t.diagnostic(
      `processor time: ordinary ${cost.ordinary.toFixed(0)} ms, 240 MiB of text ${cost.hostile.toFixed(0)} ms`,
    );
    assert.ok(cost.hostile < 2 * cost.ordinary, `${cost.hostile.toFixed(0)} ms against ${cost.ordinary.toFixed(0)} ms`);
    // Stored as the picture without them: the WebP keeps no text.
    const webp = await stored(cost.answers[0] as Response);
    assert.deepEqual(await sharp(webp).raw().toBuffer(), await sharp(plain).raw().toBuffer());
  });

  test('a colour profile that unpacks to more than 1 MiB: 422 before it is read, at the cost of an ordinary picture', async (t) => {
    const cost = await costs([iccpChunk(srgb, 48 * 1024 * 1024)], 422);
    t.diagnostic(
      `processor time: ordinary ${cost.ordinary.toFixed(0)} ms, a profile of 48 MiB ${cost.hostile.toFixed(0)} ms`,
    );
    assert.equal(
      (await readJson(cost.answers[0] as Response)).detail,
      "The picture's colour profile (iCCP) unpacks to more than 1 MiB; save the picture with a smaller one, such as sRGB, or none.",
    );
    assert.ok(cost.hostile < 2 * cost.ordinary, `${cost.hostile.toFixed(0)} ms against ${cost.ordinary.toFixed(0)} ms`);
    // Just under the limit is a profile like any other.
    assert.equal((await upload(server, session, pngWith([iccpChunk(srgb, 1024 * 1024)]), 'image/png')).status, 200);
  });

  test('hundreds of colour profiles that break off after nearly 1 MiB: the first is looked at, the rest dropped unread', async (t) => {
    const chunks = Array.from({ length: 300 }, () => brokenIccpChunk(srgb, 1024 * 1024 - 4096));
    assert.ok(pngWith(chunks).length < 512 * 1024, `${pngWith(chunks).length} bytes`);
    const cost = await costs(chunks, 200);
    t.diagnostic(
      `processor time: ordinary ${cost.ordinary.toFixed(0)} ms, 300 broken profiles ${cost.hostile.toFixed(0)} ms`,
    );
    assert.ok(cost.hostile < 2 * cost.ordinary, `${cost.hostile.toFixed(0)} ms against ${cost.ordinary.toFixed(0)} ms`);
  });

  test('a progressive JPEG of 10,000 scans: 422 before it is decoded; one of ordinary scans is stored', async (t) => {
    const side = 2000;
    const jpeg = await sharp({ create: { width: side, height: side, channels: 3, background: '#808080' } })
      .jpeg({ progressive: true })
      .toBuffer();
    const control = await cpuOf(() => upload(server, session, jpeg, 'image/jpeg'));
    assert.equal(control.result.status, 200);
    const bomb = withJpegScans(jpeg, 10_000, (side / 8) ** 2);
    assert.ok(bomb.length < 512 * 1024, `${bomb.length} bytes`);
    const hostile = await cpuOf(() => upload(server, session, bomb, 'image/jpeg'));
    t.diagnostic(`processor time: ordinary ${control.ms.toFixed(0)} ms, 10,000 scans ${hostile.ms.toFixed(0)} ms`);
    assert.equal(hostile.result.status, 422);
    assert.equal(
      (await readJson(hostile.result)).detail,
      'The JPEG has more than 100 scans; save it again as an ordinary (baseline or progressive) JPEG.',
    );
    assert.ok(hostile.ms < 2 * control.ms, `${hostile.ms.toFixed(0)} ms against ${control.ms.toFixed(0)} ms`);
    // 100 scans are accepted (the picture has 10 of its own), 101 are not.
    assert.equal((await upload(server, session, withJpegScans(jpeg, 90, (side / 8) ** 2), 'image/jpeg')).status, 200);
    assert.equal((await upload(server, session, withJpegScans(jpeg, 91, (side / 8) ** 2), 'image/jpeg')).status, 422);
  });

  test('a PNG keeps its orientation (eXIf): one taken sideways is stored upright', async () => {
    // Red on the left, blue on the right, to be turned a quarter clockwise: red on top.
    const red = await sharp({ create: { width: 300, height: 400, channels: 3, background: '#ff0000' } })
      .png()
      .toBuffer();
    const sideways = await sharp({ create: { width: 600, height: 400, channels: 3, background: '#0000ff' } })
      .composite([{ input: red, left: 0, top: 0 }])
      .withMetadata({ orientation: 6 })
      .png()
      .toBuffer();
    const res = await upload(server, session, sideways, 'image/png');
    assert.equal(res.status, 200);
    const { data, info } = await sharp(await stored(res))
      .raw()
      .toBuffer({ resolveWithObject: true });
    const colourAt = (x: number, y: number) =>
      [...data.subarray((y * info.width + x) * info.channels, (y * info.width + x) * info.channels + 3)].map((c) =>
        c > 127 ? 1 : 0,
      );
    assert.deepEqual(
      [colourAt(479, 0), colourAt(0, 479)],
      [
        [1, 0, 0],
        [0, 0, 1],
      ],
    );
  });

  test("scans are counted in a JPEG's coded data only: a SOS marker inside an APP segment is none", async () => {
    const jpeg = await sharp({ create: { width: 300, height: 300, channels: 3, background: '#808080' } })
      .jpeg({ progressive: true })
      .toBuffer();
    const markers = Buffer.concat(new Array<Buffer>(150).fill(Buffer.from([0xff, 0xda, 0, 8, 1, 1, 0, 1, 63, 0])));
    const segment = Buffer.concat([
      Buffer.from([0xff, 0xe9]),
      Buffer.from([(markers.length + 2) >> 8, (markers.length + 2) & 0xff]),
      markers,
    ]);
    const res = await upload(
      server,
      session,
      Buffer.concat([jpeg.subarray(0, 2), segment, jpeg.subarray(2)]),
      'image/jpeg',
    );
    assert.equal(res.status, 200);
  });

  test('leaves no temporary file behind', () => {
    assert.deepEqual(
      readdirSync(dir).filter((f) => f.startsWith('.')),
      [],
    );
  });
});

describe('conversions in turn', () => {
  test("PICTURE_CONCURRENCY is 1 and PICTURE_QUEUE 4 by default; set, the first must leave a thread of libuv's pool to files", () => {
    assert.deepEqual([readConfig({}).pictureConcurrency, readConfig({}).pictureQueue], [1, 4]);
    assert.equal(readConfig({ PICTURE_CONCURRENCY: '2', UV_THREADPOOL_SIZE: '5' }).pictureConcurrency, 2);
    assert.throws(() => readConfig({ PICTURE_CONCURRENCY: '2' }), {
      message:
        "PICTURE_CONCURRENCY=2 leaves no thread of libuv's pool (UV_THREADPOOL_SIZE=4) for files: each conversion holds one, and two password checks two more. Raise UV_THREADPOOL_SIZE to 5 or more, or lower PICTURE_CONCURRENCY.",
    });
  });

  let server: TestServer;
  let dir: string;

  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'portfolio-bilder-'));
    server = await startTestServer({ PICTURES_DIR: dir, PICTURE_CONCURRENCY: '1', PICTURE_QUEUE: '2' });
  });
  after(async () => {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('beside twenty uploads of 49 million pixels, one converts at a time, two wait, seventeen are 503, and a file and a login take as long as alone', async (t) => {
    const cookie = await logInAs(server.origin, 'mmuster');
    const session = { cookie, token: await csrfTokenOf(server.origin, cookie, '/person/max-muster/bild') };
    // Progressive, so each conversion decodes every coefficient: about 1.6 s of processor time.
    // Each upload its own bytes (a comment after SOI), so none finds its files made by another.
    const large = await sharp({ create: { width: 7000, height: 7000, channels: 3, background: '#3366aa' } })
      .jpeg({ progressive: true })
      .toBuffer();
    const numbered = (i: number) =>
      Buffer.concat([large.subarray(0, 2), Buffer.from([0xff, 0xfe, 0, 3, i]), large.subarray(2)]);
    const pictures = Array.from({ length: 20 }, (_, i) => numbered(i + 1));
    const file = async () => {
      const started = performance.now();
      const res = await fetch(`${server.origin}/css/site.css`);
      assert.equal(res.status, 200);
      await res.arrayBuffer();
      return performance.now() - started;
    };
    const login = async () => {
      const started = performance.now();
      await logInAs(server.origin, 'jmueller');
      return performance.now() - started;
    };
    // sharp is loaded by a first upload.
    assert.equal((await upload(server, session, numbered(0), 'image/jpeg')).status, 200);
    // The file asked for every 25 ms, whether or not the one before has come (so a stall shows in
    // every request that meets it), and one login after another, both while `more` says so.
    const measure = async (into: { file: number[]; login: number[] }, more: () => boolean) => {
      const files: Promise<void>[] = [];
      const sample = async () => {
        for (let i = 0; i < 1000 && more(); i++) {
          files.push(file().then((ms) => void into.file.push(ms)));
          await sleep(25);
        }
      };
      const logins = async () => {
        for (let i = 0; i < 100 && more(); i++) into.login.push(await login());
      };
      await Promise.all([sample(), logins()]);
      await Promise.all(files);
    };
    // Alone: before the uploads and after them, so that a change in what else the machine does falls on both sides.
    const alone = { file: [] as number[], login: [] as number[] };
    await measure(alone, () => alone.login.length < 3);
    let pending = pictures.length;
    const uploads = pictures.map((bytes) => upload(server, session, bytes, 'image/jpeg').finally(() => pending--));
    // Measured once the refusals are out: the arrival of twenty bodies at once is the body reader's
    // cost (test/bodies.test.ts); this is what three conversions in turn cost everyone else.
    for (let i = 0; i < 3000 && pending > 3; i++) await sleep(10);
    assert.equal(pending, 3, 'seventeen uploads answered before the conversions are done');
    const beside = { file: [] as number[], login: [] as number[] };
    await measure(beside, () => pending > 0);
    const answers = await Promise.all(uploads);
    await measure(alone, () => alone.login.length < 6);
    const ratios = {
      file: quantile(beside.file, 0.9) / quantile(alone.file, 0.9),
      login: median(beside.login) / median(alone.login),
    };
    t.diagnostic(
      `the file's 90th percentile ${quantile(alone.file, 0.9).toFixed(1)} ms alone, ${quantile(beside.file, 0.9).toFixed(1)} ms beside the uploads (${ratios.file.toFixed(2)}x); ` +
        `the login's median ${median(alone.login).toFixed(0)} ms alone, ${median(beside.login).toFixed(0)} ms beside them (${ratios.login.toFixed(2)}x); ` +
        `${beside.file.length} files and ${beside.login.length} logins beside them`,
    );

    assert.deepEqual(answers.map((res) => res.status).sort(), [
      ...new Array<number>(3).fill(200),
      ...new Array<number>(17).fill(503),
    ]);
    for (const res of answers.filter((r) => r.status === 503)) {
      assert.equal(res.headers.get('retry-after'), '5');
      assert.equal(
        (await readJson(res)).detail,
        'Too many pictures are being converted at the moment; send yours again in a few seconds.',
      );
    }
    assert.ok(
      beside.login.length >= 2 && beside.file.length >= 20,
      `${beside.file.length} files and ${beside.login.length} logins measured beside the uploads`,
    );
    assert.ok(ratios.file < 10, `the file's 90th percentile ${ratios.file.toFixed(2)}x`);
    assert.ok(ratios.login < 3, `the login's median ${ratios.login.toFixed(2)}x`);
  });
});
