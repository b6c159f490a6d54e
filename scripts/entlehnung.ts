// One loan: /entlehnte/<user_id>/<work_id>, where a lending answers (201 Location). GET shows
// the latest loan of that work to that user, returned or not; a librarian DELETEs it to record
// the return (204). Readable, like the loan list, only by its owner and librarians.
import type { ApiFragment, Document, Loan, Outcome, ScriptRequest } from '../lib/page/index.ts';
import {
  change,
  findLoan,
  giveBack,
  HttpError,
  librariansOnly,
  mayReadLoans,
  readId,
  requireLogin,
  touched,
} from '../lib/page/index.ts';

export { loanView as view } from '../lib/page/index.ts';

export async function GET(req: ScriptRequest): Promise<Document<Loan>> {
  const uid = readId(req.query, 'uid');
  const wid = readId(req.query, 'wid');
  const back = `/entlehnte/${uid}/${wid}`;
  const requester = await requireLogin(req, back, {
    anonymous: 'This loan is protected. Log in as its borrower or as a librarian to see it.',
    expired: 'This loan is protected. Your session has expired; log in again to see it.',
  });
  if (!mayReadLoans(requester, uid)) {
    throw new HttpError(403, 'This loan belongs to another user; only its borrower and librarians may see it.', {
      login: back,
    });
  }
  const loan = await findLoan(req.db, uid, wid);
  if (!loan) throw new HttpError(404, `The work ${wid} has never been lent to the user ${uid}.`);
  return { path: back, title: `${loan.werk.titel}, lent to ${loan.account.username}`, data: loan, private: true };
}

/** A librarian records the return. */
export async function DELETE(req: ScriptRequest): Promise<Outcome> {
  const uid = readId(req.query, 'uid');
  const wid = readId(req.query, 'wid');
  return change(req, { back: `/entlehnte/${uid}`, bodyless: true }, async ({ requester }) => {
    if (requester.role !== 'librarian') throw librariansOnly('record returns');
    if (!(await giveBack(req.db, { accountId: uid, werkId: wid }))) {
      throw new HttpError(404, `The work ${wid} is not on loan to the user ${uid}; nothing was changed.`);
    }
    return { then: `/entlehnte/${uid}`, touched: touched.nothing() };
  });
}

/** Its addresses in /openapi.json (lib/page/api-description.ts). */
export const api: ApiFragment = ({ params, ok, problems, changing, seeOther, noContent }) => [
  {
    path: '/entlehnte/{uid}/{wid}',
    pathParams: [params.uid, params.wid],
    operations: {
      get: {
        summary: 'One loan (the borrower and librarians).',
        security: [{ basic: [] }, { session: [] }],
        responses: { 200: ok('The loan.', 'entlehnung'), ...problems('403', '404', '406') },
      },
      delete: {
        summary: 'Records the return (librarians).',
        ...changing,
        responses: { 204: noContent, 303: seeOther, ...problems('403', '404') },
      },
    },
  },
];
