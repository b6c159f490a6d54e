// `npm run generate -- --persons 20000 --works 50`: fills the configured database (DATABASE_URL,
// or PGlite in DATA_DIR) with made-up persons and works; see bin/lib/fill-database.ts.
// A progress bar on a terminal, plain progress lines otherwise (CI logs, pipes).
import { parseArgs } from 'node:util';
import { readConfig } from '../lib/config.ts';
import { migrate, openDatabase } from '../lib/db/index.ts';
import type { Progress } from './lib/fill-database.ts';
import { DatabaseNotEmptyError, generateData } from './lib/fill-database.ts';

const usage = 'usage: npm run generate -- --persons N --works M [--seed S] [--replace]';

function readCount(values: Record<string, unknown>, name: string, fallback: number, max: number): number {
  const raw = values[name];
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1 || value > max) {
    throw new Error(`--${name} must be an integer from 1 to ${max}, not "${String(raw)}"; ${usage}`);
  }
  return value;
}

function createProgressPrinter(out: NodeJS.WriteStream): (p: Progress) => void {
  let lastStep = '';
  return ({ phase, done, total }) => {
    const share = total === 0 ? 1 : done / total;
    if (out.isTTY) {
      const width = 30;
      const filled = Math.round(share * width);
      out.write(
        `\r${phase.padEnd(8)} [${'#'.repeat(filled)}${' '.repeat(width - filled)}] ${String(Math.floor(share * 100)).padStart(3)}% ${done}/${total}  `,
      );
      if (done === total) out.write('\n');
      return;
    }
    // Without a terminal: one line per tenth of each phase.
    const step = `${phase} ${Math.floor(share * 10) * 10}%`;
    if (step === lastStep) return;
    lastStep = step;
    out.write(`generate: ${step} (${done}/${total})\n`);
  };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      persons: { type: 'string' },
      works: { type: 'string' },
      seed: { type: 'string' },
      replace: { type: 'boolean', default: false },
    },
  });
  const persons = readCount(values, 'persons', 1000, 10_000_000);
  const works = readCount(values, 'works', 50, 10_000);
  const seed = readCount(values, 'seed', 1, 2 ** 31);
  const config = readConfig();
  // As the server opens it, with room for the bulk statements.
  const db = await openDatabase({ ...config, statementTimeoutMs: 600_000 });
  try {
    await migrate(db, config.sqlDir);
    const summary = await generateData(db, {
      persons,
      works,
      seed,
      replace: values.replace,
      onProgress: createProgressPrinter(process.stdout),
    });
    console.log(
      `generate: ${summary.persons} persons, ${summary.works} works in ${(summary.milliseconds / 1000).toFixed(1)} s (${db.kind})`,
    );
  } finally {
    await db.close();
  }
}

main().catch((err: unknown) => {
  console.error(
    `generate: ${err instanceof DatabaseNotEmptyError || err instanceof Error ? err.message : String(err)}`,
  );
  process.exit(1);
});
