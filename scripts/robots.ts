// robots.txt: crawlers are welcome everywhere but the addresses that are no public document, in
// both URL styles: the forms and the pages that confirm a deletion, the login, who is looking and
// the loan lists (test/crawlers.test.ts checks the lines against the rewrite table). The sitemap's
// address must be absolute (sitemaps.org). `*` stands for any text and a line matches the start
// of a path (RFC 9309), so /*/bearbeiten also leaves out /person/max-muster/bearbeiten.json.
import type { ApiFragment, ScriptRequest } from '../lib/page/index.ts';
import { Verbatim } from '../lib/page/index.ts';

const disallowed = [
  // /login, /login.php and /login?back=…; /logout and /logout.php.
  '/login',
  '/logout',
  // /me, /me.json, /me.php: whom the credentials identify, for the pages' script.
  '/me$',
  '/me.',
  // The loan lists and loans: /entlehnte/2, /entlehnte/2/14, /entlehnte.php, /entlehnung.php.
  '/entlehnte/',
  '/entlehnte.php',
  '/entlehnung.php',
  // The forms and confirmations in the rewritten style ...
  '/personen/neu',
  '/*/bearbeiten',
  '/*/loeschen',
  '/*/bild',
  '/*/werke/neu',
  // ... and as the scripts of the PHP site.
  '/person-neu.php',
  '/person-bearbeiten.php',
  '/person-loeschen.php',
  '/person-bild.php',
  '/werk-neu.php',
  '/werk-bearbeiten.php',
  '/werk-loeschen.php',
];

/**
 * Text whatever Accept asks: a crawler that asks for text/plain alone was answered 406, as the
 * three representations were offered. The answer is text with its own type.
 */
export const only = { format: 'html', type: 'text/plain; charset=utf-8' } as const;

export async function GET({ link }: ScriptRequest): Promise<Verbatim> {
  const text = [
    'User-agent: *',
    ...disallowed.map((path) => `Disallow: ${path}`),
    '',
    `Sitemap: ${link('/sitemap.xml')}`,
    '',
  ].join('\n');
  return new Verbatim('text/plain; charset=utf-8', text);
}

/** Its addresses in /openapi.json (lib/page/api-description.ts). */
export const api: ApiFragment = ({ notModified }) => [
  {
    path: '/robots.txt',
    // Text that reads no database, whatever the suffix.
    database: false,
    suffixes: false,
    operations: {
      get: {
        summary: 'robots.txt, naming the sitemap.',
        responses: {
          200: {
            description: 'The rules for crawlers.',
            headers: { ETag: { $ref: '#/components/headers/ETag' } },
            content: { 'text/plain': { schema: { type: 'string' } } },
          },
          304: notModified,
        },
      },
    },
  },
];
