// `npm run bench:profile -- json`: runs the product with --cpu-prof under 64 connections of
// person pages (json, xml or html) against the benchmark database that `npm run bench` left,
// then prints the functions with the most self time. The .cpuprofile opens in Chrome DevTools.
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { createRandom } from '../bin/lib/sample-data.ts';
import { runLoad } from './load.ts';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
}

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const databaseUrl = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/portfolio_bench_1000000';
const format = process.argv[2] ?? 'json';

/** Self time per function, largest first, as "share  function  file:line". */
function summarise(file: string, top = 25): string[] {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as { nodes: ProfileNode[] };
  const total = profile.nodes.reduce((sum, n) => sum + (n.hitCount ?? 0), 0);
  const byFunction = new Map<string, number>();
  for (const n of profile.nodes) {
    const where = n.callFrame.url
      ? `${n.callFrame.url.replace(`file://${root}/`, '')}:${n.callFrame.lineNumber + 1}`
      : '';
    const key = `${n.callFrame.functionName || '(anonymous)'}  ${where}`;
    byFunction.set(key, (byFunction.get(key) ?? 0) + (n.hitCount ?? 0));
  }
  return [...byFunction]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([key, hits]) => `${((hits / total) * 100).toFixed(1).padStart(5)}%  ${key}`);
}

async function main(): Promise<void> {
  if (!['json', 'xml', 'html'].includes(format))
    throw new Error(`the format must be json, xml or html, not "${format}".`);
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  const slugs = (await client.query<{ slug: string }>('SELECT slug FROM person ORDER BY id')).rows.map((r) => r.slug);
  await client.end();
  if (slugs.length === 0) throw new Error('the benchmark database has no persons; run npm run bench first.');
  const dir = mkdtempSync(path.join(os.tmpdir(), 'portfolio-profile-'));
  const child = spawn(process.execPath, ['--cpu-prof', `--cpu-prof-dir=${dir}`, '--import', 'tsx', 'server.ts'], {
    cwd: root,
    env: {
      ...process.env,
      NODE_ENV: 'production',
      PORT: '0',
      DATABASE_URL: databaseUrl,
      DEMO_DATA: '0',
      LOG_DIR: path.join(dir, 'logs'),
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const origin = await new Promise<string>((resolve) => {
    child.stdout.on('data', (chunk: Buffer) => {
      const match = /listening on (http:\/\/[^/\s]+)\//.exec(chunk.toString());
      if (match) resolve(match[1] as string);
    });
  });
  const random = createRandom(7);
  const result = await runLoad({
    origin,
    nextPath: () => `/person/${slugs[Math.floor(random() * slugs.length)]}.${format}`,
    connections: 64,
    seconds: 8,
    pid: child.pid ?? 0,
  });
  console.log(
    `person ${format}: ${result.requestsPerSecond.toFixed(0)} req/s, p50 ${result.p50} ms, p99 ${result.p99} ms, peak RSS ${result.peakRssMb.toFixed(0)} MB`,
  );
  child.kill('SIGINT'); // --cpu-prof writes the profile on a clean exit
  await new Promise((resolve) => child.once('exit', resolve));
  const file = readdirSync(dir).find((f) => f.endsWith('.cpuprofile'));
  if (!file) throw new Error(`no profile was written to ${dir}.`);
  console.log(`${path.join(dir, file)}\n${summarise(path.join(dir, file)).join('\n')}`);
}

main().catch((err: unknown) => {
  console.error(`bench:profile: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
