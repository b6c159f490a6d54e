// robots.txt: crawlers are welcome everywhere but the forms, the login and the loan lists, and
// are pointed at the sitemap, whose address must be absolute (sitemaps.org).
import type { ScriptRequest } from '../lib/page/index.ts';
import { Streamed } from '../lib/page/index.ts';

export async function GET({ link }: ScriptRequest): Promise<Streamed> {
  const text = [
    'User-agent: *',
    'Disallow: /login',
    'Disallow: /logout',
    'Disallow: /entlehnte/',
    'Disallow: /personen/neu',
    'Disallow: /*/bearbeiten',
    'Disallow: /*/werke/neu',
    '',
    `Sitemap: ${link('/sitemap.xml')}`,
    '',
  ].join('\n');
  return new Streamed('text/plain; charset=utf-8', async function* () {
    yield text;
  });
}
