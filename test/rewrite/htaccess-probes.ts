// The requests of the Apache comparison: for each rule file, paths aimed at its rules, plus
// paths every site gets, each also with query strings, a trailing slash and in upper case.
// Left out on purpose, where we differ from Apache by design: hidden files, "..", encoded
// "/" and "?" (%2F, %3F), double slashes, path info after a script, and methods other than
// GET on scripts (the scripts here answer GET only).

export interface Probe {
  method: string;
  target: string;
  headers: Record<string, string>;
  host?: string;
}

const common = [
  '/',
  '/robots.txt',
  '/img/logo.svg',
  '/img/',
  '/img',
  '/css/site.css',
  '/img/missing.png',
  '/index.php',
  '/page.php',
  '/article.php?id=3',
  '/nothing',
  '/a/b/c',
  '/Mixed/Case',
  '/%C3%BCber',
  '/with%20space',
  '/a+b',
  '/semi;colon',
  '/amp&er',
  '/eq=sign',
  '/tilde~x',
  '/dot.s',
  '/_under',
];

const aimed: Record<string, (string | Probe)[]> = {
  'front-controller.htaccess': [
    '/about',
    '/blog/2024/hello-world',
    '/index.php?p=1',
    '/wp-admin/',
    '/feed',
    '/css/',
    '/sitemap.xml',
  ],
  'pretty-urls.htaccess': [
    '/article/42',
    '/article/42/',
    '/article/7/hello-world',
    '/article/7/Hello',
    '/article/x',
    '/page/Contact_us',
    '/page/a-b',
    '/products/shoes/12',
    '/produkte/schuhe/3',
    '/products/a/b/1',
    '/de/about',
    '/en/article/5',
    '/de/page/Kontakt',
    '/fr/',
    '/de/de/about',
    '/about',
    '/About',
    '/tag/rock%20%26%20roll',
    '/tag/a+b',
    '/tag/x,y',
    '/tag/%C3%BC',
  ],
  'query-string.htaccess': [
    '/show?id=5',
    '/show?x=1&id=77&y=2',
    '/show?id=abc',
    '/show',
    '/find?q=hello',
    '/find?q=a%20b',
    '/find?q=x&y=1',
    '/list',
    '/list?page=3',
    '/list?x=1',
    '/empty',
    '/empty?a=1',
    '/sorted?sort=desc',
    '/sorted?sort=asc',
    '/compare?zeta',
    '/compare?a',
    '/compare?m',
    '/compare?ma',
    '/compare?mmmmm',
  ],
  'redirects.htaccess': [
    withHost('/', 'example.test'),
    withHost('/anything?x=1', 'example.test'),
    withHost('/old-page', 'EXAMPLE.test'),
    withHost('/old-page', 'www.example.test'),
    '/old-page',
    '/old-page?x=1',
    '/moved/5',
    '/moved/a%20b',
    '/moved/%C3%A4',
    '/temp',
    '/temp?x=1',
    '/see-other',
    '/keep-query?a=1',
    '/keep-query',
    '/drop-query?a=1',
    '/anchor',
    '/page/x/',
    '/page/hello',
    '/secure',
    withHeaders('/secure', { 'x-forwarded-proto': 'https' }),
    withHeaders('/secure', { 'x-forwarded-proto': 'http' }),
  ],
  'forbidden-gone.htaccess': [
    '/private/x',
    '/private',
    '/db.sql',
    '/DB.SQL',
    '/conf.ini',
    '/backup.bak',
    '/old-shop',
    '/old-shop/item/1',
    '/old-shopper',
    withHeaders('/x', { 'user-agent': 'BadBot/1.0' }),
    withHeaders('/page/y', { 'user-agent': 'Mozilla EvilScraper' }),
    withHeaders('/x', { 'user-agent': 'curl/8.5.0' }),
    { method: 'PUT', target: '/api/x', headers: {} },
    { method: 'DELETE', target: '/api/y', headers: {} },
    '/api/z',
    '/removed',
    '/anything',
    '/a/b',
    '/api/',
  ],
  'case-insensitive.htaccess': [
    '/products/shoes',
    '/PRODUCTS/Shoes',
    '/Products/123',
    withHeaders('/docs', { accept: 'application/json, text/html;q=0.9' }),
    '/docs',
    withHeaders('/docs', { accept: 'application/json, TEXT/HTML;q=0.5' }),
    '/home?lang=DE',
    '/home?LANG=en',
    '/home?lang=fr',
    '/HELP',
    '/help',
    '/Shop',
    '/SHOP/x',
    '/shopping',
    withHost('/where', 'WWW.EXAMPLE.TEST'),
    withHost('/where', 'www.example.test'),
    '/where',
  ],
  'chain-skip.htaccess': [
    '/shop/abc',
    '/shop/ABC',
    '/shop/a/b',
    '/outlet/x',
    '/outlet/x/y',
    '/store/abc',
    '/item/5',
    '/item/x',
    '/final/done',
    '/final/page.php',
    '/sale/z',
    '/other',
    '/shop/',
    '/outlet/',
  ],
  'loop.htaccess': ['/loop/x', '/loop/', '/self/x', '/page.html', '/index.html', '/about.html', '/index.php?x=1'],
  'real-world.htaccess': [
    withHost('/page/impressum', 'example.test'),
    '/backup.BAK',
    '/vendor/autoload.php',
    '/storage/x',
    '/shop',
    '/SHOP/items',
    '/shopping',
    '/news.php?id=12',
    '/news.php?id=x',
    '/news.php',
    '/about-us',
    '/About-Us/',
    '/article/12',
    '/article/12-some-title',
    '/article/12-some-title/',
    '/page/impressum',
    '/page/impressum/',
    '/products/shoes/3',
    '/PRODUCTS/shoes/3',
    '/search?q=foo',
    '/search/?a=1&q=bar',
    '/search',
    '/anything/else?x=1',
    withHost('/', 'www.example.test'),
  ],
};

export function probesFor(file: string): Probe[] {
  const seeds = [...(aimed[file] ?? []), ...common].map((seed) =>
    typeof seed === 'string' ? { method: 'GET', target: seed, headers: {} } : seed,
  );
  const probes: Probe[] = [];
  for (const seed of seeds) for (const target of variantsOf(seed)) probes.push({ ...seed, target });
  return probes;
}

function variantsOf(probe: Probe): string[] {
  if (probe.method !== 'GET' || probe.host !== undefined || Object.keys(probe.headers).length > 0)
    return [probe.target];
  const mark = probe.target.indexOf('?');
  const pathPart = mark === -1 ? probe.target : probe.target.slice(0, mark);
  const query = mark === -1 ? '' : probe.target.slice(mark + 1);
  const variants = new Set([probe.target, `${pathPart}?${query === '' ? '' : query + '&'}utm_source=news&x=1`]);
  if (query === '') variants.add(`${pathPart}?ref=a%20b`);
  // A trailing slash after a script name would be path info, which scripts here do not take.
  if (!pathPart.endsWith('/') && !pathPart.endsWith('.php'))
    variants.add(pathPart + '/' + (query === '' ? '' : '?' + query));
  if (pathPart !== pathPart.toUpperCase() && !pathPart.includes('%'))
    variants.add(pathPart.toUpperCase() + (query === '' ? '' : '?' + query));
  return [...variants];
}

function withHost(target: string, host: string): Probe {
  return { method: 'GET', target, headers: {}, host };
}

function withHeaders(target: string, headers: Record<string, string>): Probe {
  return { method: 'GET', target, headers };
}
