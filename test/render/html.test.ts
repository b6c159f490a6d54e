// Every HTML page is valid HTML5 (html-validate's recommended and document rules),
// has pictures with alt text and needs no JavaScript: besides schema.org data (application/ld+json),
// which no browser runs, the one script is js/site.js, which only fills in who is looking.
import assert from 'node:assert/strict';
import { HtmlValidate } from 'html-validate';
import { after, before, test } from 'node:test';
import type { TestServer } from '../helpers.ts';
import { startTestServer } from '../helpers.ts';

let server: TestServer;
const validator = new HtmlValidate({
  extends: ['html-validate:recommended', 'html-validate:document'],
  rules: {
    // The German typographic quotes in titles and the arrows in the pager are wanted.
    'unrecognized-char-ref': 'error',
    'no-trailing-whitespace': 'off',
    // Subresource integrity guards files from other origins; the stylesheet is our own.
    'require-sri': ['error', { target: 'crossorigin' }],
  },
});

before(async () => {
  server = await startTestServer();
});
after(() => server.close());

const pages = [
  '/',
  '/personen',
  '/person/max-muster',
  '/person.php?pid=1',
  '/werk/1',
  '/search',
  '/search?query=any,contains,e',
  '/search?query=any,contains,e&offset=10&vid=druck',
  '/nothing-here',
  '/person.php?pid=abc',
];

for (const page of pages) {
  test(`${page} is valid HTML5 with no script but js/site.js`, async () => {
    const res = await fetch(server.origin + page, { headers: { accept: 'text/html' } });
    const html = await res.text();
    const report = await validator.validateString(html);
    const messages = report.results.flatMap((r) =>
      r.messages.map((m) => `${m.line}:${m.column} ${m.ruleId}: ${m.message}`),
    );
    assert.deepEqual(messages, [], html);
    const scripts = html.replace(/<script type="application\/ld\+json">[^<]*<\/script>/g, '').match(/<script[^>]*>/g);
    assert.deepEqual(scripts, ['<script src="js/site.js" defer>']);
    for (const img of html.match(/<img [^>]*>/g) ?? []) assert.match(img, / alt="/);
  });
}
