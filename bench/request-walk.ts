// `npm run bench:walk`: which files of the project one request runs code in, read from V8's
// precise coverage of a single warmed-up request (docs/development.md, How a request is served):
// GET /person/max-muster.xml, and a form POST that adds a work. In production mode, on PGlite
// with the demo data.
import { Session } from 'node:inspector/promises';
import path from 'node:path';
import { csrfTokenOf } from '../test/change-helpers.ts';
import { root, startTestServer } from '../test/helpers.ts';
import { logInAs } from '../test/login-helpers.ts';

interface Coverage {
  result: { url: string; functions: { functionName: string; ranges: { count: number }[] }[] }[];
}

const session = new Session();
session.connect();
await session.post('Profiler.enable');
await session.post('Profiler.startPreciseCoverage', { callCount: true, detailed: false });

const server = await startTestServer({ NODE_ENV: 'production' });
const cookie = await logInAs(server.origin, 'mmuster');
const token = await csrfTokenOf(server.origin, cookie, '/person/max-muster/werke/neu');

const requests: Record<string, () => Promise<Response>> = {
  'GET /person/max-muster.xml': () => fetch(`${server.origin}/person/max-muster.xml`),
  'POST /person/max-muster/werke (a form)': () =>
    fetch(`${server.origin}/person/max-muster/werke`, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded', origin: server.origin },
      body: new URLSearchParams({ titel: 'Ein Werk', jahr: '2001', art: 'Buch', beschreibung: '', csrf_token: token }),
    }),
};

/** The project's files with a function called since the last take, in the order V8 lists them. */
async function filesRun(): Promise<string[]> {
  const { result } = (await session.post('Profiler.takePreciseCoverage')) as unknown as Coverage;
  const files = new Set<string>();
  for (const script of result) {
    const file = script.url.startsWith('file://') ? new URL(script.url).pathname : script.url;
    if (
      !file.startsWith(root) ||
      file.includes('/node_modules/') ||
      file.includes('/test/') ||
      file.includes('/bench/')
    )
      continue;
    if (script.functions.some((f) => (f.ranges[0]?.count ?? 0) > 0)) files.add(path.relative(root, file));
  }
  return [...files];
}

for (const [label, send] of Object.entries(requests)) {
  for (let i = 0; i < 20; i++) await (await send()).arrayBuffer();
  // Settle what the warm-up left (writes of the logs, timers), then take the counts afresh.
  await new Promise((resolve) => setTimeout(resolve, 300));
  await filesRun();
  const res = await send();
  await res.arrayBuffer();
  await new Promise((resolve) => setTimeout(resolve, 50));
  const files = await filesRun();
  console.log(`${label}: ${res.status}, ${files.length} files`);
  for (const file of files.sort()) console.log(`  ${file}`);
}

await session.post('Profiler.stopPreciseCoverage');
session.disconnect();
await server.close();
