// What became of a COMMIT that got no answer (the server hung, or the connection broke while the
// COMMIT was on its way): asked from a fresh connection with pg_xact_status, so a change is
// answered as saved only if it was saved, and as failed only if it was not.
// https://www.postgresql.org/docs/current/functions-info.html#FUNCTIONS-PG-SNAPSHOT
import pg from 'pg';

/** What a transaction notes when it begins, read in the same roundtrip as BEGIN. */
export interface CommitMark {
  /** pg_current_xact_id(): the transaction's id, epoch included (xid8), as text. */
  xid: string;
  /** pg_current_wal_flush_lsn() right after the id was assigned. */
  flushedLsn: string;
}

/** BEGIN and the mark in one simple-query message: no roundtrip more than BEGIN alone. */
export const beginWithMark =
  'BEGIN; SELECT pg_current_xact_id()::text AS xid, pg_current_wal_flush_lsn()::text AS "flushedLsn"';

type CommitOutcome = 'committed' | 'aborted' | 'unknown';

export interface OutcomeOptions {
  connectionString: string;
  connectTimeoutMs: number;
  /** How long to keep asking; 'unknown' after that. */
  timeoutMs: number;
  /** The pause between two questions. */
  intervalMs?: number;
}

/**
 * Asks until the transaction has ended or timeoutMs have passed. While the server is down or
 * hung no connection succeeds; while the old session has not yet read its COMMIT (a server
 * that was frozen resumes) the transaction is still in progress: both are asked again.
 */
export async function findCommitOutcome(mark: CommitMark, options: OutcomeOptions): Promise<CommitOutcome> {
  const deadline = performance.now() + options.timeoutMs;
  const intervalMs = options.intervalMs ?? 100;
  let client: pg.Client | null = null;
  try {
    while (performance.now() < deadline) {
      try {
        client ??= await connect(options, deadline);
        const outcome = await askOutcome(client, mark);
        if (outcome !== 'in progress') return outcome;
      } catch {
        // Refused, starting up, shutting down, or no answer in time: ask again on a new connection.
        client?.end().catch(() => {});
        client = null;
      }
      await sleep(Math.min(intervalMs, Math.max(0, deadline - performance.now())));
    }
    return 'unknown';
  } finally {
    client?.end().catch(() => {});
  }
}

async function connect(options: OutcomeOptions, deadline: number): Promise<pg.Client> {
  const remaining = Math.max(1, Math.round(deadline - performance.now()));
  const client = new pg.Client({
    connectionString: options.connectionString,
    connectionTimeoutMillis: Math.min(options.connectTimeoutMs, remaining),
    query_timeout: remaining,
    application_name: 'portfolio commit outcome',
  });
  client.on('error', () => {}); // a lost connection fails the next question, which is asked again
  try {
    await client.connect();
  } catch (err) {
    client.end().catch(() => {});
    throw err;
  }
  return client;
}

async function askOutcome(client: pg.Client, mark: CommitMark): Promise<CommitOutcome | 'in progress'> {
  if (await lostInCrash(client, mark)) return 'aborted';
  try {
    const { rows } = await client.query<{ status: string | null }>('SELECT pg_xact_status($1::xid8) AS status', [
      mark.xid,
    ]);
    const status = rows[0]?.status ?? null;
    if (status === 'committed' || status === 'aborted' || status === 'in progress') return status;
    return 'unknown'; // too old for the commit log: cannot happen within seconds
  } catch (err) {
    // "transaction ID … is in the future": no trace of it reached the disk before a crash.
    if ((err as { code?: string }).code === '22023') return 'aborted';
    throw err;
  }
}

/**
 * After a crash PostgreSQL hands out again the ids of transactions whose WAL never reached the
 * disk, so pg_xact_status would then answer for another transaction. Those ids are at or above
 * the next id that the restart's checkpoint recorded (an end-of-recovery or shutdown checkpoint,
 * whose redo point is the record itself, written after the WAL flushed when the mark was read).
 */
async function lostInCrash(client: pg.Client, mark: CommitMark): Promise<boolean> {
  const { rows } = await client.query<{ restarted: boolean; nextXid: string }>(
    `SELECT redo_lsn = checkpoint_lsn AND checkpoint_lsn >= $1::pg_lsn AS restarted, next_xid AS "nextXid"
       FROM pg_control_checkpoint()`,
    [mark.flushedLsn],
  );
  const checkpoint = rows[0];
  if (!checkpoint?.restarted) return false;
  const [epoch, xid] = checkpoint.nextXid.split(':').map(BigInt) as [bigint, bigint];
  return BigInt(mark.xid) >= (epoch << 32n) + xid;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
