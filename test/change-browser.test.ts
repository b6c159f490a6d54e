// A real browser (Debian's Chromium through playwright-core) changes data through the forms:
// a user logs in, edits their name, adds a work, sees it on their page, sends an invalid form
// and finds the input still there; a librarian lends a work and the user's loan list shows it.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import type { TestServer } from './helpers.ts';
import { launchChromium, missingTool, startTestServer } from './helpers.ts';
import { demo } from './login-helpers.ts';
import type { DemoUser } from './login-helpers.ts';

const skip = missingTool('/usr/bin/chromium', 'chromium');

let server: TestServer;
let browser: Browser;

before(async () => {
  if (skip) return;
  server = await startTestServer();
  browser = await launchChromium();
});
after(async () => {
  await browser?.close();
  await server?.close();
});

/** Logs in through the login form, coming from `from`, and waits until the browser is back there. */
async function logIn(page: Page, user: DemoUser, from: string): Promise<void> {
  await page.goto(`${server.origin}/login?back=${from}`);
  await page.fill('#username', user);
  await page.fill('#password', demo[user].password);
  await Promise.all([page.waitForURL(server.origin + from), page.click('form.login button[type=submit]')]);
}

test('a user edits their name, adds a work, sees it on their page, and keeps the input of an invalid form', {
  skip,
  timeout: 120_000,
}, async () => {
  const context = await browser.newContext();
  const page = await context.newPage();

  // The edit form: 403 with a login link until logged in; then the public page shows the link.
  await page.goto(`${server.origin}/person/juergen-mueller/bearbeiten`);
  assert.equal(await page.textContent('h1'), '403 Forbidden');
  await logIn(page, 'jmueller', '/person/juergen-mueller');
  await page.click('p.edit a:text("Edit")');
  await page.waitForURL(`${server.origin}/person/juergen-mueller/bearbeiten`);
  assert.equal(await page.textContent('h1'), 'Edit Jürgen Müller');

  // Edit the name: 303 to the person's new address; the old one leads there.
  await page.fill('#feld-vorname', 'Jürgen Friedrich');
  await Promise.all([
    page.waitForURL(`${server.origin}/person/juergen-friedrich-mueller`),
    page.click('form.change button[type=submit]'),
  ]);
  assert.equal(
    await page.textContent('article.person > p:first-of-type'),
    'Jürgen Friedrich Müller has 6 works in the database; user name jmueller.',
  );
  await page.goto(`${server.origin}/person/juergen-mueller`);
  assert.equal(page.url(), `${server.origin}/person/juergen-friedrich-mueller`);

  // Add a work from the person's page; it is then on that page.
  await page.click('p.edit a:text("Add a work")');
  await page.waitForURL(`${server.origin}/person/juergen-friedrich-mueller/werke/neu`);
  await page.fill('#feld-titel', 'Hafenlichter & "Nachtbilder"');
  await page.fill('#feld-jahr', '2024');
  await page.fill('#feld-beschreibung', 'Neue Serie.\nZweite Zeile.');
  await Promise.all([page.waitForURL(/\/werk\/[0-9]+$/), page.click('form.change button[type=submit]')]);
  assert.equal(await page.textContent('h1'), 'Hafenlichter & "Nachtbilder"');
  const werkPath = new URL(page.url()).pathname;
  await page.click('p.by a');
  await page.waitForURL(`${server.origin}/person/juergen-friedrich-mueller`);
  const listed = await page.$$eval('ul.werke a', (links) =>
    links.map((a) => `${a.getAttribute('href')} ${a.textContent}`),
  );
  assert.ok(listed.includes(`${werkPath.slice(1)} Hafenlichter & "Nachtbilder"`), listed.join('\n'));

  // An invalid form comes back with everything typed and the message beside the field.
  await page.goto(`${server.origin}${werkPath}/bearbeiten`);
  await page.fill('#feld-titel', 'Hafenlichter, überarbeitet');
  await page.fill('#feld-jahr', 'Sommer');
  await page.fill('#feld-art', 'Fotografie');
  const [answer] = await Promise.all([
    page.waitForResponse((r) => r.request().method() === 'POST'),
    page.click('form.change button[type=submit]'),
  ]);
  assert.equal(answer.status(), 422);
  assert.deepEqual(
    await Promise.all(['#feld-titel', '#feld-jahr', '#feld-art', '#feld-beschreibung'].map((s) => page.inputValue(s))),
    ['Hafenlichter, überarbeitet', 'Sommer', 'Fotografie', 'Neue Serie.\nZweite Zeile.'],
  );
  assert.equal(
    await page.textContent('#feld-jahr-fehler'),
    'A year from -3000 to 3000, or empty when it is not known.',
  );
  await page.fill('#feld-jahr', '2025');
  await Promise.all([page.waitForURL(server.origin + werkPath), page.click('form.change button[type=submit]')]);
  assert.equal(await page.textContent('p.kicker'), 'Fotografie, 2025');
  await context.close();
});

test("a librarian lends a work and the user's loan list shows it", { skip, timeout: 120_000 }, async () => {
  const librarian = await browser.newContext();
  const page = await librarian.newPage();
  await logIn(page, 'bibliothek', '/entlehnte/4');
  assert.equal(await page.textContent('h1'), 'Loans of aschaefer');
  await page.fill('#feld-werk', `${server.origin}/werk/40`);
  await Promise.all([
    page.waitForURL(`${server.origin}/entlehnte/4`),
    page.click('section.lend form.change button[type=submit]'),
  ]);
  const [{ titel }] = (await server.db.query<{ titel: string }>('SELECT titel FROM werk WHERE id = 40')) as [
    { titel: string },
  ];
  assert.deepEqual(
    await page.$$eval('table.loans tbody td:first-child a', (links) => links.map((a) => a.textContent)),
    [titel],
  );
  await librarian.close();

  const user = await browser.newContext();
  const own = await user.newPage();
  await logIn(own, 'aschaefer', '/entlehnte/4');
  assert.deepEqual(await own.$$eval('table.loans tbody td:first-child a', (links) => links.map((a) => a.textContent)), [
    titel,
  ]);
  assert.equal(await own.$('section.lend'), null, 'a user gets no lend form');
  await user.close();
});
