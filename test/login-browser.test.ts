// A real browser (Debian's Chromium through playwright-core) logs in through the form, sees
// its loan list, logs out and is refused the same URL afterwards; no URL it meets carries
// the session id.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Browser } from 'playwright-core';
import type { TestServer } from './helpers.ts';
import { launchChromium, missingTool, startTestServer } from './helpers.ts';
import { demo } from './login-helpers.ts';

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

test('logs in through the form, sees its loan list, logs out and is refused the list again', {
  skip,
  timeout: 120_000,
}, async () => {
  const context = await browser.newContext();
  const page = await context.newPage();
  const urls: string[] = [];
  page.on('request', (request) => urls.push(request.url()));
  page.on('response', (response) => urls.push(response.headers().location ?? ''));
  const linksOnPage = () =>
    page.$$eval('a[href], form[action]', (elements) =>
      elements.map((e) => e.getAttribute('href') ?? e.getAttribute('action') ?? ''),
    );
  const seenLinks: string[] = [];
  const loans = `${server.origin}/entlehnte/${demo.mmuster.id}`;

  // Anonymous: 403 with a login link that leads back here.
  const refused = await page.goto(loans);
  assert.equal(refused?.status(), 403);
  await page.click('main a.login');
  await page.waitForURL(`${server.origin}/login?back=/entlehnte/2`);
  seenLinks.push(...(await linksOnPage()));

  await page.fill('#username', 'mmuster');
  await page.fill('#password', demo.mmuster.password);
  await Promise.all([page.waitForURL(loans), page.click('form.login button[type=submit]')]);
  assert.equal(await page.textContent('h1'), 'Loans of mmuster');
  assert.deepEqual(
    await page.$$eval('table.loans tbody td:first-child a', (links) => links.map((a) => a.textContent)),
    ['Das Haus am Deich', 'Über "das" Meer'],
  );
  assert.equal((await page.textContent('header .account span'))?.trim(), 'Logged in as mmuster');
  seenLinks.push(...(await linksOnPage()));

  const [cookie] = (await context.cookies()).filter((c) => c.name === 'portfolio_session');
  assert.ok(cookie);
  assert.deepEqual(
    {
      httpOnly: cookie.httpOnly,
      sameSite: cookie.sameSite,
      secure: cookie.secure,
      path: cookie.path,
      expires: cookie.expires,
    },
    {
      httpOnly: true,
      sameSite: 'Lax',
      secure: false,
      path: '/',
      expires: -1,
    },
  );
  assert.equal(await page.evaluate('document.cookie'), '', 'scripts on the page cannot read the session cookie');

  // The work links lead to public documents, the same bytes for everyone: their header shows the
  // user from me.json.
  await page.click('table.loans a[href="werk/7"]');
  await page.waitForURL(`${server.origin}/werk/7`);
  await page.waitForSelector('header .account', { state: 'visible' });
  assert.equal((await page.textContent('header .account summary'))?.trim(), 'Logged in as mmuster');
  assert.equal(await page.isVisible('header a.login'), false);
  await page.goBack();

  await page.click('header .account summary');
  await Promise.all([
    page.waitForURL(`${server.origin}/login?logged_out=1`),
    page.click('header .account button[type=submit]'),
  ]);
  assert.equal((await page.textContent('p.notice'))?.trim(), 'You have logged out.');
  seenLinks.push(...(await linksOnPage()));

  const again = await page.goto(loans);
  assert.equal(again?.status(), 403);

  const leaks = [...urls, ...seenLinks].filter((url) => url.includes(cookie.value));
  assert.deepEqual(leaks, [], 'no URL carries the session id');
  assert.ok(urls.length > 8, `the browser made its requests: ${urls.join(' ')}`);
  await context.close();
});
