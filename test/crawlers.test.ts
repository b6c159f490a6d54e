// What crawlers and link checkers meet (docs/interface.md, Feeds, sitemap and links): robots.txt
// leaves out exactly the addresses an anonymous visitor cannot use, in both URL styles, a
// crawler that keeps to it or to rel="nofollow" finds no link that fails, each page has a meta
// description, and /favicon.ico is there.
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Config, Parser } from 'html-validate';
import robotsModule from 'robots-parser';
import sharp from 'sharp';
import { loadRules, rewriteUrl } from '../lib/rewrite/index.ts';
import type { TestServer } from './helpers.ts';
import { root, startTestServer } from './helpers.ts';

// A CommonJS module whose types declare a default export: imported, it is the function itself.
const robotsParser = robotsModule as unknown as typeof robotsModule.default;
const htmlConfig = await Config.defaultConfig().resolve();

let server: TestServer;
let robots: ReturnType<typeof robotsParser>;
let robotsText: string;

before(async () => {
  server = await startTestServer();
  const res = await fetch(`${server.origin}/robots.txt`);
  assert.equal(res.status, 200);
  robotsText = await res.text();
  robots = robotsParser(`${server.origin}/robots.txt`, robotsText);
});
after(() => server?.close());

const scripts = readdirSync(path.join(root, 'scripts'))
  .filter((f) => f.endsWith('.ts'))
  .map((f) => f.replace(/\.ts$/, ''));
const allowed = (target: string) => robots.isAllowed(server.origin + target, 'AnyBot') === true;

/** One address for each rule of the rewrite table that leads to a script (checked below: none is missing). */
const addresses = [
  '/',
  '/index',
  '/personen',
  '/person/1',
  '/person/max-muster',
  '/werk/1',
  '/search',
  '/entlehnte/2',
  '/entlehnte/2/1',
  '/login',
  '/logout',
  '/me',
  '/personen/neu',
  '/person/1/bearbeiten',
  '/person/max-muster/bearbeiten',
  '/person/1/werke',
  '/person/max-muster/werke',
  '/person/1/werke/neu',
  '/person/max-muster/werke/neu',
  '/werk/1/bearbeiten',
  '/person/1/loeschen',
  '/person/max-muster/loeschen',
  '/werk/1/loeschen',
  '/person/1/bild',
  '/person/max-muster/bild',
  '/feed',
  '/person/1/feed',
  '/person/max-muster/feed',
  '/sitemap',
  '/robots.txt',
  '/openapi',
];

/** Each address in both styles: the rewritten one, and the script's own (/person-bearbeiten.php?pid=1) that the rule leads to. */
async function bothStyles(): Promise<{ rewritten: string; script: string; rule: number }[]> {
  const rules = await loadRules(path.join(root, 'rewrite-rules.json'), {
    scriptExists: (name) => scripts.includes(name),
  });
  const scriptRules = rules.rules.flatMap((rule) => (/\.php(\?|$)/.test(rule.source.substitution) ? [rule.index] : []));
  const pairs = addresses.map((rewritten) => {
    const decision = rewriteUrl(rules, { path: rewritten, query: '' });
    assert.ok(decision.kind === 'pass' && decision.rule !== null, `${rewritten} reaches a script through a rule`);
    return {
      rewritten,
      script: decision.query ? `${decision.path}?${decision.query}` : decision.path,
      rule: decision.rule,
    };
  });
  const missing = scriptRules.filter((i) => !pairs.some((p) => p.rule === i));
  assert.deepEqual(
    missing.map((i) => rules.rules[i]?.source.pattern),
    [],
    'every rule that leads to a script has an address here',
  );
  return pairs;
}

/** A public document: 200 for anyone, and shared caches may keep it. Redirects lead to one. */
async function isPublic(target: string): Promise<boolean> {
  const res = await fetch(server.origin + target, { redirect: 'manual' });
  await res.arrayBuffer();
  if (res.status === 301 || res.status === 303) return true;
  return res.status === 200 && /^public/.test(res.headers.get('cache-control') ?? '');
}

describe('robots.txt', () => {
  test('leaves out exactly the addresses that are not public documents, in both URL styles', async () => {
    const wrong: string[] = [];
    for (const { rewritten, script } of await bothStyles()) {
      for (const target of [rewritten, script]) {
        const open = await isPublic(target);
        if (allowed(target) !== open)
          wrong.push(`${target} is ${open ? 'public' : 'not public'} but ${open ? 'disallowed' : 'allowed'}`);
      }
    }
    assert.deepEqual(wrong, []);
  });

  test('leaves out the forms with every suffix and query, and leaves the documents and files open', () => {
    for (const target of [
      '/person/max-muster/bearbeiten.json',
      '/werk/7/loeschen.html',
      '/person/max-muster/bild?x=1',
      '/login?back=/person/max-muster',
      '/login.php?back=/',
      '/me.json',
      '/entlehnte.php?uid=2',
    ]) {
      assert.equal(allowed(target), false, target);
    }
    for (const target of [
      '/person/max-muster.xml',
      '/werk/7.json',
      '/personen?offset=50',
      '/person.php?pid=1',
      '/bilder/0123456789abcdef0123456789abcdef-480.webp',
      '/img/max-muster.svg',
      '/css/site.css',
      '/js/site.js',
      '/favicon.ico',
      '/sitemap.xml',
    ]) {
      assert.equal(allowed(target), true, target);
    }
  });

  test('is text whatever Accept asks, as crawlers ask for text/plain alone too', async () => {
    for (const accept of ['text/plain', 'text/plain, */*;q=0.1', 'text/html', 'application/json', '*/*']) {
      const res = await fetch(`${server.origin}/robots.txt`, { headers: { accept } });
      assert.deepEqual(
        [res.status, res.headers.get('content-type'), await res.text()],
        [200, 'text/plain; charset=utf-8', robotsText],
        accept,
      );
    }
  });

  test('every Disallow line leaves out an address the site has', async () => {
    const targets = (await bothStyles()).flatMap((p) => [p.rewritten, p.script]);
    const lines = robotsText.split('\n').filter((line) => line.startsWith('Disallow: '));
    for (const line of lines) {
      const alone = robotsParser(`${server.origin}/robots.txt`, `User-agent: *\n${line}\n`);
      assert.ok(
        targets.some((t) => alone.isDisallowed(server.origin + t, 'AnyBot')),
        `${line} leaves out no address of the site`,
      );
    }
    assert.deepEqual(robots.getSitemaps(), [`${server.origin}/sitemap.xml`]);
  });
});

/** The links of an HTML page as a crawler reads them: each address resolved against <base href>, and whether it says nofollow. */
function linksOf(html: string, pageUrl: string): { url: URL; nofollow: boolean; tag: string }[] {
  const doc = new Parser(htmlConfig).parseHtml(html);
  const base = new URL(doc.querySelector('base')?.getAttributeValue('href') ?? '', pageUrl);
  return doc.querySelectorAll('a[href], link[href], img[src], script[src]').map((element) => {
    const url = new URL(element.getAttributeValue('href') ?? element.getAttributeValue('src') ?? '', base);
    url.hash = '';
    const rel = (element.getAttributeValue('rel') ?? '').split(/\s+/);
    return { url, nofollow: rel.includes('nofollow'), tag: element.tagName };
  });
}

interface Crawl {
  /** Addresses fetched, with the status of the answer (after redirects on this site). */
  answers: Map<string, number>;
  /** Links on a page that lead to an address robots.txt leaves out, without rel="nofollow". */
  unmarked: string[];
  /** HTML pages without exactly one meta description. */
  undescribed: string[];
}

/**
 * From /, every link on this site breadth first, up to `limit` addresses, leaving out what
 * robots.txt leaves out and links that say nofollow, as the crawler keeps to either.
 */
async function crawl(keepsTo: { robots: boolean; nofollow: boolean }, limit = 2000): Promise<Crawl> {
  const answers = new Map<string, number>();
  const unmarked: string[] = [];
  const undescribed: string[] = [];
  const queue = [`${server.origin}/`];
  const seen = new Set(queue);
  while (queue.length > 0 && answers.size < limit) {
    const address = queue.shift() as string;
    const res = await fetch(address, { headers: { 'user-agent': 'AnyBot/1.0' } });
    answers.set(address.slice(server.origin.length), res.status);
    if (res.status !== 200 || !(res.headers.get('content-type') ?? '').startsWith('text/html')) {
      await res.arrayBuffer();
      continue;
    }
    const html = await res.text();
    if ((html.match(/<meta name="description" content="[^"]+">/g) ?? []).length !== 1)
      undescribed.push(address.slice(server.origin.length));
    for (const link of linksOf(html, res.url)) {
      if (link.url.origin !== server.origin) continue;
      const left = !allowed(link.url.pathname + link.url.search);
      if (left && !link.nofollow && link.tag === 'a')
        unmarked.push(`${address.slice(server.origin.length)} → ${link.url.pathname}${link.url.search}`);
      if ((left && keepsTo.robots) || (link.nofollow && keepsTo.nofollow) || seen.has(link.url.href)) continue;
      seen.add(link.url.href);
      queue.push(link.url.href);
    }
  }
  return { answers, unmarked, undescribed };
}

const failures = (answers: Map<string, number>) =>
  [...answers].filter(([, status]) => status !== 200).map(([address, status]) => `${status} ${address}`);

describe('a crawler from the start page', () => {
  // The crawl that keeps to robots.txt, made once for the tests that read it.
  let crawled: Promise<Crawl> | null = null;
  const polite = () => (crawled ??= crawl({ robots: true, nofollow: false }));

  test('that keeps to robots.txt finds no link that fails: every address answers 200, after redirects', async (t) => {
    const { answers } = await polite();
    t.diagnostic(`${answers.size} addresses`);
    assert.deepEqual(failures(answers), []);
    // The demo data's persons, works, their feeds and representations, the files: far more than a few pages, far fewer than the bound.
    assert.ok(answers.size > 100 && answers.size < 2000, `${answers.size} addresses`);
    for (const address of [
      '/personen',
      '/person/max-muster',
      '/werk/1',
      '/search',
      '/feed',
      '/person/max-muster.json',
      '/css/site.css',
      '/js/site.js',
    ]) {
      assert.equal(answers.get(address), 200, address);
    }
  });

  test('that keeps to rel="nofollow" alone finds no link that fails either', async () => {
    const { answers } = await crawl({ robots: false, nofollow: true });
    assert.deepEqual(failures(answers), []);
    assert.equal(answers.size, (await polite()).answers.size);
  });

  test('every link to an address robots.txt leaves out says rel="nofollow"', async () => {
    assert.deepEqual([...new Set((await polite()).unmarked)], []);
  });

  test('every HTML page it finds has one meta description', async () => {
    assert.deepEqual((await polite()).undescribed, []);
  });
});

describe('/favicon.ico', () => {
  test('is an icon of 16 and 32 pixels, kept by caches for an hour, and every page links it', async () => {
    const res = await fetch(`${server.origin}/favicon.ico`);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'image/vnd.microsoft.icon');
    assert.equal(res.headers.get('cache-control'), 'public, max-age=3600');
    const ico = Buffer.from(await res.arrayBuffer());
    // ICONDIR: reserved 0, type 1 (icon), the count; then one 16-byte entry per picture, each a PNG here.
    assert.deepEqual([ico.readUInt16LE(0), ico.readUInt16LE(2), ico.readUInt16LE(4)], [0, 1, 2]);
    const pictures = await Promise.all(
      [0, 1].map(async (i) => {
        const entry = 6 + 16 * i;
        const bytes = ico.subarray(
          ico.readUInt32LE(entry + 12),
          ico.readUInt32LE(entry + 12) + ico.readUInt32LE(entry + 8),
        );
        const { format, width, height } = await sharp(bytes).metadata();
        return { declared: [ico.readUInt8(entry), ico.readUInt8(entry + 1)], format, width, height };
      }),
    );
    assert.deepEqual(pictures, [
      { declared: [16, 16], format: 'png', width: 16, height: 16 },
      { declared: [32, 32], format: 'png', width: 32, height: 32 },
    ]);
    for (const page of ['/', '/person/max-muster', '/login']) {
      assert.match(
        await (await fetch(server.origin + page)).text(),
        /<base href="\/">\n<link rel="stylesheet" href="css\/site.css">\n<link rel="icon" href="favicon.ico" sizes="16x16 32x32">\n/,
        page,
      );
    }
  });
});

describe('the meta description', () => {
  const descriptionOf = async (target: string) => {
    const html = await (await fetch(server.origin + target)).text();
    return /<meta name="description" content="([^"]*)">/.exec(html)?.[1] ?? null;
  };

  test("says what each public page holds: the counts, a person's works, a work's creator, a search's results", async () => {
    const [counts] = await server.db.query<{ personen: number; werke: number }>(
      'SELECT (SELECT count(*)::int FROM person) AS personen, (SELECT count(*)::int FROM werk) AS werke',
    );
    const titles = (
      await server.db.query<{ titel: string }>(
        `SELECT w.titel FROM werk w JOIN person p ON p.id = w.person_id WHERE p.slug = 'max-muster' ORDER BY w.titel, w.id`,
      )
    ).map((w) => w.titel);
    assert.equal(titles.length, 5);
    assert.deepEqual(
      await Promise.all(['/', '/personen', '/person/max-muster', '/search', '/login'].map(descriptionOf)),
      [
        `Persons and their works: ${counts?.personen} persons with ${counts?.werke} works, each in HTML, XML and JSON. Search names and titles, or see the newest works.`,
        `The ${counts?.personen} persons of the portfolio by last name, each with the number of their works.`,
        `Max Muster has 5 works in the portfolio: ${titles.slice(0, 3).join(' · ')} · ….`,
        'Search the persons and works of the portfolio by name, title, description, type and year.',
        null,
      ],
    );
    assert.equal(
      await descriptionOf('/personen?offset=10'),
      `Persons 11 to ${Math.min(60, counts?.personen ?? 0)} of the ${counts?.personen} of the portfolio by last name, each with the number of their works.`,
    );
    assert.equal(
      await descriptionOf('/search?query=title,exact,Hafen%20im%20Nebel'),
      '1 result for title exact &#34;Hafen im Nebel&#34;.',
    );
    assert.equal(
      await descriptionOf('/search?query=any,contains,zzzqqq'),
      'No results for any contains &#34;zzzqqq&#34;.',
    );
  });

  test('of a work is its title, type, creator, year and the start of its description: escaped, on one line, at most 160 characters', async () => {
    const beschreibung = `Erste Zeile.\n\nZweite Zeile mit <b>Markup</b> & "Anführungszeichen", ${'und noch mehr Text '.repeat(10)}`;
    const [row] = await server.db.query<{ id: number }>(
      `INSERT INTO werk (person_id, titel, jahr, art, beschreibung) VALUES ((SELECT id FROM person WHERE slug = 'max-muster'), $1, 1999, 'Roman', $2) RETURNING id`,
      ['<i>Kursiv</i> & "Zitat"', beschreibung],
    );
    try {
      const expected =
        `<i>Kursiv</i> & "Zitat": Roman by Max Muster, 1999. ${beschreibung.replace(/\s+/g, ' ')}`.slice(0, 160) + '…';
      const escaped = expected
        .replace(/&/g, '&amp;')
        .replace(/</g, '&lt;')
        .replace(/>/g, '&gt;')
        .replace(/"/g, '&#34;');
      assert.equal(await descriptionOf(`/werk/${row?.id}`), escaped);
      assert.equal([...expected].length, 161);
    } finally {
      await server.db.query('DELETE FROM werk WHERE id = $1', [row?.id]);
    }
  });
});
