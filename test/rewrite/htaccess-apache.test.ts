// Differential test: real-world .htaccess files run in Apache httpd (mod_rewrite, mod_php) and,
// imported with bin/lib/htaccess.ts, in our server. For every generated request both must run the
// same script with the same query parameters, or answer the same status and redirect.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { importHtaccess } from '../../bin/lib/htaccess.ts';
import type { Apache } from './apache.ts';
import { startApache } from './apache.ts';
import type { TestDb } from '../helpers.ts';
import { missingTool, openTestDb, rawRequest, root, startTestServer } from '../helpers.ts';
import { probesFor } from './htaccess-probes.ts';
import type { Probe } from './htaccess-probes.ts';

const fixtures = path.join(root, 'test/fixtures/htaccess');
const scriptsDir = path.join(fixtures, 'scripts');
const scriptNames = readdirSync(scriptsDir)
  .filter((f) => /^[a-z]+\.ts$/.test(f))
  .map((f) => f.slice(0, -3));
const ruleFiles = readdirSync(path.join(fixtures, 'rules'))
  .filter((f) => f.endsWith('.htaccess'))
  .sort();

/** What a client sees of one exchange; the script and query only when a script answered. */
interface Observation {
  status: number;
  script: string | null;
  query: string | null;
  location: string | null;
}
interface Difference {
  file: string;
  probe: string;
  apache: string;
  ours: string;
}

describe('imported .htaccess files answer like Apache httpd', {
  skip: missingTool('/usr/sbin/apache2', 'apache2 libapache2-mod-php'),
}, () => {
  let apache: Apache;
  let db: TestDb;
  const tableDir = mkdtempSync(path.join(os.tmpdir(), 'portfolio-htaccess-'));
  const differences: Difference[] = [];
  let compared = 0;

  before(async () => {
    apache = await startApache({
      publicDir: path.join(fixtures, 'public'),
      phpScript: path.join(fixtures, 'report.php'),
      scriptNames,
    });
    db = await openTestDb();
  });

  after(async () => {
    await apache?.stop();
    await db?.drop();
    rmSync(tableDir, { recursive: true, force: true });
  });

  for (const file of ruleFiles) {
    test(`${file}: the same script, query, status and redirect for every probe`, async () => {
      const text = readFileSync(path.join(fixtures, 'rules', file), 'utf8');
      const tableFile = path.join(tableDir, file.replace('.htaccess', '.json'));
      const { table } = importHtaccess(text, {
        directory: '/',
        upstream: null,
        source: file,
        scriptExists: (name) => scriptNames.includes(name),
      });
      writeFileSync(tableFile, JSON.stringify(table));
      apache.useHtaccess(text);
      const ours = await startTestServer(
        {
          REWRITE_RULES: tableFile,
          SCRIPTS_DIR: scriptsDir,
          PUBLIC_DIR: path.join(fixtures, 'public'),
          DEMO_DATA: '0',
          ALLOWED_HOSTS: '127.0.0.1,localhost,example.test,www.example.test',
        },
        { db },
      );
      const found: Difference[] = [];
      try {
        for (const probe of probesFor(file)) {
          const [expected, actual] = [await observe(apache.origin, probe), await observe(ours.origin, probe)];
          compared++;
          if (JSON.stringify(expected) !== JSON.stringify(actual))
            found.push({
              file,
              probe: describeProbe(probe),
              apache: describeObservation(expected),
              ours: describeObservation(actual),
            });
        }
      } finally {
        await ours.close();
      }
      differences.push(...found);
      if (found.length > 0) console.log(formatTable(found));
      assert.deepEqual(found, []);
    });
  }

  test('compares at least 500 requests across all rule files', () => {
    console.log(
      `compared ${compared} requests across ${ruleFiles.length} rule files, ${differences.length} differences`,
    );
    assert.ok(compared >= 500, `only ${compared} requests were compared`);
    assert.equal(differences.length, 0);
  });
});

async function observe(origin: string, probe: Probe): Promise<Observation> {
  const host = probe.host ?? new URL(origin).host;
  const res = await rawRequest(origin, probe.target, {
    method: probe.method,
    headers: { ...probe.headers, host, accept: probe.headers.accept ?? 'application/json' },
  });
  let script: string | null = null;
  let query: string | null = null;
  if (res.status === 200 && (res.headers['content-type'] ?? '').includes('json')) {
    const body = JSON.parse(res.body) as { script: string; query: string | [string, string][] };
    script = body.script;
    // Apache hands PHP the raw query string; our scripts get the parsed pairs.
    query = JSON.stringify(typeof body.query === 'string' ? [...new URLSearchParams(body.query)] : body.query);
  }
  return { status: res.status, script, query, location: normalizeLocation(res.headers.location, `http://${host}`) };
}

// The origin differs by port, and Apache writes %xx escapes in lower case.
function normalizeLocation(location: string | undefined, origin: string): string | null {
  if (location === undefined) return null;
  const local = location.startsWith(origin + '/') ? location.slice(origin.length) : location;
  return local.replace(/%[0-9a-f]{2}/gi, (escape) => escape.toUpperCase());
}

function describeObservation(observation: Observation): string {
  const { status, script, query, location } = observation;
  return [String(status), script && `${script}.php`, query, location && `-> ${location}`].filter(Boolean).join(' ');
}

function describeProbe(probe: Probe): string {
  const extras = Object.entries(probe.headers).map(([name, value]) => `${name}: ${value}`);
  return [probe.method, probe.target, probe.host ? `(Host ${probe.host})` : '', ...extras].filter(Boolean).join(' ');
}

function formatTable(rows: Difference[]): string {
  const header: Difference = { file: 'rule file', probe: 'request', apache: 'Apache httpd', ours: 'portfolio' };
  const widths = (['file', 'probe', 'apache', 'ours'] as const).map((key) =>
    Math.max(...[header, ...rows].map((row) => row[key].length)),
  );
  const line = (row: Difference) =>
    (['file', 'probe', 'apache', 'ours'] as const).map((key, i) => row[key].padEnd(widths[i] ?? 0)).join(' | ');
  return [line(header), widths.map((w) => '-'.repeat(w)).join('-|-'), ...rows.map(line)].join('\n');
}
