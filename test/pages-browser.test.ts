// Every page type in a real browser (Debian's Chromium through playwright-core) at 390 and 1280
// pixels, as a visitor, a user and the librarian, in its states (empty, error, validation): no
// horizontal scrolling, and axe-core finds no violations. A failing page leaves a screenshot in
// the folder the failure names.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import type { TestServer } from './helpers.ts';
import { launchChromium, missingTool, startTestServer } from './helpers.ts';
import { demo } from './login-helpers.ts';
import type { DemoUser } from './login-helpers.ts';

const skip = missingTool('/usr/bin/chromium', 'chromium');
const axeSource = createRequire(import.meta.url).resolve('axe-core/axe.min.js');
const widths = [390, 1280];

let server: TestServer;
let browser: Browser;
let artefacts: string | null = null;

before(async () => {
  if (skip) return;
  server = await startTestServer();
  browser = await launchChromium();
});
after(async () => {
  await browser?.close();
  await server?.close();
});

type Role = 'visitor' | DemoUser;

/** A browser of its own for a role; axe is injected as a script, so the page's CSP is bypassed. */
async function contextFor(role: Role, options: { javaScript?: boolean } = {}): Promise<BrowserContext> {
  const context = await browser.newContext({ bypassCSP: true, javaScriptEnabled: options.javaScript ?? true });
  if (role !== 'visitor') {
    const page = await context.newPage();
    await page.goto(`${server.origin}/login?back=/`);
    await page.fill('#username', role);
    await page.fill('#password', demo[role].password);
    await Promise.all([page.waitForURL(`${server.origin}/`), page.click('form.login button[type=submit]')]);
    await page.close();
  }
  return context;
}

/** Keeps a screenshot of a page whose check failed and says where. */
async function screenshot(page: Page, name: string): Promise<string> {
  artefacts ??= mkdtempSync(path.join(os.tmpdir(), 'portfolio-pages-'));
  mkdirSync(artefacts, { recursive: true });
  const file = path.join(artefacts, `${name.replace(/[^a-z0-9]+/gi, '-')}.png`);
  await page.screenshot({ path: file, fullPage: true });
  return file;
}

interface Visit {
  name: string;
  /** Opens the page in its state: a GET, or a form sent. */
  open: (page: Page) => Promise<unknown>;
  status: number;
}

const get = (name: string, url: string, status = 200): Visit => ({
  name,
  status,
  open: (page) => page.goto(server.origin + url),
});

/** The answer to a form sent: its status. */
async function send(page: Page, url: string, fill: Record<string, string>, button: string): Promise<number> {
  await page.goto(server.origin + url);
  for (const [selector, value] of Object.entries(fill)) await page.fill(selector, value);
  const [answer] = await Promise.all([
    page.waitForResponse((r) => r.request().method() === 'POST'),
    page.click(button),
  ]);
  await page.waitForLoadState();
  return answer.status();
}

function visitsOf(role: Role): Visit[] {
  const own = role === 'visitor' ? 2 : demo[role].id;
  const librarian = role === 'bibliothek';
  const mayEdit = role === 'mmuster' || librarian;
  const visits = [
    get('home', '/'),
    get('persons', '/personen'),
    get('person', '/person/max-muster'),
    get('work', '/werk/7'),
    get('search form', '/search'),
    get('search hits', '/search?query=any,contains,Meer'),
    get('search without hits', '/search?query=any,contains,zzqqxx'),
    get('not found', '/person/niemand-hier', 404),
    get('login', '/login'),
    get('loan list', `/entlehnte/${own}`, role === 'visitor' ? 403 : 200),
    get('loan', '/entlehnte/2/7', role === 'visitor' || role === 'jmueller' ? 403 : 200),
    get("another's loan list", '/entlehnte/4', librarian ? 200 : 403),
    get('edit form', '/person/max-muster/bearbeiten', mayEdit ? 200 : 403),
    get('delete person', '/person/max-muster/loeschen', mayEdit ? 200 : 403),
    get('delete work', '/werk/2/loeschen', mayEdit ? 200 : 403),
    get('new person', '/personen/neu', librarian ? 200 : 403),
  ];
  if (role === 'visitor') {
    visits.push({
      name: 'login refused',
      status: 403,
      open: (page) =>
        send(page, '/login', { '#username': 'mmuster', '#password': 'wrong' }, 'form.login button[type=submit]'),
    });
  }
  if (mayEdit) {
    visits.push({
      name: 'edit form invalid',
      status: 422,
      open: (page) => send(page, '/werk/2/bearbeiten', { '#feld-jahr': 'Sommer' }, 'form.change button[type=submit]'),
    });
  }
  if (librarian) {
    visits.push(
      get('lend search step', '/entlehnte/4?suche=M%C3%BCller'),
      get('lend search without hits', '/entlehnte/4?suche=zzqqxx'),
      {
        name: 'lend invalid',
        status: 422,
        open: (page) =>
          send(
            page,
            '/entlehnte/4',
            { '#feld-werk': 'Meer', '#feld-bis': '' },
            'section.lend form.change button[type=submit]',
          ),
      },
    );
  }
  return visits;
}

interface Figure {
  role: Role;
  page: string;
  width: number;
  scrollWidth: number;
  /** Rows the header's visible parts take: 1 is one row. */
  headerRows: number;
  violations: string[];
}

async function measure(page: Page): Promise<Omit<Figure, 'role' | 'page' | 'width'>> {
  const scrollWidth = await page.evaluate<number>('document.documentElement.scrollWidth');
  // A part that starts below the bottom of every part before it opens a new row.
  const headerRows = await page.$$eval(
    'header.site > *',
    (parts) =>
      parts
        .map((part) =>
          (
            part as unknown as { getBoundingClientRect(): { top: number; bottom: number; height: number } }
          ).getBoundingClientRect(),
        )
        .filter((box) => box.height > 0)
        .sort((a, b) => a.top - b.top)
        .reduce(
          (row, box) =>
            box.top >= row.bottom
              ? { rows: row.rows + 1, bottom: box.bottom }
              : { rows: row.rows, bottom: Math.max(row.bottom, box.bottom) },
          { rows: 0, bottom: -Infinity },
        ).rows,
  );
  if (!(await page.evaluate<boolean>("'axe' in window"))) await page.addScriptTag({ path: axeSource });
  // Each violation with the elements it found, e.g. "color-contrast at a.login".
  const violations = await page.evaluate<string[]>(`axe.run(document).then((result) => result.violations
    .map((v) => v.id + ' at ' + v.nodes.map((n) => n.target.join(' ')).join(', ')))`);
  return { scrollWidth, headerRows, violations };
}

test('the checks see a page too wide, a header in two rows and a picture without a text', {
  skip,
  timeout: 60_000,
}, async () => {
  const context = await contextFor('visitor');
  const page = await context.newPage();
  await page.setViewportSize({ width: 390, height: 900 });
  await page.goto(`${server.origin}/`);
  assert.deepEqual(await measure(page), { scrollWidth: 390, headerRows: 1, violations: [] });
  await page.evaluate(`document.querySelector('main').insertAdjacentHTML('beforeend', '<div style="width: 600px">wide</div><img src="img/person.svg">');
    document.querySelector('header.site').style.flexWrap = 'wrap'; document.querySelector('header.site nav').style.width = '300px'`);
  const broken = await measure(page);
  assert.ok(broken.scrollWidth > 600, `${broken.scrollWidth}`);
  assert.ok(broken.headerRows > 1, `${broken.headerRows}`);
  assert.deepEqual(
    broken.violations.map((v) => v.split(' ')[0]),
    ['image-alt'],
  );
  await context.close();
});

for (const role of ['visitor', 'mmuster', 'bibliothek'] as const) {
  test(`every page as ${role === 'visitor' ? 'a visitor' : role}: no horizontal scrolling at 390 and 1280 px, no axe violations`, {
    skip,
    timeout: 300_000,
  }, async (t) => {
    const context = await contextFor(role);
    const page = await context.newPage();
    const figures: Figure[] = [];
    const failures: string[] = [];
    for (const visit of visitsOf(role)) {
      await page.setViewportSize({ width: widths[1] as number, height: 900 });
      const response = await visit.open(page);
      const status = typeof response === 'number' ? response : (response as { status(): number } | null)?.status();
      assert.equal(status, visit.status, `${visit.name} as ${role}`);
      // The header's script has read me.json and shown what this role may use.
      await page.waitForLoadState('networkidle');
      for (const width of widths) {
        await page.setViewportSize({ width, height: 900 });
        const figure = { role, page: visit.name, width, ...(await measure(page)) };
        figures.push(figure);
        if (figure.scrollWidth > width || figure.headerRows !== 1 || figure.violations.length > 0) {
          const file = await screenshot(page, `${role}-${visit.name}-${width}`);
          const violations = figure.violations.join('; ') || 'no axe violations';
          failures.push(
            `${visit.name} at ${width} px: ${figure.scrollWidth} px wide, header in ${figure.headerRows} rows; ${violations} (screenshot ${file})`,
          );
        }
      }
    }
    t.diagnostic(
      figures
        .map(
          (f) =>
            `${f.page} ${f.width}: ${f.scrollWidth} px, header ${f.headerRows} row, ${f.violations.length} axe violations`,
        )
        .join('\n'),
    );
    assert.deepEqual(failures, []);
    assert.ok(figures.length >= 32, `${figures.length} pages measured`);
    await context.close();
  });
}

test('the header and the controls follow who is looking, on pages that are the same bytes for everyone', {
  skip,
  timeout: 120_000,
}, async () => {
  const controls = async (page: Page) =>
    page.$$eval('[data-may]', (elements) =>
      elements.filter((e) => !(e as unknown as { hidden: boolean }).hidden).map((e) => e.textContent?.trim()),
    );
  const open = async (page: Page, url: string) => {
    await page.goto(server.origin + url);
    await page.waitForLoadState('networkidle');
  };

  const visitor = await contextFor('visitor');
  const anonymous = await visitor.newPage();
  await open(anonymous, '/person/max-muster');
  assert.deepEqual(await controls(anonymous), []);
  assert.equal(await anonymous.isVisible('header a.login'), true);
  assert.equal(await anonymous.isVisible('header .account'), false);
  await visitor.close();

  const user = await contextFor('mmuster');
  const own = await user.newPage();
  await open(own, '/person/max-muster');
  assert.deepEqual(await controls(own), ['Edit · Change the picture · Add a work · Delete']);
  assert.equal(await own.isVisible('header a.login'), false);
  assert.equal((await own.textContent('header .account summary'))?.trim(), 'Logged in as mmuster');
  await open(own, '/person/juergen-mueller');
  assert.deepEqual(await controls(own), [], 'not their person');
  await open(own, '/personen');
  assert.deepEqual(await controls(own), [], 'New person is for librarians');
  // My loans and Log out from the menu of a public page.
  await own.click('header .account summary');
  await Promise.all([own.waitForURL(`${server.origin}/entlehnte/2`), own.click('header .account a:text("My loans")')]);
  await open(own, '/werk/2');
  assert.deepEqual(await controls(own), ['Edit · Delete']);
  await own.click('header .account summary');
  await Promise.all([
    own.waitForURL(`${server.origin}/login?logged_out=1`),
    own.click('header .account button:text("Log out")'),
  ]);
  await open(own, '/person/max-muster');
  assert.deepEqual(await controls(own), []);
  assert.equal(await own.isVisible('header a.login'), true);
  await user.close();

  const librarian = await contextFor('bibliothek');
  const all = await librarian.newPage();
  await open(all, '/personen');
  assert.deepEqual(await controls(all), ['New person']);
  await open(all, '/person/juergen-mueller');
  assert.deepEqual(await controls(all), ['Edit · Change the picture · Add a work · Delete']);
  await librarian.close();

  // Without JavaScript the controls stay hidden and the header offers the login.
  const plain = await contextFor('bibliothek', { javaScript: false });
  const noScript = await plain.newPage();
  await noScript.goto(`${server.origin}/personen`);
  assert.deepEqual(await controls(noScript), []);
  assert.equal(await noScript.isVisible('header a.login'), true);
  await plain.close();
});

test('deleting a person asks first, says how many works go, and Cancel goes back; it works without JavaScript', {
  skip,
  timeout: 120_000,
}, async () => {
  const [person] = await server.db.query<{ slug: string; name: string; werke: number }>(
    `SELECT p.slug, p.vorname || ' ' || p.nachname AS name, (SELECT count(*)::integer FROM werk w WHERE w.person_id = p.id) AS werke
       FROM person p WHERE NOT EXISTS (SELECT 1 FROM werk w JOIN loan l ON l.werk_id = w.id AND l.returned_at IS NULL WHERE w.person_id = p.id)
      ORDER BY p.id DESC LIMIT 1`,
  );
  assert.ok(person && person.werke > 1);
  const context = await contextFor('bibliothek');
  const page = await context.newPage();
  await page.goto(`${server.origin}/person/${person.slug}`);
  await Promise.all([
    page.waitForURL(`${server.origin}/person/${person.slug}/loeschen`),
    page.click('p.edit a:text("Delete")'),
  ]);
  assert.equal(await page.textContent('h1'), `Delete ${person.name}?`);
  assert.equal(
    await page.textContent('main p.lead'),
    `This deletes ${person.name} and all their works (${person.werke} works). It cannot be undone.`,
  );
  await Promise.all([page.waitForURL(`${server.origin}/person/${person.slug}`), page.click('main a:text("Cancel")')]);
  assert.equal(await page.textContent('h2.name'), person.name, 'Cancel deleted nothing');
  // From the edit form, the delete is a link to the same page.
  await page.goto(`${server.origin}/person/${person.slug}/bearbeiten`);
  await Promise.all([page.waitForURL(`${server.origin}/person/${person.slug}/loeschen`), page.click('p.remove a')]);
  await context.close();

  const plain = await contextFor('bibliothek', { javaScript: false });
  const noScript = await plain.newPage();
  await noScript.goto(`${server.origin}/person/${person.slug}/loeschen`);
  await Promise.all([
    noScript.waitForURL(`${server.origin}/personen`),
    noScript.click('form.change button[type=submit]'),
  ]);
  assert.equal((await noScript.goto(`${server.origin}/person/${person.slug}`))?.status(), 410);
  await plain.close();
});

test('a librarian lends by title: suggestions as they type, or a search step without JavaScript that marks works on loan', {
  skip,
  timeout: 120_000,
}, async () => {
  const titles = async (page: Page) =>
    page.$$eval('table.loans tbody td:first-child a', (links) => links.map((a) => a.textContent));
  const context = await contextFor('bibliothek');
  const page = await context.newPage();
  await page.goto(`${server.origin}/entlehnte/4`);
  assert.equal(await page.textContent('p.empty'), 'No loans yet for Anna-Lena Schäfer.');
  await page.fill('#feld-werk', 'Elbe');
  await page.waitForSelector('#feld-werk-vorschlaege option', { state: 'attached' });
  const [suggestion] = await page.$$eval('#feld-werk-vorschlaege option', (options) =>
    options.map((o) => o as unknown as { value: string; label: string }).map((o) => ({ url: o.value, label: o.label })),
  );
  assert.ok(suggestion);
  assert.match(suggestion.url, new RegExp(`^${server.origin}/werk/[0-9]+$`));
  assert.match(suggestion.label, /Elbe.*, by /);
  await page.fill('#feld-werk', suggestion.url);
  await Promise.all([
    page.waitForURL(`${server.origin}/entlehnte/4`),
    page.click('section.lend form.change button[type=submit]'),
  ]);
  assert.deepEqual(await titles(page), [suggestion.label.replace(/, by .*$/, '')]);
  // A work on loan is suggested as such.
  await page.fill('#feld-werk', 'Müller');
  await page.waitForSelector('#feld-werk-vorschlaege option:has-text("by Jürgen")', { state: 'attached' });
  const labels = await page.$$eval('#feld-werk-vorschlaege option', (options) =>
    options.map((o) => (o as unknown as { label: string }).label),
  );
  const marked = labels.find((label) => label.startsWith('Über "das" Meer'));
  assert.match(
    marked ?? '',
    /, by .+ \(on loan to mmuster until [0-9]{4}-[0-9]{2}-[0-9]{2}\)$/,
    JSON.stringify(labels),
  );
  assert.ok(
    labels.some((label) => !label.includes('on loan to')),
    JSON.stringify(labels),
  );
  await context.close();

  const plain = await contextFor('bibliothek', { javaScript: false });
  const noScript = await plain.newPage();
  await noScript.goto(`${server.origin}/entlehnte/4`);
  await noScript.fill('#suche', 'Müller');
  await Promise.all([
    noScript.waitForURL(`${server.origin}/entlehnte/4?suche=M%C3%BCller`),
    noScript.click('form.find button[type=submit]'),
  ]);
  const candidates = await noScript.$$eval('ul.candidates li', (items) =>
    items.map((li) => ({
      text: li.textContent?.replace(/\s+/g, ' ').trim(),
      lend: li.querySelector('button') !== null,
    })),
  );
  const onLoan = candidates.find((c) => c.text?.startsWith('Über "das" Meer'));
  assert.ok(onLoan, JSON.stringify(candidates));
  assert.match(onLoan.text ?? '', /On loan to mmuster until [0-9]{4}-[0-9]{2}-[0-9]{2}$/);
  assert.equal(onLoan.lend, false, 'a work on loan has no Lend button');
  const free = candidates.find((c) => c.lend);
  assert.ok(free, JSON.stringify(candidates));
  await Promise.all([
    noScript.waitForURL(`${server.origin}/entlehnte/4`),
    noScript.click('ul.candidates li:has(button) button'),
  ]);
  assert.equal((await titles(noScript)).length, 2);
  await plain.close();
});
