// The data generator (bin/lib/fill-database.ts, bin/generate.ts): the same seed gives the same rows on
// PGlite and PostgreSQL, a filled database is refused without --replace, and the search
// indexes and id sequences are as before the bulk load.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { DatabaseNotEmptyError, generateData } from '../../bin/lib/fill-database.ts';
import { migrate } from '../../lib/db/index.ts';
import type { TestDb } from '../helpers.ts';
import { backend, openTestDb, root } from '../helpers.ts';

const run = promisify(execFile);
const personDigest = `SELECT md5(string_agg(concat_ws('|', id, slug, vorname, nachname, username, image), ',' ORDER BY id)) AS digest FROM person`;
const werkDigest = `SELECT md5(string_agg(concat_ws('|', id, person_id, titel, jahr, art, beschreibung), ',' ORDER BY id)) AS digest FROM werk`;
const indexNames = `SELECT indexname FROM pg_indexes WHERE tablename IN ('person', 'werk') ORDER BY indexname`;

describe('data generator', () => {
  let t: TestDb;
  let indexesBefore: unknown[];
  const digests = async () => [(await t.db.query(personDigest))[0], (await t.db.query(werkDigest))[0]];

  before(async () => {
    t = await openTestDb();
    await migrate(t.db, path.join(root, 'sql'));
    indexesBefore = await t.db.query(indexNames);
  });
  after(() => t.drop());

  test('fills persons and works from the seed, the same rows on every backend', async () => {
    const phases = new Set<string>();
    const summary = await generateData(t.db, {
      persons: 30,
      works: 4,
      seed: 7,
      replace: false,
      onProgress: (p) => phases.add(p.phase),
    });
    assert.deepEqual([summary.persons, summary.works], [30, 120]);
    assert.deepEqual([...phases], ['persons', 'works', 'indexes', 'analyze']);
    assert.deepEqual(
      await t.db.query(
        'SELECT id, slug, vorname, nachname, username, image FROM person WHERE id IN (1, 30) ORDER BY id',
      ),
      [
        {
          id: 1,
          slug: 'ben-wagner-1',
          vorname: 'Ben',
          nachname: 'Wagner',
          username: 'bwagner1',
          image: '/img/person.svg',
        },
        {
          id: 30,
          slug: 'doerte-weber-30',
          vorname: 'Dörte',
          nachname: 'Weber',
          username: 'dweber30',
          image: '/img/person.svg',
        },
      ],
    );
    assert.deepEqual(
      await t.db.query(
        'SELECT id, person_id, titel, jahr, art, beschreibung FROM werk WHERE id IN (1, 120) ORDER BY id',
      ),
      [
        {
          id: 1,
          person_id: 1,
          titel: 'Wache Lichtung im Regen',
          jahr: 2015,
          art: 'Aquarell',
          beschreibung: 'Aquarell aus der Reihe „Wache Lichtung im Regen“, entstanden in Husum; große Arbeit.',
        },
        {
          id: 120,
          person_id: 30,
          titel: 'Der leise Sommer',
          jahr: 1973,
          art: 'Radierung',
          beschreibung: 'Radierung aus der Reihe „Der leise Sommer“, entstanden in Köln; kleine Arbeit.',
        },
      ],
    );
    assert.deepEqual(await digests(), [
      { digest: '747737d0b30e18d2ee0beffd6ecb7cee' },
      { digest: 'a99ec9ba5229611d1783b3c95428132f' },
    ]);
  });

  test('builds the dropped search and order indexes again', async () => {
    assert.deepEqual(await t.db.query(indexNames), indexesBefore);
  });

  test('leaves the id sequences after the last generated id', async () => {
    const [person] = await t.db.query<{ id: number }>(
      `INSERT INTO person (slug, vorname, nachname, username, image) VALUES ('neu-da', 'Neu', 'Da', 'neuda', '/img/person.svg') RETURNING id`,
    );
    const [werk] = await t.db.query<{ id: number }>(
      `INSERT INTO werk (person_id, titel) VALUES ($1, 'Neues Werk') RETURNING id`,
      [person?.id],
    );
    assert.deepEqual([person?.id, werk?.id], [31, 121]);
  });

  test('refuses a database that has persons unless replace is given, and changes nothing', async () => {
    await assert.rejects(generateData(t.db, { persons: 5, works: 1, seed: 7, replace: false }), (err: Error) => {
      assert.ok(err instanceof DatabaseNotEmptyError);
      assert.match(err.message, /run again with --replace/);
      return true;
    });
    assert.deepEqual(await t.db.query('SELECT count(*)::int AS n FROM person'), [{ n: 31 }]);
  });

  test('with replace, gives exactly the rows of the first run again', async () => {
    await generateData(t.db, { persons: 30, works: 4, seed: 7, replace: true });
    assert.deepEqual(await digests(), [
      { digest: '747737d0b30e18d2ee0beffd6ecb7cee' },
      { digest: 'a99ec9ba5229611d1783b3c95428132f' },
    ]);
    await generateData(t.db, { persons: 30, works: 4, seed: 8, replace: true });
    assert.notDeepEqual(await digests(), [
      { digest: '747737d0b30e18d2ee0beffd6ecb7cee' },
      { digest: 'a99ec9ba5229611d1783b3c95428132f' },
    ]);
  });
});

describe('npm run generate', () => {
  let t: TestDb | null = null;
  let dataDir: string;
  let env: NodeJS.ProcessEnv;

  before(async () => {
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'portfolio-generate-'));
    const { DATABASE_URL: _unused, ...rest } = process.env;
    if (backend === 'postgres') t = await openTestDb();
    env = t?.url ? { ...rest, DATABASE_URL: t.url } : { ...rest, DATA_DIR: dataDir };
  });
  after(async () => {
    await t?.drop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const generate = (...args: string[]) =>
    run(process.execPath, ['--import', 'tsx', path.join(root, 'bin/generate.ts'), ...args], { env, cwd: root });

  test('prints plain progress lines without a terminal and a summary', async () => {
    const { stdout } = await generate('--persons', '20', '--works', '3');
    const lines = stdout.trim().split('\n');
    assert.equal(lines[0], 'generate: persons 100% (20/20)');
    assert.equal(lines[1], 'generate: works 100% (60/60)');
    assert.ok(lines.includes('generate: analyze 100% (1/1)'));
    assert.match(
      lines.at(-1) ?? '',
      new RegExp(`^generate: 20 persons, 60 works in [0-9]+\\.[0-9] s \\(${backend}\\)$`),
    );
  });

  test('exits with 1 and says what to do when the database has data', async () => {
    await assert.rejects(generate('--persons', '5'), (err: { code: number; stderr: string }) => {
      assert.equal(err.code, 1);
      assert.match(err.stderr, /^generate: The database already has persons or works; run again with --replace/m);
      return true;
    });
  });

  test('rejects a count that is not a positive integer', async () => {
    await assert.rejects(generate('--persons', 'many'), (err: { code: number; stderr: string }) => {
      assert.equal(err.code, 1);
      assert.match(err.stderr, /--persons must be an integer from 1 to 10000000, not "many"; usage: npm run generate/);
      return true;
    });
  });
});
