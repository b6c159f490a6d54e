// Keeps a process's word index (word-index.ts) as the database is: it reads every person, work and
// word of the vocabulary at the start, and before a search the rows that changed since, as the
// notes of sql/012_search_changes.sql name them (the statements are reading.ts's). A search sees
// every change committed before it came, as the rest of the site does (docs/interface.md, Search).
// With a snapshot file (snapshot.ts), a start takes the index from there and reads only the
// changes since; the file is written after a whole reading, every few minutes while the index
// changes, and at the stop.
import os from 'node:os';
import type { Db } from '../db/index.ts';
import { apply, load, readChanges } from './reading.ts';
import type { SnapshotHeader } from './snapshot.ts';
import { openSnapshot, writeSnapshot } from './snapshot.ts';
import { WordIndex } from './word-index.ts';

/** How long change notes are kept, and how often a process looks for changes without a search. */
const keepChangesMs = 10 * 60_000;
const followMs = 30_000;
const pruneMs = 60_000;
const retryMs = 5000;
/** How often the snapshot is written again when the index has changed since: well within keepChangesMs, whose notes a start needs. */
const saveMs = 5 * 60_000;

export interface SyncOptions {
  onError: (message: string) => void;
  /** Where the snapshot is written and read; null: none. */
  snapshot?: string | null;
  /** What a start taken from the snapshot, or a snapshot not taken, is told as. */
  onNote?: (message: string) => void;
}

/** How the index has been read: catch-ups and whole readings since the start, and snapshots written and taken. */
export interface SyncStats {
  catchUps: number;
  reloads: number;
  snapshotsWritten: number;
  snapshotsTaken: number;
}

export class IndexSync {
  private index = new WordIndex();
  readonly stats: SyncStats = { catchUps: 0, reloads: 0, snapshotsWritten: 0, snapshotsTaken: 0 };
  private snapshot = '';
  /** The database's cluster and name, which a snapshot file must have been written from. */
  private database = '';
  /** The version the snapshot file was last written at; -1: not written by this process. */
  private savedVersion = -1n;
  /** The database's timeline: a standby promoted after a failover, or a backup restored, starts a new one. */
  private timeline = '';
  private version = -1n;
  /** The catch-up under way. */
  private stepping: Promise<void> | null = null;
  /** Everything being read again, in the background: searches meanwhile use the index before. */
  private reading: Promise<void> | null = null;
  private readonly timers: NodeJS.Timeout[] = [];
  private closed = false;
  /** Whether everything has been read once since the start. */
  read = false;

  constructor(
    readonly db: Db,
    private readonly options: SyncOptions,
  ) {}

  /** The index as it last caught up, for when the database cannot be asked. */
  get latest(): WordIndex {
    return this.index;
  }

  /**
   * Reads everything, again every few seconds until it succeeds; then follows changes even while
   * nobody searches, so that their notes are never gone first. Searches wait for nothing
   * meanwhile: until the first reading, `read` is false and they are refused.
   */
  async start(): Promise<void> {
    // The snapshot is tried until the database answers, then never again: a file refused is read from the database.
    let tried = !this.options.snapshot;
    let taken = false;
    for (;;) {
      try {
        if (!tried) {
          taken = await this.takeSnapshot();
          tried = true;
        }
        if (!taken) await this.reload();
        break;
      } catch (err) {
        if (this.closed) return;
        this.options.onError(
          `search index: reading it failed, trying again in ${retryMs / 1000} s: ${(err as Error).message}`,
        );
        await new Promise((resolve) => setTimeout(resolve, retryMs).unref());
      }
    }
    this.read = true;
    if (this.closed) return;
    if (!taken) void this.save();
    this.timers.push(
      setInterval(
        () => this.step().catch((err: unknown) => this.options.onError(`search index: ${(err as Error).message}`)),
        followMs,
      ).unref(),
    );
    this.timers.push(
      setInterval(
        () =>
          this.prune().catch((err: unknown) =>
            this.options.onError(`search index: deleting old change notes failed: ${(err as Error).message}`),
          ),
        pruneMs,
      ).unref(),
    );
    this.timers.push(setInterval(() => void this.save(), saveMs).unref());
  }

  /** Stops following the database; the snapshot is written first when the index changed since it was. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const timer of this.timers) clearInterval(timer);
    if (this.read) await this.save();
  }

  /** Resolves when no reading of everything is under way (for tests). */
  async whenRead(): Promise<void> {
    while (this.reading) await this.reading;
  }

  /**
   * Deletes the change notes older than keepChangesMs and remembers the highest transaction they
   * came from; notes another process is deleting at the same time are left to it. Only notes of
   * transactions older than every one still running: a snapshot taken while a transaction runs
   * for long (an import, an idle session) has it as its oldest, and a note deleted past it would
   * make every process read everything again until it ended.
   */
  async prune(): Promise<void> {
    await this.db.query(
      `WITH gone AS (
              DELETE FROM search_change WHERE ctid IN (
                SELECT ctid FROM search_change
                 WHERE at < now() - make_interval(secs => $1) AND xid < pg_snapshot_xmin(pg_current_snapshot())
                   FOR UPDATE SKIP LOCKED)
              RETURNING xid)
       UPDATE search_change_pruned SET xid = greatest(xid, (SELECT max(xid) FROM gone)) WHERE EXISTS (SELECT 1 FROM gone)`,
      [keepChangesMs / 1000],
    );
  }

  /**
   * The index with every change that the data version `wanted` counts (lib/db/data-version.ts),
   * read by the request on this database after it came; null (not read) catches up once. While
   * everything is read again, the index before, which is not `current`: its rows may be gone or
   * changed since.
   */
  async current(wanted: bigint | null): Promise<{ index: WordIndex; current: boolean }> {
    if (wanted === null) {
      if (!this.reading) await this.step();
      return { index: this.index, current: !this.reading };
    }
    // A catch-up under way may have started before the change the version counts: it is waited
    // for, and then one more if the index is still behind. Each reads at a snapshot taken after
    // the version was read, so the first that starts after it brings the index there.
    for (let i = 0; i < 3 && this.version < wanted && !this.reading; i++) {
      if (this.stepping) await this.stepping.catch(() => undefined);
      else await this.step();
    }
    return { index: this.index, current: !this.reading && this.version >= wanted };
  }

  /** One catch-up at a time: a caller that finds one under way waits for it first. */
  private step(): Promise<void> {
    return this.alone(() => this.catchUp());
  }

  /** Runs task when no catch-up or snapshot write is under way, and none starts until it is done. */
  private async alone(task: () => Promise<void>): Promise<void> {
    while (this.stepping) await this.stepping.catch(() => undefined);
    this.stepping = task().finally(() => {
      this.stepping = null;
    });
    return this.stepping;
  }

  /**
   * Writes the snapshot file when the index has changed since it was last written (never while a
   * catch-up changes it: the file is one state); a failure is logged and tried again next time.
   */
  private save(): Promise<void> {
    const path = this.options.snapshot;
    if (!path || !this.read || this.version === this.savedVersion) return Promise.resolve();
    return this.alone(async () => {
      // Written meanwhile by a call before this one, at this version.
      if (this.version === this.savedVersion) return;
      const version = this.version;
      const header: SnapshotHeader = {
        database: this.database,
        timeline: this.timeline,
        snapshot: this.snapshot,
        version: String(version),
        endianness: os.endianness(),
      };
      try {
        const started = performance.now();
        const bytes = await writeSnapshot(path, header, this.index);
        this.savedVersion = version;
        this.stats.snapshotsWritten++;
        this.options.onNote?.(
          `search index: written to ${path} (${(bytes / 2 ** 20).toFixed(0)} MB in ${((performance.now() - started) / 1000).toFixed(1)} s)`,
        );
      } catch (err) {
        this.options.onError(`search index: writing the snapshot ${path} failed: ${(err as Error).message}`);
      }
    });
  }

  /**
   * The index from the snapshot file with the changes since, when the file is there, was written
   * from this database (the same cluster, database and tables, its data version not behind the
   * file's) on its timeline, its change notes since are all kept and its bytes are the ones
   * written; else false, with the reason told (a file that is not there is said nothing of). An
   * error of the database is thrown: start() tries again.
   */
  private async takeSnapshot(): Promise<boolean> {
    const path = this.options.snapshot as string;
    const note = this.options.onNote ?? (() => undefined);
    const refused = (err: unknown) => {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT')
        note(`search index: ${path} not taken, reading everything: ${(err as Error).message}`);
      return false;
    };
    const database = await this.databaseOf();
    let file: ReturnType<typeof openSnapshot>;
    try {
      file = openSnapshot(path);
    } catch (err) {
      return refused(err);
    }
    try {
      const { header } = file;
      if (header.database !== database)
        return refused(new Error(`it was written from another database (${header.database}, not ${database})`));
      // Checked before the index is read from the file: a file refused costs no second index in memory.
      const caught = await readChanges(this.db, header.snapshot);
      if (caught.reload) return refused(new Error('changes since it was written are no longer all noted'));
      if (caught.timeline !== header.timeline)
        return refused(new Error(`the database is on another timeline (${caught.timeline}, not ${header.timeline})`));
      if (BigInt(caught.version) < BigInt(header.version))
        return refused(
          new Error(
            `the database's data version ${caught.version} is behind the file's ${header.version} (a copy from before it was restored)`,
          ),
        );
      const index = new WordIndex();
      try {
        await file.restore(index);
      } catch (err) {
        return refused(err);
      }
      apply(index, caught);
      this.index = index;
      this.database = database;
      this.snapshot = caught.snapshot;
      this.timeline = caught.timeline;
      this.version = BigInt(caught.version);
      this.savedVersion = BigInt(header.version);
      this.stats.snapshotsTaken++;
      note(
        `search index: taken from ${path} (${index.personen.lexemes.rows.size} persons, ${index.werke.lexemes.rows.size} works, version ${header.version} → ${caught.version})`,
      );
      return true;
    } finally {
      file.close();
    }
  }

  /**
   * Which database this is: the cluster's system identifier, the database's oid and name, and the
   * oids of the tables the index reads. A dump restored into a database made anew, or over its
   * tables, has other oids.
   */
  private async databaseOf(): Promise<string> {
    const [row] = await this.db.query<{ database: string }>(
      `SELECT concat_ws('/', system_identifier, (SELECT oid FROM pg_database WHERE datname = current_database()), current_database(),
                        'person'::regclass::oid, 'werk'::regclass::oid) AS database FROM pg_control_system()`,
    );
    return row?.database ?? '';
  }

  private async catchUp(): Promise<void> {
    if (this.reading) return;
    this.stats.catchUps++;
    const caught = await readChanges(this.db, this.snapshot);
    if (caught.reload || caught.timeline !== this.timeline) {
      this.readAgain();
      return;
    }
    apply(this.index, caught);
    this.snapshot = caught.snapshot;
    this.version = BigInt(caught.version);
  }

  /** Reads everything again in the background; a failure is logged, and the next catch-up tries again. */
  private readAgain(): void {
    this.reading ??= this.reload()
      .then(() => {
        if (!this.closed) void this.save();
      })
      .catch((err: unknown) =>
        this.options.onError(`search index: reading everything again failed: ${(err as Error).message}`),
      )
      .finally(() => {
        this.reading = null;
      });
  }

  /**
   * Reads everything into a new index and puts it in place of the one before. The rows are read
   * after a snapshot, each at its own: the changes since bring them all to one state (a row
   * already read as changed is read again). Changes too many to bring in (a TRUNCATE while it
   * read) make it read again, three times at most.
   */
  private async reload(): Promise<void> {
    this.stats.reloads++;
    for (let attempt = 1; ; attempt++) {
      const index = new WordIndex();
      const database = await this.databaseOf();
      const [start] = await this.db.query<{ snapshot: string }>('SELECT pg_current_snapshot()::text AS snapshot');
      await load(this.db, index);
      await index.fit();
      const caught = await readChanges(this.db, start?.snapshot ?? '');
      if (!caught.reload) {
        apply(index, caught);
        this.index = index;
        // Written anew even at the version it was written at: the timeline or the tables may be new.
        this.savedVersion = -1n;
        this.database = database;
        this.snapshot = caught.snapshot;
        this.timeline = caught.timeline;
        this.version = BigInt(caught.version);
        return;
      }
      if (attempt === 3) throw new Error('the data changed too much while the search index was read, three times');
    }
  }
}
