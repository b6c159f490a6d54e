// SIGTERM under load fails no request in flight: with one process and with two workers, clients
// on keep-alive connections keep sending until the port is closed; every request the server
// took is answered 200 and logged, the rest are refused at connect, and the process exits 0.
import assert from 'node:assert/strict';
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { after, before, test } from 'node:test';
import type { PostgresCluster } from './postgres-cluster.ts';
import { createCluster } from './postgres-cluster.ts';
import { startProgram } from '../program.ts';

let cluster: PostgresCluster;
before(async () => {
  cluster = await createCluster();
});
after(() => cluster?.remove());

const targets = [
  '/person/max-muster.json',
  '/personen',
  '/search.json?query=any,contains,e',
  '/werk/7.xml',
  '/css/site.css',
  '/',
];

function get(agent: http.Agent, origin: string, target: string): Promise<number | string> {
  return new Promise((resolve) => {
    const req = http.get(origin + target, { agent, timeout: 15_000 }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
      res.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
    });
    req.on('timeout', () => req.destroy(Object.assign(new Error('timed out'), { code: 'TIMEOUT' })));
    // A reset on a connection that had never carried a request is told apart: see the test.
    req.on('error', (err: NodeJS.ErrnoException) =>
      resolve(
        err.code === 'ECONNRESET' && !req.reusedSocket ? 'ECONNRESET on a new connection' : (err.code ?? err.message),
      ),
    );
  });
}

for (const workers of [1, 2]) {
  test(`SIGTERM to ${workers === 1 ? 'a single process' : 'the primary of two workers'} under load: every request taken is answered`, async () => {
    const program = await startProgram({ DATABASE_URL: cluster.url, WEB_CONCURRENCY: String(workers) });
    try {
      const agent = new http.Agent({ keepAlive: true, maxSockets: 32 });
      const outcomes: (number | string)[] = [];
      let signalledAt = Infinity;
      const client = async (c: number) => {
        // Until the port is closed (ECONNREFUSED) or at most 20 s; bounded in count too.
        for (let i = 0; i < 50_000 && performance.now() - signalledAt < 20_000; i++) {
          const status = await get(agent, program.origin, targets[(i + c) % targets.length] as string);
          outcomes.push(status);
          if (status === 'ECONNREFUSED') return;
        }
      };
      const clients = Array.from({ length: 32 }, (_, c) => client(c));
      await new Promise((resolve) => setTimeout(resolve, 1500));
      signalledAt = performance.now();
      program.child.kill('SIGTERM');
      // Sent right after the signal on new connections: answered, or refused at connect, never reset.
      const rightAfter = await Promise.all(
        Array.from({ length: 3 }, (_, i) => get(new http.Agent(), program.origin, targets[i] as string)),
      );
      await Promise.all(clients);
      agent.destroy();
      const code = await program.exited;

      const counts: Record<string, number> = {};
      for (const o of outcomes) counts[String(o)] = (counts[String(o)] ?? 0) + 1;
      console.log(
        JSON.stringify({ workers, ...counts, rightAfter, stoppedInMs: Math.round(performance.now() - signalledAt) }),
      );
      // With workers too: the primary owns the port, closes it first and hands every connection it
      // took to a worker that answers it.
      assert.deepEqual(
        Object.keys(counts).filter((k) => !['200', 'ECONNREFUSED'].includes(k)),
        [],
      );
      assert.deepEqual(
        rightAfter.filter((o) => o !== 200 && o !== 'ECONNREFUSED'),
        [],
      );
      assert.equal(counts.ECONNREFUSED, 32, 'each client ends at the closed port');
      assert.ok((counts['200'] ?? 0) >= 100, `${counts['200']} answered`);
      assert.equal(code, 0);
      // The server logged exactly the requests the clients saw answered.
      const logged = program
        .readLog('access.log')
        .split('\n')
        .filter((line) => / 200 \d+ "-" "-"$/.test(line)).length;
      assert.equal(logged, (counts['200'] ?? 0) + rightAfter.filter((o) => o === 200).length);
    } finally {
      program.remove();
    }
  });
}
