// How long a statement may run, told to PostgreSQL without startup parameters, which a pooler
// such as PgBouncer refuses when it does not know them (docs/operations.md, The database tier).
//
// On a connection of its own the session keeps its settings: they are set once, when it opens.
// Behind a pooler in transaction mode a session setting would stay on whichever server
// connection ran it and miss the next transaction: there every transaction sets its own
// (SET LOCAL, in the same message as BEGIN), and a statement outside a transaction is given
// one of its own. Transactions set them in both cases, at no cost: the message is sent anyway.

export class Timeouts {
  /** Sent once when a connection opens; null behind a pooler. */
  readonly session: string | null;
  /** BEGIN and the settings, to run before a statement outside a transaction; null unless behind a pooler. */
  readonly perStatement: string | null;
  private readonly local: string;

  constructor(statementTimeoutMs: number, pooled: boolean) {
    const settings = (scope: string) =>
      `SET ${scope}statement_timeout = ${statementTimeoutMs}; SET ${scope}idle_in_transaction_session_timeout = ${statementTimeoutMs * 2}`;
    this.local = settings('LOCAL ');
    this.session = pooled ? null : settings('');
    this.perStatement = pooled ? `BEGIN; ${this.local}` : null;
  }

  /**
   * BEGIN and the settings with a shorter statement time-out, for a statement that may not take
   * long (a search); optionally no sequential scans, and a plan kept for any values.
   */
  within(statementTimeoutMs: number, { indexScans = false, genericPlan = false } = {}): string {
    // No JIT: a plan the planner prices high (a LIMIT over a walk through the table) would be
    // compiled for half a second to run for a few milliseconds.
    // A walk through the table that may stop early (a LIMIT) starts at its first page, not where
    // another walk is (synchronize_seqscans): the same search takes the same rows each time.
    return (
      `BEGIN; ${this.local}; SET LOCAL statement_timeout = ${Math.round(statementTimeoutMs)}; SET LOCAL jit = off` +
      `${indexScans ? '; SET LOCAL enable_seqscan = off' : '; SET LOCAL synchronize_seqscans = off'}${genericPlan ? '; SET LOCAL plan_cache_mode = force_generic_plan' : ''}`
    );
  }

  /** A transaction's opening message ('BEGIN; …'), with its time-outs set right after BEGIN. */
  begin(opening: string): string {
    return opening.replace(/^BEGIN;/, `BEGIN; ${this.local};`);
  }
}
