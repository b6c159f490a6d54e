// `npm run bench:snapshot`: what the search index's snapshot file (lib/search/snapshot.ts) saves a
// start, on the benchmark's databases (bench/run.ts; reused when a run before left them). For each
// size in BENCH_SIZES (default 200000,1000000), in processes of their own, one after another:
// the index read from PostgreSQL (time, resident size after), the snapshot written (time, bytes),
// then a start that takes the file (time, resident size after, and what the index added to the
// resident size of the process with its code loaded and a connection open, and the heap after a
// collection). BENCH_ROUNDS (default 3) rounds.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { openPostgres } from '../lib/db/index.ts';
import { IndexSync } from '../lib/search/sync.ts';
import { prepareDataset } from './run.ts';

const self = fileURLToPath(import.meta.url);
const sizes = (process.env.BENCH_SIZES ?? '200000,1000000').split(',').map(Number);
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);

interface Figures {
  ms: number;
  rssMb: number;
  baseMb: number;
  heapMb: number;
  writeMs?: number;
  bytes?: number;
  taken: boolean;
}

/**
 * One start in this process: from the database (the file removed first; the index then writes it,
 * as after every whole reading, and the close waits for that), or from the file.
 */
async function child(url: string, file: string, mode: 'read' | 'take'): Promise<void> {
  if (mode === 'read') rmSync(file, { force: true });
  const db = openPostgres({ connectionString: url, statementTimeoutMs: 600_000 });
  const notes: string[] = [];
  const sync = new IndexSync(db, { snapshot: file, onError: (m) => notes.push(m), onNote: (m) => notes.push(m) });
  // The process before the index: its code loaded and a connection open.
  await db.query('SELECT 1');
  global.gc?.();
  const baseMb = process.memoryUsage().rss / 2 ** 20;
  const started = performance.now();
  await sync.start();
  const ms = performance.now() - started;
  global.gc?.();
  const { rss, heapUsed } = process.memoryUsage();
  const figures: Figures = {
    ms,
    rssMb: rss / 2 ** 20,
    baseMb,
    heapMb: heapUsed / 2 ** 20,
    taken: sync.stats.snapshotsTaken === 1,
  };
  const closing = performance.now();
  await sync.close();
  if (mode === 'read') {
    figures.writeMs = performance.now() - closing;
    figures.bytes = statSync(file).size;
  }
  await db.close();
  if (figures.taken !== (mode === 'take'))
    throw new Error(`the file was ${figures.taken ? '' : 'not '}taken: ${notes.join('; ')}`);
  console.log(JSON.stringify(figures));
}

function run(url: string, file: string, mode: 'read' | 'take'): Figures {
  const result = spawnSync(process.execPath, ['--expose-gc', '--import', 'tsx', self, mode, url, file], {
    encoding: 'utf8',
    maxBuffer: 1 << 24,
  });
  if (result.status !== 0) throw new Error(`${mode}: ${result.stderr}`);
  return JSON.parse(result.stdout.trim().split('\n').at(-1) as string) as Figures;
}

async function main(): Promise<void> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'portfolio-snapshot-bench-'));
  const rows: string[] = [];
  try {
    for (const works of sizes) {
      const dataset = await prepareDataset(works, { reuse: true });
      const file = path.join(dir, `${works}.snapshot`);
      for (let round = 1; round <= rounds; round++) {
        const read = run(dataset.url, file, 'read');
        const taken = run(dataset.url, file, 'take');
        rows.push(
          `| ${works} | ${round} | ${(read.ms / 1000).toFixed(1)} s, ${read.rssMb.toFixed(0)} MB | ${((read.writeMs ?? 0) / 1000).toFixed(1)} s, ${((read.bytes ?? 0) / 2 ** 20).toFixed(0)} MB | ${(taken.ms / 1000).toFixed(1)} s, ${taken.rssMb.toFixed(0)} MB | ${(taken.rssMb - taken.baseMb).toFixed(0)} MB, ${taken.heapMb.toFixed(0)} MB |`,
        );
        console.log(rows.at(-1));
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  console.log(
    [
      '',
      '| works | round | read from PostgreSQL: time, RSS after | snapshot written: time, size | start from the snapshot: time, RSS after | the index taken: RSS added, heap after |',
      '|---|---|---|---|---|---|',
      ...rows,
    ].join('\n'),
  );
}

const [mode, url, file] = process.argv.slice(2);
if (mode === 'read' || mode === 'take') {
  child(url as string, file as string, mode).catch((err: unknown) => {
    console.error(err instanceof Error ? err.stack : String(err));
    process.exit(1);
  });
} else {
  main().catch((err: unknown) => {
    console.error(`bench: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  });
}
