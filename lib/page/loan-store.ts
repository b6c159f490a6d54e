// Lending and returning, each in one transaction. The partial unique index loan_werk_open
// decides who wins when two librarians lend one work at the same moment: one 201, one 409.
// The new loan is read in the same transaction, before the COMMIT.
import type { Db } from '../db/index.ts';
import { HttpError } from '../http/index.ts';
import { databaseErrorOf } from './change.ts';
import type { LoanInput, Loan } from './loan.ts';
import { findLoan } from './loan.ts';

// Lent for four weeks unless the librarian gives a due date.
const defaultDays = 28;

/** Lends the work; returns the new loan as stored. */
export async function lend(db: Db, loan: LoanInput & { accountId: number }): Promise<Loan> {
  try {
    return await db.transaction(async (tx) => {
      const [werk] = await tx.query('SELECT 1 FROM werk WHERE id = $1', [loan.werkId]);
      if (!werk) throw noSuchWerk(loan.werkId);
      await tx.query(
        'INSERT INTO loan (account_id, werk_id, until) VALUES ($1, $2, coalesce($3::date, current_date + $4::int))',
        [loan.accountId, loan.werkId, loan.bis, defaultDays],
      );
      return (await findLoan(tx, loan.accountId, loan.werkId)) as Loan;
    });
  } catch (err) {
    const failure = databaseErrorOf(err);
    if (failure?.code === '23505' && failure.constraint === 'loan_werk_open')
      throw await onLoanAlready(db, loan.werkId);
    if (failure?.code === '23503') throw noSuchWerk(loan.werkId);
    if (failure?.code === '23514') {
      throw new HttpError(422, 'Nothing was lent: one field is invalid.', {
        errors: [{ field: 'bis', message: 'The due date must not be before today.' }],
      });
    }
    throw err;
  }
}

/** Records the return; false when the work is not on loan to that account. */
export async function giveBack(db: Db, loan: { accountId: number; werkId: number }): Promise<boolean> {
  return db.transaction(async (tx) => {
    const rows = await tx.query(
      'UPDATE loan SET returned_at = now() WHERE account_id = $1 AND werk_id = $2 AND returned_at IS NULL RETURNING id',
      [loan.accountId, loan.werkId],
    );
    return rows.length > 0;
  });
}

function noSuchWerk(id: number): HttpError {
  return new HttpError(422, 'Nothing was lent: one field is invalid.', {
    errors: [{ field: 'werk', message: `There is no work with the id ${id}.` }],
  });
}

async function onLoanAlready(db: Db, werkId: number): Promise<HttpError> {
  const [holder] = await db.query<{ username: string; titel: string }>(
    'SELECT a.username, w.titel FROM loan l JOIN account a ON a.id = l.account_id JOIN werk w ON w.id = l.werk_id WHERE l.werk_id = $1 AND l.returned_at IS NULL',
    [werkId],
  );
  const message = holder
    ? `"${holder.titel}" is on loan to ${holder.username}; record its return first.`
    : 'The work is on loan; record its return first.';
  return new HttpError(409, `Nothing was lent: ${message}`, { errors: [{ field: 'werk', message }] });
}
