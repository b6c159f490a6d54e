// While the primary cannot be reached, a worker's search goes to the search process with the index
// as it last was (lib/search/searcher.ts, requestSearch): the stems of words the index has not seen are
// read where the request reads (a replica), not asked of the primary by the search process, and
// the page's rows come from there too.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import type { Db } from '../../lib/db/index.ts';
import { DataVersion, openPostgres } from '../../lib/db/index.ts';
import { parseCondition, parseLines } from '../../lib/search/language.ts';
import { SearchClient } from '../../lib/search/service-client.ts';
import { Searcher } from '../../lib/search/searcher.ts';
import { serveSearches } from '../../lib/search/service.ts';
import type { SearchLimits, SearchSpec } from '../../lib/search/spec.ts';
import type { TestDb } from '../helpers.ts';
import { backend } from '../helpers.ts';
import { openDemoDb } from './index-contents.ts';

const skip = backend !== 'postgres' && "the search process and replicas are PostgreSQL's";
const limits: SearchLimits = { cap: 1000, timeoutMs: 2000, concurrency: 2, waitMs: 2000 };
let testDb: TestDb;
let dir: string;
const closing: (() => Promise<void>)[] = [];

/** The test database through a loopback port of its own, and lose() to cut it: a primary lost. */
async function throughProxy(url: string): Promise<{ url: string; lose: () => Promise<void> }> {
  const target = new URL(url);
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port || 5432), target.hostname);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('error', () => undefined);
      socket.on('close', () => sockets.delete(socket));
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const proxied = new URL(url);
  proxied.hostname = '127.0.0.1';
  proxied.port = String((server.address() as AddressInfo).port);
  return {
    url: proxied.toString(),
    lose: async () => {
      const closed = new Promise((resolve) => server.close(resolve));
      for (const socket of sockets) socket.destroy();
      await closed;
    },
  };
}

const spec = (query: string): SearchSpec => ({
  lines: parseLines([parseCondition(query)]),
  scope: 'default_scope',
  facets: [],
  sort: 'rank',
  offset: 0,
  size: 10,
});

before(async () => {
  if (skip) return;
  ({ testDb } = await openDemoDb());
  dir = mkdtempSync(path.join(os.tmpdir(), 'portfolio-primary-lost-'));
});

after(async () => {
  for (const close of closing.reverse()) await close();
  await testDb?.drop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test('with the primary lost, a word the index has not seen is stemmed where the request reads', { skip }, async () => {
  // The search process's and the worker's connections to the primary: they read the index and
  // the data version, then lose it.
  const proxy = await throughProxy(testDb.url as string);
  const own: Db = openPostgres({ connectionString: proxy.url, statementTimeoutMs: 2000, connectTimeoutMs: 500 });
  closing.push(() => own.close());
  const searcher = new Searcher(own, limits, { onError: (message) => assert.fail(message), snapshot: null });
  await searcher.start();
  closing.push(() => searcher.close());
  const socket = path.join(dir, 'search.sock');
  const server = serveSearches(searcher);
  await new Promise<void>((resolve) => server.listen(socket, resolve));
  closing.push(() => new Promise((resolve) => server.close(() => resolve())));
  const primary = openPostgres({ connectionString: proxy.url, statementTimeoutMs: 2000, connectTimeoutMs: 500 });
  closing.push(() => primary.close());
  await new DataVersion(primary).current();
  await proxy.lose();

  // "häuser" is in no text of the demo data: only the stemmer finds "Das Haus am Deich" by it.
  const query = 'any,contains,häuser';
  await assert.rejects(searcher.search(spec(query), 'latest'), 'the search process cannot stem it alone');

  const client = new SearchClient(socket, primary, limits);
  closing.push(() => client.close());
  // The request's database is the replica: here the same database on a connection of its own.
  const found = await client.forRequest(() => new DataVersion(primary).current(), testDb.db).find(spec(query));
  assert.deepEqual(
    found.hits.map((h) => h.titel),
    ['Das Haus am Deich'],
  );
  assert.equal(found.hits[0]?.slug, 'anna-lena-schaefer');
});
