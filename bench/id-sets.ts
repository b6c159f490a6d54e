// `npm run bench:id-sets`: the word index's sets of row ids (lib/search/id-set.ts, combined block
// by block by match.ts) against CRoaring's Node port (the roaring package, RoaringBitmap32), on the
// same rows and the same searches, paired. The project's rule: roaring, unless this shows IdSet
// both faster and smaller.
//
// Data (BENCH_DATA, default `titles,zipf`, one table each), BENCH_ROWS rows with the ids 1…N
// (default 1,000,000), seeded (BENCH_SEED, default 1):
// - titles: a title a row from the data generator (bin/lib/sample-data.ts), its lower-cased
//   words as the row's lexemes: few lexemes, most of them in many rows;
// - zipf: BENCH_LEXEMES (default 200,000) lexemes, the one of rank r in a share
//   0.2 · (19 / (r + 18))^1.3 of the rows (the first in 20%, about 170 in 1% or more, the median
//   in 3 rows of a million), about 12 a row: the long tail of a real catalogue's words.
//
// What is measured, for each kind of set:
// - build: the sets made from the rows read in the order of their ids, as the index reads them:
//   IdSet by adding each row's id to its lexemes' sets, then fit() (word-index.ts); roaring the
//   fastest bulk way, each lexeme's ids gathered into a Uint32Array and made a bitmap at once,
//   then runOptimize() and shrinkToFit(). Both with the set of all rows. Each in a process of its
//   own (BENCH_BUILD_TURNS, default 2, in turns ABBA), for its time, the bytes the sets count
//   (IdSet.bytes; roaring's portable serialization size) and what the process grew by: resident
//   (RSS), JavaScript heap used and external memory, each after a full garbage collection.
// - searches, BENCH_QUERIES of each kind (default 1,000), words drawn as often as they are in the
//   data (a random occurrence of a lexeme): one word; two words AND (two lexemes of one row, as a
//   user remembers a title); three words OR; a word AND NOT another; each taking the first 1,001
//   ids in id order (the search's limit, cap + 1). IdSet through match.ts's Combiner and idsOf as
//   takeRows does; roaring with RoaringBitmap32.and, orMany and andNot, then toUint32Array(1,001)
//   (rangeUint32Array into a buffer kept from search to search is a little cheaper, but the ids
//   must outlive the next search: the search awaits descriptions meanwhile).
//   Beside them, has() of 1,001 ids in order (as scoreRows reads the levels of a word), and a row
//   changed (delete its id from its lexemes' sets and the set of all rows, asking each set's size
//   as lexemes.ts does to drop an empty one, then add it again, as sync.ts puts a row).
// Every search is checked first to give the same ids with both (and the same counts for has()),
// then both run the same sequence of each kind in BENCH_TURNS turns (default 6), alternating which
// goes first; p50 and p99 are over every run of a kind, ops/s over their total time, and the
// ratio of ops/s is the median of the turns' ratios (its lowest and highest beside it).
// The markdown table goes to stdout, progress to stderr. `node --expose-gc` (the npm script) lets
// memory be read after a full collection.
import { spawnSync } from 'node:child_process';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import roaring from 'roaring';
import type { RoaringBitmap32 as Bitmap } from 'roaring';
import { createRandom, makeTitle } from '../bin/lib/sample-data.ts';
import { blockWords, idsOf, IdSet } from '../lib/search/id-set.ts';
import { Combiner } from '../lib/search/match.ts';
import type { Query } from '../lib/search/query.ts';
import { andQuery, notQuery, orQuery } from '../lib/search/query.ts';

const { RoaringBitmap32 } = roaring;

const rowCount = Number(process.env.BENCH_ROWS ?? 1_000_000);
const lexemeCount = Number(process.env.BENCH_LEXEMES ?? 200_000);
const seed = Number(process.env.BENCH_SEED ?? 1);
const queryCount = Number(process.env.BENCH_QUERIES ?? 1000);
const turns = Number(process.env.BENCH_TURNS ?? 6);
const buildTurns = Number(process.env.BENCH_BUILD_TURNS ?? 2);
const dataNames = (process.env.BENCH_DATA ?? 'titles,zipf').split(',').map((name) => name.trim()).filter(Boolean) as DataName[];
/** The search's limit: cap + 1, to tell whether there are more than cap hits. */
const limit = 1001;

const gc = (globalThis as { gc?: () => void }).gc ?? (() => {});
const log = (line: string): void => void process.stderr.write(`bench: ${line}\n`);

type DataName = 'titles' | 'zipf';

/** Rows 1…rows with their lexemes: row id's at lexemes[start[id - 1]] up to lexemes[start[id]]. */
interface Data {
  name: DataName;
  rows: number;
  /** Lexeme numbers 0…lexemeCount - 1 (some perhaps in no row). */
  lexemeCount: number;
  start: Int32Array;
  lexemes: Int32Array;
  about: string;
}

// --- Data -------------------------------------------------------------------------------------

function makeData(name: DataName, rows: number): Data {
  if (name === 'titles') return titleData(rows);
  if (name === 'zipf') return zipfData(rows);
  throw new Error(`BENCH_DATA: ${String(name)} is neither titles nor zipf`);
}

/** A generated title a row, its distinct lower-cased words its lexemes. */
function titleData(rows: number): Data {
  const random = createRandom(seed);
  const codes = new Map<string, number>();
  const start = new Int32Array(rows + 1);
  let lexemes: Int32Array = new Int32Array(rows * 4);
  let n = 0;
  for (let id = 1; id <= rows; id++) {
    for (const word of new Set(makeTitle(random).toLowerCase().split(/\s+/))) {
      if (word === '') continue;
      let code = codes.get(word);
      if (code === undefined) codes.set(word, (code = codes.size));
      if (n === lexemes.length) lexemes = grow(lexemes);
      lexemes[n++] = code;
    }
    start[id] = n;
  }
  return { name: 'titles', rows, lexemeCount: codes.size, start, lexemes: lexemes.slice(0, n), about: 'a generated title a row (bin/lib/sample-data.ts), its lower-cased words the lexemes' };
}

/**
 * lexemeCount lexemes, the one of rank r in a share 0.2 · (19 / (r + 18))^1.3 of the rows, each
 * row drawn independently (the gaps between its rows geometric); then turned into rows.
 */
function zipfData(rows: number): Data {
  const random = createRandom(seed);
  const byLexeme = new Int32Array(lexemeCount + 1);
  let ids: Int32Array = new Int32Array(rows * 12);
  let n = 0;
  for (let r = 1; r <= lexemeCount; r++) {
    const share = 0.2 * Math.pow(19 / (r + 18), 1.3);
    const logKeep = Math.log1p(-share);
    for (let id = 0; ;) {
      id += 1 + Math.floor(Math.log(1 - random()) / logKeep);
      if (id > rows) break;
      if (n === ids.length) ids = grow(ids);
      ids[n++] = id;
    }
    byLexeme[r] = n;
  }
  const start = new Int32Array(rows + 1);
  for (let i = 0; i < n; i++) start[ids[i]!]!++;
  for (let id = 1; id <= rows; id++) start[id]! += start[id - 1]!;
  const lexemes = new Int32Array(n);
  const next = start.slice(0, rows);
  for (let r = 0; r < lexemeCount; r++) {
    for (let i = byLexeme[r]!; i < byLexeme[r + 1]!; i++) lexemes[next[ids[i]! - 1]!++] = r;
  }
  return {
    name: 'zipf', rows, lexemeCount, start, lexemes,
    about: `${lexemeCount.toLocaleString('en')} lexemes, Zipf-like: the one of rank r in 0.2 · (19 / (r + 18))^1.3 of the rows`,
  };
}

function grow(values: Int32Array): Int32Array {
  const grown = new Int32Array(values.length * 2);
  grown.set(values);
  return grown;
}

/** How many rows each lexeme is in. */
function lexemeSizes(data: Data): Int32Array {
  const sizes = new Int32Array(data.lexemeCount);
  for (const lexeme of data.lexemes) sizes[lexeme]!++;
  return sizes;
}

// --- The two kinds of set ---------------------------------------------------------------------

interface IdSets {
  rows: IdSet;
  sets: (IdSet | undefined)[];
}

interface Bitmaps {
  rows: Bitmap;
  sets: (Bitmap | undefined)[];
}

/** As the index reads rows (word-index.ts, lexemes.ts): each row's id added to its sets, in id order; then fit(). */
function buildIdSets(data: Data): IdSets {
  const rows = new IdSet();
  const sets: (IdSet | undefined)[] = new Array(data.lexemeCount).fill(undefined);
  const { start, lexemes } = data;
  for (let id = 1; id <= data.rows; id++) {
    rows.add(id);
    for (let i = start[id - 1]!; i < start[id]!; i++) {
      const lexeme = lexemes[i]!;
      let set = sets[lexeme];
      if (!set) sets[lexeme] = set = new IdSet();
      set.add(id);
    }
  }
  rows.fit();
  for (const set of sets) set?.fit();
  return { rows, sets };
}

/** Each lexeme's ids gathered in id order into one Uint32Array, a bitmap made of each lexeme's part of it at once. */
function buildBitmaps(data: Data): Bitmaps {
  const { start, lexemes } = data;
  const offsets = new Int32Array(data.lexemeCount + 1);
  for (const lexeme of lexemes) offsets[lexeme + 1]!++;
  for (let l = 0; l < data.lexemeCount; l++) offsets[l + 1]! += offsets[l]!;
  const ids = new Uint32Array(lexemes.length);
  const next = offsets.slice(0, data.lexemeCount);
  for (let id = 1; id <= data.rows; id++) {
    for (let i = start[id - 1]!; i < start[id]!; i++) ids[next[lexemes[i]!]!++] = id;
  }
  const sets: (Bitmap | undefined)[] = new Array(data.lexemeCount).fill(undefined);
  for (let l = 0; l < data.lexemeCount; l++) {
    if (offsets[l] === offsets[l + 1]) continue;
    const set = new RoaringBitmap32(ids.subarray(offsets[l]!, offsets[l + 1]!));
    set.runOptimize();
    set.shrinkToFit();
    sets[l] = set;
  }
  const rows = new RoaringBitmap32();
  rows.addRange(1, data.rows + 1);
  rows.runOptimize();
  rows.shrinkToFit();
  return { rows, sets };
}

function idSetBytes(built: IdSets): number {
  let bytes = built.rows.bytes;
  for (const set of built.sets) if (set) bytes += set.bytes;
  return bytes;
}

function bitmapBytes(built: Bitmaps): number {
  let bytes = built.rows.getSerializationSizeInBytes('portable');
  for (const set of built.sets) if (set) bytes += set.getSerializationSizeInBytes('portable');
  return bytes;
}

// --- Build and memory, each kind in a process of its own --------------------------------------

type ImplName = 'IdSet' | 'roaring';
const implNames: readonly ImplName[] = ['IdSet', 'roaring'];

interface Built {
  ms: number;
  bytes: number;
  rss: number;
  heapUsed: number;
  external: number;
}

/** In a child process: makes the data, builds one kind of set, prints what it took as JSON. */
function buildChild(impl: ImplName, name: DataName): void {
  const data = makeData(name, rowCount);
  gc();
  gc();
  const before = process.memoryUsage();
  const started = performance.now();
  const built = impl === 'IdSet' ? buildIdSets(data) : buildBitmaps(data);
  const ms = performance.now() - started;
  gc();
  gc();
  const after = process.memoryUsage();
  const bytes = impl === 'IdSet' ? idSetBytes(built as IdSets) : bitmapBytes(built as Bitmaps);
  const result: Built = {
    ms, bytes,
    rss: after.rss - before.rss,
    heapUsed: after.heapUsed - before.heapUsed,
    external: after.external - before.external,
  };
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

function buildInChild(impl: ImplName, name: DataName): Built {
  const child = spawnSync(process.execPath, [...process.execArgv, fileURLToPath(import.meta.url), '--build', impl, name], {
    encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 1 << 20,
  });
  if (child.status !== 0) throw new Error(`the build of ${impl} on ${name} exited with ${child.status ?? child.signal}`);
  return JSON.parse(child.stdout.trim().split('\n').at(-1) as string) as Built;
}

// --- Operations -------------------------------------------------------------------------------

type KindName = 'one' | 'and' | 'or' | 'andNot' | 'has' | 'change';

const kinds: readonly { name: KindName; label: string }[] = [
  { name: 'one', label: '1 word' },
  { name: 'and', label: '2 words AND' },
  { name: 'or', label: '3 words OR' },
  { name: 'andNot', label: 'word AND NOT word' },
  { name: 'has', label: 'has() ×1,001' },
  { name: 'change', label: 'row changed (delete, add)' },
];

/** One operation: the lexemes it reads, and for has() the ids, for a change the row. */
interface Op {
  lexemes: number[];
  ids?: Uint32Array;
  row?: number;
}

/** BENCH_QUERIES operations of each kind, words drawn as often as they are in the data. */
function makeOps(data: Data): Record<KindName, Op[]> {
  const random = createRandom(seed * 7919 + 17);
  const total = data.lexemes.length;
  const occurrence = (): number => Math.floor(random() * total);
  /** A lexeme drawn as often as it is in the data, not one of those given. */
  const word = (not: readonly number[] = []): number => {
    for (;;) {
      const lexeme = data.lexemes[occurrence()]!;
      if (!not.includes(lexeme)) return lexeme;
    }
  };
  /** The row of an occurrence. */
  const rowOf = (at: number): number => {
    let low = 1;
    let high = data.rows;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (data.start[middle]! > at) high = middle;
      else low = middle + 1;
    }
    return low;
  };
  const ops = { one: [], and: [], or: [], andNot: [], has: [], change: [] } as Record<KindName, Op[]>;
  for (let q = 0; q < queryCount; q++) {
    ops.one.push({ lexemes: [word()] });
    // Two words of one row; a row of one word gives way to another.
    for (;;) {
      const at = occurrence();
      const row = rowOf(at);
      const from = data.start[row - 1]!;
      const count = data.start[row]! - from;
      if (count < 2) continue;
      const first = data.lexemes[at]!;
      let second = first;
      while (second === first) second = data.lexemes[from + Math.floor(random() * count)]!;
      ops.and.push({ lexemes: [first, second] });
      break;
    }
    const a = word();
    const b = word([a]);
    ops.or.push({ lexemes: [a, b, word([a, b])] });
    const kept = word();
    ops.andNot.push({ lexemes: [kept, word([kept])] });
    const ids = new Uint32Array(limit);
    for (let i = 0; i < limit; i++) ids[i] = 1 + Math.floor(random() * data.rows);
    ids.sort();
    ops.has.push({ lexemes: [word()], ids });
    const row = 1 + Math.floor(random() * data.rows);
    ops.change.push({ lexemes: Array.from(data.lexemes.subarray(data.start[row - 1]!, data.start[row]!)), row });
  }
  return ops;
}

/** What an operation gives: the ids taken, or a count. */
type Result = ArrayLike<number> | number;

/** Each kind's operations made ready for one kind of set (their sets looked up), and run. */
interface Runner {
  prepare(kind: KindName, op: Op): unknown;
  run: Record<KindName, (prepared: never) => Result>;
}

/** The first `limit` ids of a set query, as takeRows (match.ts) takes them for a plan without checks. */
function takeIds(query: Query, rows: IdSet, words: Uint32Array): number[] {
  const ids: number[] = [];
  const combine = new Combiner(rows);
  for (let b = 0; b < rows.blockCount && ids.length < limit; b++) {
    if (!combine.mayHave(query, b)) continue;
    combine.into(query, b, words);
    ids.push(...idsOf(b, words, limit - ids.length));
  }
  return ids;
}

function idSetRunner(built: IdSets): Runner {
  const { rows, sets } = built;
  const words = new Uint32Array(blockWords);
  const word = (lexeme: number): Query => ({ t: 'sets', sets: [sets[lexeme] as IdSet] });
  return {
    prepare(kind, op) {
      const [a, b, c] = op.lexemes as [number, number, number];
      switch (kind) {
        case 'one': return word(a);
        case 'and': return andQuery([word(a), word(b)]);
        case 'or': return orQuery([word(a), word(b), word(c)]);
        case 'andNot': return andQuery([word(a), notQuery(word(b))]);
        case 'has': return { set: sets[a], ids: op.ids };
        case 'change': return { row: op.row, sets: op.lexemes.map((l) => sets[l]) };
      }
    },
    run: {
      one: (query: Query) => takeIds(query, rows, words),
      and: (query: Query) => takeIds(query, rows, words),
      or: (query: Query) => takeIds(query, rows, words),
      andNot: (query: Query) => takeIds(query, rows, words),
      has: ({ set, ids }: { set: IdSet; ids: Uint32Array }) => countHas(set, ids),
      change: ({ row, sets: of }: { row: number; sets: IdSet[] }) => changeRow(rows, row, of),
    },
  };
}

/** A set as both kinds are: what has() and a changed row use. */
interface AnySet { has(id: number): boolean; add(id: number): unknown; delete(id: number): unknown; readonly size: number }

/** How many of ids the set has. */
function countHas(set: AnySet, ids: Uint32Array): number {
  let found = 0;
  for (let i = 0; i < ids.length; i++) if (set.has(ids[i]!)) found++;
  return found;
}

/** A row changed: taken out of the rows and its sets, then put back; the sets it emptied on the way count. */
function changeRow(rows: AnySet, row: number, of: readonly AnySet[]): number {
  let emptied = 0;
  rows.delete(row);
  for (const set of of) {
    set.delete(row);
    if (set.size === 0) emptied++;
  }
  rows.add(row);
  for (const set of of) set.add(row);
  return of.length + emptied;
}

function bitmapRunner(built: Bitmaps): Runner {
  const { rows, sets } = built;
  return {
    prepare(kind, op) {
      const of = op.lexemes.map((l) => sets[l] as Bitmap);
      switch (kind) {
        case 'has': return { set: of[0], ids: op.ids };
        case 'change': return { row: op.row, sets: of };
        default: return of;
      }
    },
    run: {
      one: ([a]: Bitmap[]) => a!.toUint32Array(limit),
      and: ([a, b]: Bitmap[]) => RoaringBitmap32.and(a!, b!).toUint32Array(limit),
      or: (of: Bitmap[]) => RoaringBitmap32.orMany(of).toUint32Array(limit),
      andNot: ([a, b]: Bitmap[]) => RoaringBitmap32.andNot(a!, b!).toUint32Array(limit),
      has: ({ set, ids }: { set: Bitmap; ids: Uint32Array }) => countHas(set, ids),
      change: ({ row, sets: of }: { row: number; sets: Bitmap[] }) => changeRow(rows, row, of),
    },
  };
}

function sameResult(a: Result, b: Result): boolean {
  if (typeof a === 'number' || typeof b === 'number') return a === b;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

function describeResult(result: Result): string {
  if (typeof result === 'number') return String(result);
  return `${result.length} ids [${Array.from(result).slice(0, 8).join(', ')}${result.length > 8 ? ', …' : ''}]`;
}

/** Every lexeme's set the same size in both, and the same ids in the largest and in a sample of the others. */
function checkSets(idSets: IdSets, bitmaps: Bitmaps, sizes: Int32Array, when: string): void {
  const fail = (what: string): never => {
    throw new Error(`${when}: ${what} differs between IdSet and roaring`);
  };
  if (idSets.rows.size !== bitmaps.rows.size) fail('the set of all rows (size)');
  let largest = 0;
  for (let l = 0; l < sizes.length; l++) {
    const a = idSets.sets[l];
    const b = bitmaps.sets[l];
    if ((a?.size ?? 0) !== sizes[l] || (b?.size ?? 0) !== sizes[l]) fail(`lexeme ${l}'s set (size)`);
    if (sizes[l]! > sizes[largest]!) largest = l;
  }
  const step = Math.max(1, Math.floor(sizes.length / 200));
  for (let l = 0; l <= sizes.length; l += step) {
    const lexeme = l < sizes.length ? l : largest;
    const a = idSets.sets[lexeme];
    const b = bitmaps.sets[lexeme];
    if (a && b && !sameResult(Array.from(a.ids()), b.toUint32Array())) fail(`lexeme ${lexeme}'s set (ids)`);
  }
}

// --- Timing -----------------------------------------------------------------------------------

interface Timed {
  /** Every run's time, ms. */
  samples: number[];
  /** Each turn's total time, ms. */
  turnMs: number[];
}

function percentile(sorted: readonly number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] ?? NaN;
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

/** A sink the results' sizes go into, so that no run is left out as unused. */
let sink = 0;

function timeRun(run: (prepared: never) => Result, prepared: readonly unknown[], timed: Timed): void {
  gc();
  const samples = timed.samples;
  let total = 0;
  for (let i = 0; i < prepared.length; i++) {
    const started = performance.now();
    const result = run(prepared[i] as never);
    const ms = performance.now() - started;
    sink += typeof result === 'number' ? result : result.length;
    samples.push(ms);
    total += ms;
  }
  timed.turnMs.push(total);
}

// --- One data set -----------------------------------------------------------------------------

const mb = (bytes: number): string => (bytes / 1048576).toFixed(1);
const fixed = (value: number, digits: number): string => value.toLocaleString('en', { minimumFractionDigits: digits, maximumFractionDigits: digits });
const us = (ms: number): string => fixed(ms * 1000, ms < 0.01 ? 2 : 1);
const ratio = (value: number): string => (Number.isFinite(value) ? fixed(value, 2) : '–');

async function benchData(name: DataName): Promise<string> {
  log(`${name}: building each kind of set in a process of its own, ${buildTurns} turn(s)`);
  const builds: Record<ImplName, Built[]> = { IdSet: [], roaring: [] };
  for (let turn = 0; turn < buildTurns; turn++) {
    for (const impl of turn % 2 === 0 ? implNames : [...implNames].reverse()) {
      const built = buildInChild(impl, name);
      builds[impl].push(built);
      log(`${name}: ${impl} built in ${built.ms.toFixed(0)} ms, ${mb(built.bytes)} MB of sets, RSS +${mb(built.rss)} MB`);
    }
  }

  log(`${name}: making ${rowCount.toLocaleString('en')} rows`);
  const data = makeData(name, rowCount);
  const sizes = lexemeSizes(data);
  const idSets = buildIdSets(data);
  const bitmaps = buildBitmaps(data);
  checkSets(idSets, bitmaps, sizes, 'after the build');
  const ops = makeOps(data);
  const runners: Record<ImplName, Runner> = { IdSet: idSetRunner(idSets), roaring: bitmapRunner(bitmaps) };
  const prepared = Object.fromEntries(implNames.map((impl) => [impl, Object.fromEntries(kinds.map(({ name: kind }) => [kind, ops[kind].map((op) => runners[impl].prepare(kind, op))]))])) as Record<ImplName, Record<KindName, unknown[]>>;

  log(`${name}: checking that both give the same for every operation`);
  const hits: Record<KindName, number> = { one: 0, and: 0, or: 0, andNot: 0, has: 0, change: 0 };
  for (const { name: kind, label } of kinds) {
    for (let i = 0; i < queryCount; i++) {
      const a = runners.IdSet.run[kind](prepared.IdSet[kind][i] as never);
      const b = runners.roaring.run[kind](prepared.roaring[kind][i] as never);
      if (!sameResult(a, b)) {
        throw new Error(`${name}, ${label} #${i} (lexemes ${ops[kind][i]!.lexemes.join(', ')}): IdSet gives ${describeResult(a)}, roaring ${describeResult(b)}`);
      }
      hits[kind] += typeof a === 'number' ? a : a.length;
    }
  }

  const timed = Object.fromEntries(implNames.map((impl) => [impl, Object.fromEntries(kinds.map(({ name: kind }): [KindName, Timed] => [kind, { samples: [], turnMs: [] }]))])) as Record<ImplName, Record<KindName, Timed>>;
  for (let turn = 0; turn < turns; turn++) {
    log(`${name}: turn ${turn + 1} of ${turns}`);
    for (const { name: kind } of kinds) {
      for (const impl of turn % 2 === 0 ? implNames : [...implNames].reverse()) {
        timeRun(runners[impl].run[kind], prepared[impl][kind], timed[impl][kind]);
      }
    }
  }
  checkSets(idSets, bitmaps, sizes, 'after the timed runs');

  const built = (impl: ImplName, key: keyof Built): number => median(builds[impl].map((b) => b[key]));
  const rows: string[][] = [
    ['build, ms', fixed(built('IdSet', 'ms'), 0), fixed(built('roaring', 'ms'), 0), ratio(built('roaring', 'ms') / built('IdSet', 'ms'))],
    ['bytes the sets count, MB', mb(built('IdSet', 'bytes')), mb(built('roaring', 'bytes')), ratio(built('roaring', 'bytes') / built('IdSet', 'bytes'))],
    ['RSS grown by the build, MB', mb(built('IdSet', 'rss')), mb(built('roaring', 'rss')), ratio(built('roaring', 'rss') / built('IdSet', 'rss'))],
    ['JS heap used grown, MB', mb(built('IdSet', 'heapUsed')), mb(built('roaring', 'heapUsed')), ratio(built('roaring', 'heapUsed') / built('IdSet', 'heapUsed'))],
    ['external memory grown, MB', mb(built('IdSet', 'external')), mb(built('roaring', 'external')), ratio(built('roaring', 'external') / built('IdSet', 'external'))],
  ];
  let idSetFaster = 0;
  for (const { name: kind, label } of kinds) {
    const [a, b] = implNames.map((impl) => {
      const sorted = [...timed[impl][kind].samples].sort((x, y) => x - y);
      const total = timed[impl][kind].turnMs.reduce((sum, ms) => sum + ms, 0);
      return { p50: percentile(sorted, 0.5), p99: percentile(sorted, 0.99), ops: (sorted.length * 1000) / total };
    }) as [{ p50: number; p99: number; ops: number }, { p50: number; p99: number; ops: number }];
    // Per turn: roaring's ops/s over IdSet's, i.e. IdSet's time over roaring's.
    const turnRatios = timed.IdSet[kind].turnMs.map((ms, t) => ms / timed.roaring[kind].turnMs[t]!);
    const paired = median(turnRatios);
    if (paired < 1) idSetFaster++;
    rows.push(
      [`${label}: p50, µs`, us(a.p50), us(b.p50), ratio(b.p50 / a.p50)],
      [`${label}: p99, µs`, us(a.p99), us(b.p99), ratio(b.p99 / a.p99)],
      [`${label}: ops/s`, fixed(a.ops, 0), fixed(b.ops, 0), `${ratio(paired)} (${ratio(Math.min(...turnRatios))}–${ratio(Math.max(...turnRatios))})`],
    );
  }
  const smaller = built('IdSet', 'rss') < built('roaring', 'rss');
  const both = idSetFaster === kinds.length && smaller;
  const setCount = idSets.sets.filter(Boolean).length;
  const perRow = data.lexemes.length / data.rows;
  const largest = sizes.reduce((most, size) => Math.max(most, size), 0);
  const tail = sizes.filter((size) => size > 0 && size <= 10).length;
  const taken = (kind: KindName): string => fixed(hits[kind] / queryCount, 0);

  return [
    `## ${name}: ${data.about}`,
    '',
    `${data.rows.toLocaleString('en')} rows, ${setCount.toLocaleString('en')} sets (lexemes in a row or more; ${tail.toLocaleString('en')} of them in at most 10 rows), ${fixed(perRow, 1)} lexemes a row, the largest set ${fixed((100 * largest) / data.rows, 1)}% of the rows. ${queryCount.toLocaleString('en')} operations of each kind in ${turns} turns; ids taken on average: ${taken('one')} (1 word), ${taken('and')} (AND), ${taken('or')} (OR), ${taken('andNot')} (AND NOT); ${taken('has')} of 1,001 ids found by has(). Build and memory: median of ${buildTurns} process(es) each.`,
    '',
    '| | IdSet | roaring | roaring ÷ IdSet |',
    '| --- | ---: | ---: | ---: |',
    ...rows.map((cells) => `| ${cells.join(' | ')} |`),
    '',
    `IdSet faster (paired ops/s) in ${idSetFaster} of ${kinds.length} kinds, smaller by RSS: ${smaller ? 'yes' : 'no'}. By the rule (roaring unless IdSet is faster and smaller): ${both ? 'keep IdSet' : 'use roaring'}.`,
  ].join('\n');
}

async function main(): Promise<void> {
  if (process.argv[2] === '--build') {
    buildChild(process.argv[3] as ImplName, process.argv[4] as DataName);
    return;
  }
  if (!(globalThis as { gc?: unknown }).gc) log('without --expose-gc: memory is read without a full collection first');
  const sections: string[] = [];
  for (const name of dataNames) sections.push(await benchData(name));
  const cpu = os.cpus()[0]?.model ?? 'unknown CPU';
  console.log([
    '# Id sets: IdSet against roaring',
    '',
    `${new Date().toISOString().slice(0, 10)}, Node ${process.version}, roaring ${roaring.PackageVersion} (CRoaring ${roaring.CRoaringVersion}), ${cpu} × ${os.cpus().length}; ${rowCount.toLocaleString('en')} rows, seed ${seed}. Searches take the first ${limit.toLocaleString('en')} ids in id order. Ratios are roaring's over IdSet's: below 1 in time and memory, above 1 in ops/s, roaring is ahead; the ops/s ratio is the median of the turns', lowest–highest beside it.`,
    '',
    ...sections.flatMap((section) => [section, '']),
  ].join('\n').trimEnd());
  if (sink === -1) console.log(sink);
}

await main();
