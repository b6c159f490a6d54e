// One loan: /entlehnte/<user_id>/<work_id>, where a lending answers (201 Location). GET shows
// the latest loan of that work to that user, returned or not; a librarian DELETEs it to record
// the return (204). Readable, like the loan list, only by its owner and librarians.
import type { Identity } from '../lib/auth.ts';
import { beginChange, librariansOnly } from '../lib/change.ts';
import { HttpError, NoContent, Redirect } from '../lib/http-error.ts';
import { giveBack } from '../lib/loan-store.ts';
import type { LoanRecord } from '../lib/loan-view.ts';
import { findLoan } from '../lib/loan-view.ts';
import type { Document, Outcome, ScriptRequest } from '../lib/script.ts';
import { readId } from '../lib/script.ts';

export { loanJson as toJson, loanXml as toXml } from '../lib/loan-view.ts';

export async function GET(req: ScriptRequest): Promise<Document<LoanRecord>> {
  const uid = readId(req.query, 'uid');
  const wid = readId(req.query, 'wid');
  const requester = await req.identify();
  const back = `/entlehnte/${uid}/${wid}`;
  if (!requester) {
    const why = (await req.session.expired()) ? 'Your session has expired; log in again' : 'Log in as its borrower or as a librarian';
    throw new HttpError(403, `This loan is protected. ${why} to see it.`, { login: back });
  }
  if (!mayRead(requester, uid)) throw new HttpError(403, 'This loan belongs to another user; only its borrower and librarians may see it.', { login: back });
  const loan = await findLoan(req.db, uid, wid);
  if (!loan) throw new HttpError(404, `The work ${wid} has never been lent to the user ${uid}.`);
  return { path: back, title: `${loan.werk.titel}, lent to ${loan.account.username}`, data: loan, cacheControl: 'private, no-store' };
}

/** A librarian records the return. */
export async function DELETE(req: ScriptRequest): Promise<Outcome> {
  const uid = readId(req.query, 'uid');
  const wid = readId(req.query, 'wid');
  const { requester, body } = await beginChange(req, { back: `/entlehnte/${uid}`, bodyRequired: false });
  if (requester.role !== 'librarian') throw librariansOnly('record returns', `/entlehnte/${uid}`);
  if (!(await giveBack(req.db, { accountId: uid, werkId: wid }))) {
    throw new HttpError(404, `The work ${wid} is not on loan to the user ${uid}; nothing was changed.`);
  }
  return body?.type === 'form' ? new Redirect(`/entlehnte/${uid}`, 303) : new NoContent();
}

function mayRead(requester: Identity, uid: number): boolean {
  return requester.role === 'librarian' || requester.id === uid;
}
