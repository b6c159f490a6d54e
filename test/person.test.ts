// The person document exactly as docs/interface.md shows it, from every URL form, in HTML, XML and JSON.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import type { TestServer } from './helpers.ts';
import { readJson, startTestServer } from './helpers.ts';

let server: TestServer;
let werke: { id: number; titel: string }[];

before(async () => {
  server = await startTestServer();
  werke = await server.db.query<{ id: number; titel: string }>(
    `SELECT w.id, w.titel FROM werk w JOIN person p ON p.id = w.person_id WHERE p.slug = 'max-muster' ORDER BY w.titel, w.id`,
  );
});
after(() => server.close());

const get = (path: string, headers: Record<string, string> = {}) => fetch(server.origin + path, { headers });

describe('the person max-muster', () => {
  test('has works in the demo data', () => {
    assert.ok(werke.length >= 3);
  });

  test('answers the same JSON at /person/<slug>, /person/<id>, person.php?slug= and person.php?pid=', async () => {
    const bodies = [];
    for (const path of [
      '/person/max-muster.json',
      '/person/1.json',
      '/person.php?slug=max-muster',
      '/person.php?pid=1',
    ]) {
      const res = await get(path, { accept: 'application/json' });
      assert.equal(res.status, 200, path);
      bodies.push(await res.text());
    }
    assert.equal(new Set(bodies).size, 1);
  });

  test('JSON has exactly image, vorname, nachname and werk with titel and absolute url', async () => {
    const res = await get('/person/max-muster.json');
    assert.equal(res.headers.get('content-type'), 'application/json; charset=utf-8');
    const person = await readJson(res);
    assert.deepEqual(person, {
      image: `${server.origin}/img/max-muster.svg`,
      vorname: 'Max',
      nachname: 'Muster',
      werk: werke.map((w) => ({ titel: w.titel, url: `${server.origin}/werk/${w.id}` })),
    });
  });

  test('XML has root person with image ref, vorname, nachname, username and werke/werk', async () => {
    const res = await get('/person/max-muster.xml');
    assert.equal(res.headers.get('content-type'), 'application/xml; charset=utf-8');
    const escape = (s: string) =>
      s
        .replace(/&/g, '&amp;')
        .replace(/</g, '&lt;')
        .replace(/>/g, '&gt;')
        .replace(/"/g, '&quot;')
        .replace(/'/g, '&apos;');
    const expected = [
      '<?xml version="1.0" encoding="UTF-8"?>',
      '<person>',
      `  <image ref="${server.origin}/img/max-muster.svg"/>`,
      '  <vorname>Max</vorname>',
      '  <nachname>Muster</nachname>',
      '  <username>mmuster</username>',
      '  <werke>',
      ...werke.map((w) => `    <werk ref="${server.origin}/werk/${w.id}">${escape(w.titel)}</werk>`),
      '  </werke>',
      '</person>',
      '',
    ].join('\n');
    assert.equal(await res.text(), expected);
  });

  test('XML is well-formed for xmllint', async (t) => {
    const xml = await (await get('/person/max-muster.xml')).text();
    try {
      execFileSync('xmllint', ['--noout', '-'], { input: xml, stdio: ['pipe', 'pipe', 'pipe'] });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT' && !process.env.CI)
        return t.skip('xmllint is not installed');
      throw err;
    }
  });

  test('HTML has the heading, the picture, the paragraph and relative werk/<id> links', async () => {
    const res = await get('/person/max-muster.html');
    assert.equal(res.headers.get('content-type'), 'text/html; charset=utf-8');
    const html = await res.text();
    assert.match(html, /<h1>details of a person<\/h1>/);
    assert.match(html, /<img class="portrait" src="\/img\/max-muster\.svg" alt="Picture of Max Muster"/);
    assert.match(html, new RegExp(`<p>Max Muster has ${werke.length} works in the database; user name mmuster\\.</p>`));
    const links = [...html.matchAll(/<li><a href="(werk\/\d+)">([^<]*)<\/a><\/li>/g)].map((m) => m[1]);
    assert.deepEqual(
      links,
      werke.map((w) => `werk/${w.id}`),
    );
  });

  test('the relative werk links lead to the work from every person URL form', async () => {
    for (const path of [
      '/person/max-muster',
      '/person/max-muster.html',
      '/person/1',
      '/person.php?pid=1',
      '/person.php?slug=max-muster',
    ]) {
      const html = await (await get(path)).text();
      const base = /<base href="([^"]+)">/.exec(html)?.[1];
      assert.equal(base, '/', path);
      const href = /<a href="(werk\/\d+)">/.exec(html)?.[1] as string;
      const target = new URL(href, new URL(base as string, server.origin + path));
      assert.equal(target.pathname, `/werk/${werke[0]?.id}`, path);
      const work = await fetch(target, { headers: { accept: 'application/json' } });
      assert.equal(work.status, 200);
      assert.equal((await readJson(work)).titel, werke[0]?.titel);
    }
  });

  test('a script-style URL links its canonical rewritten twin and its alternates', async () => {
    const res = await get('/person.php?pid=1');
    assert.equal(
      res.headers.get('link'),
      [
        `<${server.origin}/person/max-muster>; rel="canonical"`,
        `<${server.origin}/person/max-muster.html>; rel="alternate"; type="text/html"`,
        `<${server.origin}/person/max-muster.xml>; rel="alternate"; type="application/xml"`,
        `<${server.origin}/person/max-muster.json>; rel="alternate"; type="application/json"`,
      ].join(', '),
    );
  });
});

describe('person lookups that find nothing', () => {
  test('an unknown slug is 404', async () => {
    assert.equal((await get('/person/niemand-hier')).status, 404);
  });

  test('an unknown id is 404', async () => {
    assert.equal((await get('/person/99999')).status, 404);
  });

  test('person.php without slug or pid is 400 naming both parameters', async () => {
    const res = await get('/person.php', { accept: 'application/json' });
    assert.equal(res.status, 400);
    assert.match((await readJson(res)).detail, /slug.*pid/);
  });

  test('a pid that is not a number is 400 naming pid', async () => {
    const res = await get('/person.php?pid=abc', { accept: 'application/json' });
    assert.equal(res.status, 400);
    assert.equal(res.headers.get('content-type'), 'application/problem+json; charset=utf-8');
    const problem = await readJson(res);
    assert.equal(problem.status, 400);
    assert.equal(problem.title, 'Bad Request');
    assert.match(problem.detail, /pid/);
  });

  test('a slug with an unknown suffix is 404', async () => {
    assert.equal((await get('/person/max-muster.pdf')).status, 404);
  });
});
