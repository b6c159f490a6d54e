// The display_errors page as a developer sees it: Chromium opens a failing page of a development
// server, and a screenshot shows the source excerpt with the failing line marked.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import type { Browser } from 'playwright-core';
import type { TestServer } from '../helpers.ts';
import { fixtureEnv, launchChromium, missingTool, startTestServer } from '../helpers.ts';

type PageWindow = { getComputedStyle(el: unknown): { backgroundColor: string } };
const screenshot = path.join(os.tmpdir(), 'portfolio-display-errors.png');

let server: TestServer;
let browser: Browser;

const skip = missingTool('/usr/bin/chromium', 'chromium');

before(async () => {
  if (skip) return;
  server = await startTestServer({ ...fixtureEnv, DISPLAY_ERRORS: '1' });
  browser = await launchChromium();
});
after(async () => {
  await browser?.close();
  await server?.close();
});

test('a screenshot of the display_errors page shows the source excerpt with the failing line marked', {
  skip,
}, async (t) => {
  const page = await browser.newPage({ viewport: { width: 1000, height: 800 } });
  const res = await page.goto(`${server.origin}/boom`);
  assert.equal(res?.status(), 500);
  assert.equal(await page.locator('h1').textContent(), 'TypeError');

  const excerpt = page.locator('pre.excerpt');
  assert.ok(await excerpt.isVisible());
  const box = await excerpt.boundingBox();
  assert.ok(box && box.y < 800 && box.height > 100, `the excerpt sits at ${JSON.stringify(box)}`);
  const here = page.locator('pre.excerpt span.here');
  assert.equal(await here.textContent(), ' 9 >   const titel = (werke[index] as Werk).titel;');
  // Runs in the page; the cast stands in for the DOM library the tests are type-checked without.
  assert.equal(
    await here.evaluate((el) => (globalThis as unknown as PageWindow).getComputedStyle(el).backgroundColor),
    'rgb(255, 217, 208)',
  );
  assert.equal(await page.locator('pre.excerpt span').count(), 9); // lines 4 to 12: five before, the file ends three after

  await page.screenshot({ path: screenshot });
  const png = readFileSync(screenshot);
  assert.equal(png.subarray(1, 4).toString('latin1'), 'PNG');
  assert.equal(png.readUInt32BE(16), 1000);
  assert.equal(png.readUInt32BE(20), 800);
  t.diagnostic(`screenshot: ${screenshot}`);
  await page.close();
});
