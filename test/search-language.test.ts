// Search as a library catalogue's users expect it (docs/interface.md, Search): Primo's query
// language, German folding and stemming, compound parts, ranking, sorting, facets, did you
// mean, highlighting, deep links written for other Primo views, and the bounds on its cost.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { excerpt, fold, parseCondition, parseLines, Turns } from '../lib/search/index.ts';
import type { TestServer } from './helpers.ts';
import { backend, openTestDb, readJson, startTestServer } from './helpers.ts';

let server: TestServer;

before(async () => {
  server = await startTestServer({
    NODE_ENV: 'production',
    SEARCH_VIEW_ALIASES: '01ABC_INST:PRINT=druck,Everything=default_tab',
  });
});
after(() => server.close());

interface Treffer {
  typ: string;
  titel: string;
  url: string;
  rank: number;
  person?: { name: string };
  jahr?: number | null;
  art?: string;
  excerpt?: string | null;
}
interface Facet {
  value: string;
  count: number;
  url: string;
}
interface Result {
  total: number;
  total_is_exact: boolean;
  treffer: Treffer[];
  facets: Record<'rtype' | 'creator' | 'decade', Facet[]>;
  suggestion: { query: string[]; url: string } | null;
  replaced?: { name: string; requested: string; used: string }[];
  sortby: string;
  facet: string[];
}

const search = async (query: string): Promise<Result> => {
  const res = await fetch(`${server.origin}/search.json?${query}`);
  assert.equal(res.status, 200, `${query}: ${res.status}`);
  return readJson(res) as Promise<Result>;
};
/** A link from a representation, followed as an API client does. */
const follow = async (url: string): Promise<Result> =>
  readJson(await fetch(url, { headers: { accept: 'application/json' } })) as Promise<Result>;
const titles = (r: Result) => r.treffer.map((h) => h.titel);
const q = (term: string, field = 'any', match = 'contains') => `query=${field},${match},${encodeURIComponent(term)}`;

describe('words, folded and stemmed for German', () => {
  test('mueller, muller and Müller find each other', async () => {
    const [a, b, c] = await Promise.all([search(q('mueller')), search(q('muller')), search(q('Müller'))]);
    assert.ok(a.total > 0);
    assert.deepEqual(titles(b), titles(a));
    assert.deepEqual(titles(c), titles(a));
    assert.equal(a.treffer[0]?.titel, 'Jürgen Müller');
  });

  test('häuser finds "Das Haus am Deich"; bahnhof finds "Leere Bahnhöfe"', async () => {
    assert.ok(titles(await search(q('häuser'))).includes('Das Haus am Deich'));
    assert.ok(titles(await search(q('bahnhof'))).includes('Leere Bahnhöfe'));
  });

  test('nebel hafen finds "Hafen im Nebel": all words, in any order', async () => {
    assert.deepEqual(titles(await search(q('nebel hafen'))), ['Hafen im Nebel']);
  });

  test('a stop word beside another word must be there too, in any field, and counts nothing towards the rank', async () => {
    const nebel = await search(q('nebel'));
    assert.ok(titles(nebel).includes('Hafen im Nebel') && titles(nebel).includes('Morgens am Fluss'));
    // "im" is in the title of one, "der" and "die" in the description of the other.
    assert.deepEqual(titles(await search(q('nebel im'))), ['Hafen im Nebel']);
    assert.deepEqual(titles(await search(q('die nebel der'))), ['Morgens am Fluss']);
    assert.deepEqual(titles(await search(q('im nebel', 'desc'))), []);
    assert.deepEqual(
      titles(await search(q('nebel NOT im'))),
      titles(nebel).filter((t) => t !== 'Hafen im Nebel'),
    );
    const ranks = new Map(nebel.treffer.map((h) => [h.titel, h.rank]));
    for (const hit of (await search(q('im Nebel'))).treffer) assert.equal(hit.rank, ranks.get(hit.titel));
    // A stop word is no compound: "nic" finds "Kraniche", not "nicht"; a wildcard finds one.
    assert.deepEqual(titles(await search(q('nic', 'title'))), ['Das Jahr der Kraniche']);
    assert.ok(titles(await search(q('nich*', 'title'))).includes('Der Sommer, in dem es nicht regnete'));
    assert.ok(titles(await search(q('da*', 'title'))).includes('Das Haus am Deich'));
  });

  test('a compound part finds its compounds, ranked below the whole word', async () => {
    const r = await search(q('schicht', 'title'));
    const names = titles(r);
    assert.ok(names.includes('Nachtschicht'));
    assert.ok(names.indexOf('Schicht um Schicht') < names.indexOf('Nachtschicht'));
    const [whole, part] = [
      r.treffer.find((h) => h.titel === 'Schicht um Schicht'),
      r.treffer.find((h) => h.titel === 'Nachtschicht'),
    ];
    assert.ok((whole?.rank ?? 0) > (part?.rank ?? 0));
  });

  test('descriptions, types and years are searched: desc, rtype, cdate and any', async () => {
    assert.deepEqual(titles(await search(q('leinwand', 'desc'))), ['Stillleben mit Zitronen']);
    const romane = await search(q('roman', 'rtype'));
    assert.ok(romane.total >= 3 && romane.treffer.every((h) => h.art === 'Roman'));
    assert.ok((await search(q('1988', 'cdate'))).treffer.every((h) => h.jahr === 1988));
    assert.ok(titles(await search(q('leinwand'))).includes('Stillleben mit Zitronen'));
  });

  test('the folding in JavaScript is the folding of the index', async () => {
    const samples = [
      'Jürgen MÜLLER',
      'Mueller',
      'Straße',
      'ÆSOP Œuvre',
      'Quelle',
      'Łódź–Kraków',
      "O'Brien",
      'Ångström 1988',
      'façade',
      'Dvořák',
    ];
    for (const text of samples) {
      const [row] = await server.db.query<{ f: string }>('SELECT search_fold($1) AS f', [text]);
      assert.equal(fold(text), row?.f, text);
    }
  });
});

describe("Primo's query language", () => {
  test('a quoted phrase must appear as a phrase', async () => {
    assert.deepEqual(titles(await search(q('"im nebel"', 'title'))), ['Hafen im Nebel']);
    assert.equal((await search(q('"nebel im"', 'title'))).total, 0);
  });

  test('OR and NOT in capitals, as in the simple search', async () => {
    const either = titles(await search(q('nebel OR deich', 'title')));
    assert.deepEqual([...either].sort(), ['Das Haus am Deich', 'Hafen im Nebel']);
    const not = titles(await search(q('schicht NOT nacht', 'title')));
    assert.ok(not.includes('Schicht um Schicht') && !not.includes('Nachtschicht'));
    // In small letters they are words like any other.
    assert.equal((await search(q('nebel or deich', 'title'))).total, 0);
  });

  test('* and ? are wildcards inside and at the end of a word', async () => {
    assert.ok(titles(await search(q('nacht*', 'title'))).includes('Nachtschicht'));
    assert.ok(titles(await search(q('mü?ler', 'creator'))).includes('Jürgen Müller'));
    assert.ok(titles(await search(q('schi*t', 'title'))).includes('Schicht um Schicht'));
  });

  test('exact is the phrase in order; the whole field ranks first', async () => {
    const r = await search(q('nachtschicht', 'title', 'exact'));
    assert.deepEqual(titles(r), ['Nachtschicht']);
    assert.equal((await search(q('deich am haus', 'title', 'exact'))).total, 0);
    // Under any, a type or year that is the whole phrase has its bonus, as under rtype and cdate.
    const [typed] = await server.db.query<{ art: string; jahr: number }>(
      `SELECT art, jahr FROM werk WHERE art <> '' AND jahr IS NOT NULL AND strpos(suche_titel || ' ' || urheber, search_fold(art)) = 0 AND strpos(suche_titel, jahr::text) = 0 ORDER BY id LIMIT 1`,
    );
    assert.ok(typed);
    for (const [field, term] of [
      ['rtype', typed.art],
      ['cdate', String(typed.jahr)],
    ] as const) {
      const own = await search(q(term, field, 'exact'));
      const anywhere = await search(q(term, 'any', 'exact'));
      assert.ok(own.treffer[0] && own.treffer[0].rank >= 23, `${field} ${term}`);
      const first = anywhere.treffer.find((h) => h.url === own.treffer[0]?.url);
      assert.equal(first?.rank, own.treffer[0]?.rank, `any ${term}`);
    }
  });

  test('begins_with: the field starts with the term', async () => {
    assert.deepEqual(titles(await search(q('das haus', 'title', 'begins_with'))), ['Das Haus am Deich']);
    assert.ok(titles(await search(q('nacht', 'title', 'begins_with'))).includes('Nachtschicht'));
  });

  test('begins_with on desc does not find the type of a work without a description, however many words the term begins', async () => {
    const ids = await server.db.query<{ id: number }>(
      `INSERT INTO werk (person_id, titel, art, beschreibung) SELECT 1, 'Anfangprobe', 'Romanze', '—' UNION ALL
       SELECT 1, 'Anfangprobe', 'Romanze', '' UNION ALL
       SELECT 1, 'Anfangprobe ' || g, 'Skizze', '' FROM generate_series(1, 3) AS g RETURNING id`,
    );
    // More words of the index begin with "rom" than a search takes: the text alone decides.
    await server.db
      .query(
        `INSERT INTO werk (person_id, titel, beschreibung) SELECT 1, 'Wortvorrat', string_agg('rom' || chr(97 + g / 26) || chr(97 + g % 26), ' ') FROM generate_series(0, 69) AS g RETURNING id`,
      )
      .then((rows) => ids.push(...(rows as { id: number }[])));
    try {
      for (const term of ['rom', 'romanze']) {
        const r = await search(`${q(term, 'desc', 'begins_with')}&${q('anfangprobe', 'title')}`);
        assert.deepEqual(r.treffer, [], term);
      }
      assert.equal((await search(`${q('romanze', 'rtype', 'begins_with')}&${q('anfangprobe', 'title')}`)).total, 2);
    } finally {
      await server.db.query('DELETE FROM werk WHERE id = ANY($1::int[])', [ids.map((r) => r.id)]);
    }
  });

  test('a fourth part AND, OR or NOT joins a line with the next', async () => {
    const single = await search('query=any,contains,nebel,AND');
    assert.deepEqual(titles(single), titles(await search(q('nebel'))));
    const or = titles(await search(`query=title,contains,nebel,OR&${q('deich', 'title')}`));
    assert.deepEqual([...or].sort(), ['Das Haus am Deich', 'Hafen im Nebel']);
    const not = titles(await search(`query=title,contains,schicht,NOT&${q('nacht', 'title')}`));
    assert.ok(not.includes('Schicht um Schicht') && !not.includes('Nachtschicht'));
    // The canonical URL keeps an operator between lines only.
    const res = await fetch(`${server.origin}/search.json?query=title,contains,nebel,OR&${q('deich', 'title')}`);
    assert.match(
      ((await readJson(res)) as { url: string }).url,
      /query=title,contains,nebel,OR&query=title,contains,deich&/,
    );
  });

  test('the parser reads the lines as Primo writes them', () => {
    assert.deepEqual(parseCondition('any,contains,a,b,OR'), {
      field: 'any',
      match: 'contains',
      term: 'a,b',
      operator: 'OR',
    });
    const [line] = parseLines([parseCondition('any,contains,a b OR c NOT "d e"')]);
    assert.deepEqual(
      line?.clauses.map((clause) => clause.map((a) => `${a.negated ? '-' : ''}${a.words.join('_')}`)),
      [['a'], ['b', 'c'], ['-d_e']],
    );
  });
});

describe('ranking, sorting and facets', () => {
  test('title matches above creator matches above description matches; ties by id, so paging is stable', async () => {
    const r = await search(q('nebel'));
    assert.deepEqual(titles(r).slice(0, 1), ['Hafen im Nebel']);
    const ranks = r.treffer.map((h) => h.rank);
    assert.deepEqual(
      ranks,
      [...ranks].sort((a, b) => b - a),
    );
  });

  test('sortby title, author, date_d and date_a', async () => {
    const byTitle = titles(await search(`${q('müller', 'creator')}&sortby=title&search_scope=werke`));
    assert.deepEqual(
      byTitle,
      [...byTitle].sort((a, b) => fold(a).localeCompare(fold(b), 'en', { sensitivity: 'base' }) || 0),
    );
    const newest = (await search(`${q('müller', 'creator')}&sortby=date_d&search_scope=werke`)).treffer.map(
      (h) => h.jahr as number,
    );
    assert.deepEqual(
      newest,
      [...newest].sort((a, b) => b - a),
    );
    const oldest = (await search(`${q('müller', 'creator')}&sortby=date_a&search_scope=werke`)).treffer.map(
      (h) => h.jahr as number,
    );
    assert.deepEqual(
      oldest,
      [...oldest].sort((a, b) => a - b),
    );
    // By the creator's last name: every work's creator, folded, in order.
    const byAuthor = await search(`${q('schicht')}&sortby=author&search_scope=werke`);
    assert.equal(byAuthor.sortby, 'author');
    const lastNames = byAuthor.treffer.map((h) => fold((h.person?.name ?? '').split(' ').at(-1) ?? ''));
    assert.ok(new Set(lastNames).size > 1, 'works of more than one creator');
    assert.deepEqual(lastNames, [...lastNames].sort());
  });

  test('facets count the hits by type, creator and decade, and their links apply them', async () => {
    const r = await search(q('müller'));
    const total = r.total;
    const persons = r.treffer.filter((h) => h.typ === 'person').length;
    assert.equal(
      r.facets.rtype.reduce((n, f) => n + f.count, 0),
      total - persons,
    );
    const [first] = r.facets.rtype;
    assert.ok(first);
    const applied = await follow(first.url);
    assert.equal(applied.total, first.count);
    assert.ok(applied.treffer.every((h) => h.art === first.value));
    assert.deepEqual(applied.facet, [`rtype,include,${first.value}`]);
    const excluded = await search(`${q('müller')}&facet=${encodeURIComponent(`rtype,exclude,${first.value}`)}`);
    assert.equal(excluded.total, total - first.count);
    const decade = r.facets.decade[0];
    assert.ok(decade && /^\d{4}$/.test(decade.value));
    const inDecade = await follow(decade.url);
    assert.ok(
      inDecade.treffer.every(
        (h) => (h.jahr as number) >= Number(decade.value) && (h.jahr as number) < Number(decade.value) + 10,
      ),
    );
    const creator = r.facets.creator.find((f) => f.value === 'Jürgen Müller');
    assert.ok(creator);
    const his = await follow(creator.url);
    assert.equal(his.total, creator.count);
  });

  test('a year before 1 is in the decade of its first year below it: -5 in -10, -10 in -10, 5 in 0', async () => {
    const ids = await server.db.query<{ id: number }>(
      `INSERT INTO werk (person_id, titel, jahr) VALUES (1, 'Dekadenprobe', -5), (1, 'Dekadenprobe', -10), (1, 'Dekadenprobe', 5), (1, 'Dekadenprobe', -11) RETURNING id`,
    );
    try {
      const r = await search(q('dekadenprobe', 'title'));
      assert.deepEqual(
        r.facets.decade.map((f) => [f.value, f.count]),
        [
          ['0', 1],
          ['-10', 2],
          ['-20', 1],
        ],
      );
      const minusTen = await follow(r.facets.decade.find((f) => f.value === '-10')?.url ?? '');
      assert.deepEqual(minusTen.treffer.map((h) => h.jahr).sort(), [-10, -5]);
      const zero = await follow(r.facets.decade.find((f) => f.value === '0')?.url ?? '');
      assert.deepEqual(
        zero.treffer.map((h) => h.jahr),
        [5],
      );
      // cdate takes a year before 1 with its sign.
      const years = async (query: string) =>
        (await search(`${query}&${q('dekadenprobe', 'title')}`)).treffer.map((h) => h.jahr);
      assert.deepEqual(await years(q('-5', 'cdate')), [-5]);
      assert.deepEqual(await years(q('"-5"', 'cdate')), [-5]);
      assert.deepEqual(await years(q('5', 'cdate')), [5]);
      assert.deepEqual(await years(q('-10', 'cdate', 'exact')), [-10]);
      assert.deepEqual(
        (await years(q('-11 OR -10', 'cdate'))).sort((a, b) => (a as number) - (b as number)),
        [-11, -10],
      );
    } finally {
      await server.db.query('DELETE FROM werk WHERE id = ANY($1::int[])', [ids.map((r) => r.id)]);
    }
  });

  test('a facet already applied links to the list as it is; more than 10 facets are 400; a creator of a long name has a facet link that works', async () => {
    const applied = await search(`${q('müller')}&facet=${encodeURIComponent('creator,include,Jürgen Müller')}`);
    const own = applied.facets.creator.find((f) => f.value === 'Jürgen Müller');
    assert.ok(own);
    assert.equal(own.url.match(/facet=/g)?.length, 1);
    // A facet's link keeps the order, the facets applied and the language, and adds its own after those.
    const kept = await search(
      `${q('müller')}&sortby=date_a&facet=${encodeURIComponent('rtype,exclude,Skizze')}&lang=de_DE`,
    );
    const type = kept.facets.rtype[0];
    assert.ok(type);
    assert.equal(
      new URL(type.url).search,
      `?${q('müller')}&tab=default_tab&search_scope=default_scope&vid=portfolio&sortby=date_a&facet=rtype,exclude,Skizze&facet=rtype,include,${encodeURIComponent(type.value)}&lang=de_DE`,
    );
    const narrowed = await follow(type.url);
    assert.deepEqual(
      [narrowed.sortby, narrowed.facet],
      ['date_a', ['rtype,exclude,Skizze', `rtype,include,${type.value}`]],
    );
    const eleven = Array.from({ length: 11 }, (_, i) => `facet=rtype,exclude,Typ${i}`).join('&');
    const refused = await fetch(`${server.origin}/search.json?${q('müller')}&${eleven}`);
    assert.equal(refused.status, 400);
    assert.match(((await readJson(refused)) as { detail: string }).detail, /facet may be given at most 10 times/);
    const [person] = await server.db.query<{ id: number }>(
      `INSERT INTO person (slug, vorname, nachname, username, image) VALUES ('langnamprobe', $1, 'Langnamprobe', 'langnamprobe', '/img/person.svg') RETURNING id`,
      ['Sehr'.repeat(50)],
    );
    try {
      await server.db.query(`INSERT INTO werk (person_id, titel) VALUES ($1, 'Langnamwerk')`, [person?.id]);
      const r = await search(q('langnamwerk', 'title'));
      const creator = r.facets.creator[0];
      assert.equal(creator?.value, `${'Sehr'.repeat(50)} Langnamprobe`);
      assert.deepEqual(titles(await follow(creator?.url ?? '')), ['Langnamwerk']);
    } finally {
      await server.db.query('DELETE FROM person WHERE id = $1', [person?.id]);
    }
  });

  test('the HTML list has the facets and the orders as links', async () => {
    const html = await (await fetch(`${server.origin}/search?${q('müller')}`)).text();
    assert.match(html, /<aside class="facets" aria-label="Refine">/);
    assert.match(
      html,
      /<a href="search\?query=any,contains,m%C3%BCller&amp;tab=default_tab&amp;search_scope=default_scope&amp;vid=portfolio" aria-current="true">relevance<\/a>/,
    );
    assert.match(
      html,
      /<a href="search\?query=any,contains,m%C3%BCller&amp;tab=default_tab&amp;search_scope=default_scope&amp;vid=portfolio&amp;sortby=date_d">newest<\/a>/,
    );
    assert.match(
      html,
      /<a href="search\?query=any,contains,m%C3%BCller&amp;tab=default_tab&amp;search_scope=default_scope&amp;vid=portfolio&amp;facet=rtype,include,[^"]+">/,
    );
  });
});

describe('did you mean, highlighting, excerpts', () => {
  test('a search without hits offers the closest spelling the index has, as a link that finds something', async () => {
    const r = await search(q('muellr'));
    assert.equal(r.total, 0);
    assert.deepEqual(r.suggestion?.query, ['any,contains,müller']);
    const followed = await follow(r.suggestion?.url ?? '');
    assert.ok(followed.total > 0);
    const html = await (await fetch(`${server.origin}/search?${q('muellr')}`)).text();
    assert.match(html, /Did you mean <a href="search\?query=any,contains,m%C3%BCller[^"]*">müller<\/a>\?/);
    assert.equal((await search(q('müller'))).suggestion, null);
    // Nothing close: no suggestion, not the same search offered back.
    assert.equal((await search(q('qqqqzzzzxx'))).suggestion, null);
    assert.doesNotMatch(await (await fetch(`${server.origin}/search?${q('qqqqzzzzxx')}`)).text(), /Did you mean/);
  });

  test('the suggestion keeps the operators that join the lines, in JSON and XML', async () => {
    const query = `${q('muellr')},NOT&${q('nachtschicht')}`;
    const r = await search(query);
    assert.deepEqual(r.suggestion?.query, ['any,contains,müller,NOT', 'any,contains,nachtschicht']);
    const xml = await (await fetch(`${server.origin}/search.xml?${query}`)).text();
    assert.match(
      xml,
      /<suggestion ref="[^"]+">\s*<query field="any" match="contains" operator="NOT">müller<\/query>\s*<query field="any" match="contains">nachtschicht<\/query>\s*<\/suggestion>/,
    );
  });

  test('a term that ends in ,OR keeps it as its own in the canonical URL', async () => {
    const res = await fetch(`${server.origin}/search?term=${encodeURIComponent('nacht,OR')}&field=title`, {
      redirect: 'manual',
    });
    assert.equal(res.status, 303);
    const location = res.headers.get('location') ?? '';
    assert.match(location, /query=title,contains,nacht,OR,AND&/);
    const followed = await fetch(new URL(location, server.origin), { headers: { accept: 'application/json' } });
    assert.deepEqual(((await readJson(followed)) as { query: string[] }).query, ['title,contains,nacht,OR,AND']);
  });

  test('the HTML list marks the matched words, escaped, and shows the description around the first match', async () => {
    const [row] = await server.db.query<{ id: number }>(
      `INSERT INTO werk (person_id, titel, beschreibung) VALUES (1, $1, $2) RETURNING id`,
      [
        '<b>Glimmerstudie</b> & "Co"',
        `${'Vorrede ohne Treffer. '.repeat(12)}Hier beginnt die Glimmerstudien-Reihe <script>x</script> mit viel Licht.`,
      ],
    );
    try {
      const html = await (await fetch(`${server.origin}/search?${q('glimmerstudie')}`)).text();
      assert.match(html, /<a href="werk\/\d+">&lt;b&gt;<mark>Glimmerstudie<\/mark>&lt;\/b&gt; &amp; &#34;Co&#34;<\/a>/);
      assert.match(html, /<p class="excerpt">…[^<]*<mark>Glimmerstudien<\/mark>-Reihe &lt;script&gt;x&lt;\/script&gt;/);
      assert.doesNotMatch(html, /<script>x/);
      const json = await search(q('glimmerstudie'));
      const hit = json.treffer.find((h) => h.url.endsWith(`/werk/${row?.id}`));
      assert.match(hit?.excerpt ?? '', /^….*Glimmerstudien-Reihe/);
    } finally {
      await server.db.query('DELETE FROM werk WHERE id = $1', [row?.id]);
    }
  });
});

describe('excerpts and marks', () => {
  test('a description that fits is shown whole; a match after a long run without spaces stays in the excerpt', async () => {
    const ids = await server.db.query<{ id: number }>(
      `INSERT INTO werk (person_id, titel, beschreibung) VALUES (1, 'Auszugprobe eins', $1), (1, 'Auszugprobe zwei', $2) RETURNING id`,
      [
        `${'Kurzer Satz ohne Treffer, '.repeat(3)}dann die Auszugprobe.`,
        `${'Bindestrich-'.repeat(20)}Wort und dann die Auszugprobe am Ende.`,
      ],
    );
    try {
      const r = await search(q('auszugprobe', 'desc'));
      const excerpt = (n: number) => r.treffer.find((h) => h.url.endsWith(`/werk/${ids[n]?.id}`))?.excerpt ?? '';
      assert.equal(excerpt(0), `${'Kurzer Satz ohne Treffer, '.repeat(3)}dann die Auszugprobe.`);
      assert.match(excerpt(1), /^….*Auszugprobe am Ende\.$/);
      const html = await (await fetch(`${server.origin}/search?${q('auszugprobe', 'desc')}`)).text();
      assert.equal(html.match(/<p class="excerpt">[^\n]*?<mark>Auszugprobe<\/mark>/g)?.length, 2);
    } finally {
      await server.db.query('DELETE FROM werk WHERE id = ANY($1::int[])', [ids.map((r) => r.id)]);
    }
  });

  test('an excerpt cut among emoji keeps each whole', () => {
    for (const [before, after] of [
      [60, 60],
      [61, 59],
      [59, 61],
    ] as const) {
      const written = `${'😀'.repeat(before)}probewort${'😀'.repeat(after)}`;
      const text =
        excerpt(written, ['probewort'], { marked: true })
          ?.map((p) => p.text)
          .join('') ?? '';
      assert.deepEqual(excerpt(written, ['probewort'], { marked: false }), [{ text, mark: false }]);
      assert.match(text, /probewort/);
      assert.doesNotMatch(
        text,
        /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/,
        `${before} ${after}`,
      );
    }
  });

  test('stop words are not marked, nor words they are inside', async () => {
    const html = await (await fetch(`${server.origin}/search?${q('der OR die')}`)).text();
    assert.ok((await search(q('der OR die'))).total > 10);
    assert.deepEqual(html.match(/<mark>[^<]*<\/mark>/g) ?? [], []);
    const nebel = await (await fetch(`${server.origin}/search?${q('nebel der')}`)).text();
    assert.match(nebel, /<mark>Nebel<\/mark>/);
    assert.doesNotMatch(nebel, /<mark>der<\/mark>/i);
  });
});

describe("deep links written for Primo's views", () => {
  test("another installation's vid and tab answer with ours, and the page says which it used", async () => {
    const r = await search(
      `${q('nebel')}&vid=01XYZ_INST:MAIN&tab=Everything&search_scope=MyInst_and_CI&lang=de&mode=advanced&pcAvailability=true&displayMode=full`,
    );
    assert.ok(r.total > 0);
    assert.deepEqual(r.replaced, [
      { name: 'tab', requested: 'Everything', used: 'default_tab' },
      { name: 'search_scope', requested: 'MyInst_and_CI', used: 'default_scope' },
      { name: 'vid', requested: '01XYZ_INST:MAIN', used: 'portfolio' },
    ]);
    const html = await (await fetch(`${server.origin}/search?${q('nebel')}&vid=01XYZ_INST:MAIN`)).text();
    assert.match(html, /written for vid “01XYZ_INST:MAIN” of another catalogue; shown with portfolio/);
    // lang is kept in the links; the other Primo parameters change nothing.
    const res = await fetch(`${server.origin}/search.json?${q('nebel')}&lang=de&mode=advanced`);
    assert.match(((await readJson(res)) as { url: string }).url, /&lang=de$/);
  });

  test('a long view name is cut before a character outside the BMP, not between its halves', async () => {
    const r = await search(`${q('nebel')}&vid=${'x'.repeat(99)}${encodeURIComponent('😀')}`);
    assert.deepEqual(
      r.replaced?.map((x) => x.requested),
      [`${'x'.repeat(99)}…`],
    );
    // A control character of the request is shown as U+FFFD.
    const controlled = await search(`${q('nebel')}&vid=a%01b`);
    assert.deepEqual(
      controlled.replaced?.map((x) => x.requested),
      ['a\uFFFDb'],
    );
  });

  test('SEARCH_VIEW_ALIASES maps another view to one of ours', async () => {
    const res = await fetch(`${server.origin}/search?${q('nebel')}&vid=01ABC_INST:PRINT`);
    const html = await res.text();
    assert.match(html, /<link rel="stylesheet" href="css\/druck\.css">/);
    assert.match(html, /shown with druck/);
  });
});

describe('bounded cost', () => {
  test('old links: a one-word substring of three letters or more still finds its words, ranked lower', async () => {
    const r = await search(q('üll', 'creator'));
    assert.ok(titles(r).includes('Jürgen Müller'));
    assert.ok(r.treffer.every((h) => h.rank < 6));
    // Short words and stop words are words too: a link that found something still answers 200
    // (search() asserts the status) and finds them.
    for (const term of ['er', 'der die das']) await search(q(term));
    assert.ok((await search(q('der'))).total > 0);
  });

  test('a search checked on descriptions reads those of 2,000 rows of a kind at most, and its 400 is kept: asked again, it costs no search', async () => {
    const small = await startTestServer({ NODE_ENV: 'production' });
    try {
      // 3,000 works with the word in their description, none that begins with it: every one needs its description read.
      await small.db.query(
        `INSERT INTO werk (person_id, titel, art, beschreibung) SELECT 1, 'Kostenstudie ' || g, 'Skizze', 'Nebel über dem Hafen' FROM generate_series(1, 3000) AS g`,
      );
      const searches = async () =>
        Number(/^portfolio_searches_total (\d+)$/m.exec(await (await fetch(`${small.origin}/metrics`)).text())?.[1]);
      const path = `/search.json?${q('hafen', 'desc', 'begins_with')}`;
      const first = await fetch(small.origin + path);
      assert.equal(first.status, 400, await first.clone().text());
      assert.match(
        ((await readJson(first)) as { detail: string }).detail,
        /checked the first 2000 rows that have its words/,
      );
      const made = await searches();
      for (let i = 0; i < 3; i++) assert.equal((await fetch(small.origin + path)).status, 400);
      assert.equal(await searches(), made, 'the refusal was kept');
    } finally {
      await small.close();
    }
  });

  test('kept results are bounded by bytes (KEPT_MAX_MB): a stream of other searches pushes the first out', async () => {
    const small = await startTestServer({ NODE_ENV: 'production', KEPT_MAX_MB: '1' });
    try {
      const searches = async () =>
        Number(/^portfolio_searches_total (\d+)$/m.exec(await (await fetch(`${small.origin}/metrics`)).text())?.[1]);
      const at = (offset: number) => `${small.origin}/search.json?${q('nebel')}&offset=${offset}`;
      // 400 searches of a few KB each: more than a third of 1 MB, far fewer than a count of 2,000.
      for (let offset = 0; offset < 400; offset++) assert.equal((await fetch(at(offset))).status, 200);
      const made = await searches();
      assert.equal((await fetch(at(399))).status, 200);
      assert.equal(await searches(), made, 'the last search is still kept');
      assert.equal((await fetch(at(0))).status, 200);
      assert.equal(await searches(), made + 1, 'the first was pushed out, and made anew');
    } finally {
      await small.close();
    }
  });

  test('more hits than a search takes: the total and the counts say "at least", and paging stops at the cap', async () => {
    const small = await startTestServer({ NODE_ENV: 'production', SEARCH_MAX_HITS: '20' });
    try {
      await small.db.query(
        `INSERT INTO werk (person_id, titel, art) SELECT 1, 'Kappungsstudie ' || g, 'Skizze' FROM generate_series(1, 30) AS g`,
      );
      const res = await fetch(`${small.origin}/search.json?${q('kappungsstudie')}`);
      const r = (await readJson(res)) as Result;
      assert.equal(r.total, 20);
      assert.equal(r.total_is_exact, false);
      // Counted, ranked and paged: the 20 taken, not the one more that told there were more.
      assert.deepEqual(
        r.facets.rtype.map((f) => [f.value, f.count]),
        [['Skizze', 20]],
      );
      const last = (await readJson(
        await fetch(`${small.origin}/search.json?${q('kappungsstudie')}&offset=10`),
      )) as Result;
      assert.equal(last.treffer.length, 10);
      assert.equal(new Set([...r.treffer, ...last.treffer].map((h) => h.url)).size, 20);
      const html = await (await fetch(`${small.origin}/search?${q('kappungsstudie')}`)).text();
      assert.match(html, /At least 20 results/);
      assert.equal((await fetch(`${small.origin}/search.json?${q('kappungsstudie')}&offset=20`)).status, 400);
      // A search whose hits were all taken pages past its end as any list does: an empty page.
      const past = await fetch(`${small.origin}/search.json?${q('nebel')}&offset=5000`);
      assert.equal(past.status, 200);
      assert.deepEqual(((await readJson(past)) as Result).treffer, []);
      const pastHtml = await (await fetch(`${small.origin}/search?${q('nebel')}&offset=5000`)).text();
      assert.match(pastHtml, /<span>past the last of \d+<\/span>/);
    } finally {
      await small.close();
    }
  });

  test('searches beyond their share of connections wait for a turn, up to SEARCH_WAIT_MS; then they are 503 with Retry-After', {
    skip: backend !== 'postgres' && 'PGlite has one connection and no time-outs',
  }, async () => {
    const { db, drop } = await openTestDb();
    try {
      // One at a time, 400 ms each, a turn awaited 600 ms at most: the second gets one, the rest do not.
      const turns = new Turns({ concurrency: 1, waitMs: 600 });
      const slow = () => turns.within(() => db.query('SELECT pg_sleep(0.4)', [], { timeoutMs: 5000 }));
      const outcomes = await Promise.allSettled(Array.from({ length: 6 }, slow));
      const refused = outcomes.filter((o) => o.status === 'rejected');
      assert.equal(outcomes.filter((o) => o.status === 'fulfilled').length, 2);
      assert.equal(refused.length, 4);
      for (const r of refused) {
        const err = (r as PromiseRejectedResult).reason as {
          status: number;
          options: { headers: Record<string, string> };
        };
        assert.equal(err.status, 503);
        assert.equal(err.options.headers['Retry-After'], '2');
      }
    } finally {
      await drop();
    }
  });

  test('a search that finishes hands its place to the one waiting first: none that comes meanwhile runs beside it', async () => {
    const turns = new Turns({ concurrency: 1, waitMs: 2000 });
    let inside = 0;
    let most = 0;
    const order: string[] = [];
    const task = (name: string) => async () => {
      inside++;
      most = Math.max(most, inside);
      order.push(name);
      await new Promise((resolve) => setTimeout(resolve, 20));
      inside--;
    };
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const first = turns.within(() => gate);
    const second = turns.within(task('second'));
    await Promise.resolve();
    // A search that arrives after the first has finished its work and before its place is free:
    // gate's own continuation runs before the one within awaits, so third asks in between.
    let third: Promise<void> | undefined;
    void gate.then(() => {
      third = turns.within(task('third'));
    });
    release();
    await Promise.all([first, second]);
    await third;
    assert.equal(most, 1);
    assert.deepEqual(order, ['second', 'third']);
  });

  test('a search statement that runs into its time-out is 503, not 500', {
    skip: backend !== 'postgres' && 'PGlite does not enforce time-outs',
  }, async () => {
    const { db, drop } = await openTestDb();
    try {
      const turns = new Turns({ concurrency: 2, waitMs: 1000 });
      await assert.rejects(
        turns.within(() => db.query('SELECT pg_sleep(2)', [], { timeoutMs: 100 })),
        (err: { status: number; message: string }) => {
          assert.equal(err.status, 503);
          assert.match(err.message, /took too long/);
          return true;
        },
      );
      // The connection is fine afterwards.
      assert.deepEqual(await db.query('SELECT 1 AS one'), [{ one: 1 }]);
    } finally {
      await drop();
    }
  });
});
