// A user's loan list: /entlehnte/<user_id> and entlehnte.php?uid=<user_id>. Only its owner and
// librarians may read it; everyone else gets 403, and an unknown id is 404 for a librarian only,
// so nobody else learns which ids exist (docs/interface.md, Who may read a loan list). A
// librarian POSTs here to lend a work to the user (201 with the loan's Location).
import type {
  ApiFragment,
  Document,
  Failure,
  FormField,
  Identity,
  LendCandidate,
  LinkFn,
  Loan,
  Outcome,
  ScriptRequest,
  View,
} from '../lib/page/index.ts';
import {
  change,
  findAccount,
  findOpenLoans,
  findWorksToLend,
  HttpError,
  lend,
  librariansOnly,
  loanFields,
  loanView,
  mayReadLoans,
  pageLinks,
  pagingOf,
  readId,
  readLoan,
  readNonNegativeInteger,
  rejectInvalid,
  requireLogin,
  touched,
} from '../lib/page/index.ts';

const pageSize = 50;

export interface LoanList {
  account: { id: number; username: string; person: { slug: string; vorname: string; nachname: string } | null };
  offset: number;
  size: number;
  total: number;
  previous: number | null;
  next: number | null;
  loans: Loan[];
  /** The lend form and the return buttons, for a librarian with a session; null for everyone else. */
  manage: {
    csrfToken: string;
    fields: FormField[];
    message: string | null;
    /** The search step (?suche=…): works by title or creator to lend with one button each. */
    search: { term: string; werke: LendCandidate[] } | null;
  } | null;
}

export async function GET(req: ScriptRequest): Promise<Document<LoanList>> {
  const uid = readId(req.query, 'uid');
  const offset = readNonNegativeInteger(req.query, 'offset', 0);
  return loanList(req, { uid, offset, failure: null });
}

/** A librarian lends a work to this user: the work's id or URL and an optional due date. */
export async function POST(req: ScriptRequest): Promise<Outcome> {
  const uid = readId(req.query, 'uid');
  return change(
    req,
    { back: `/entlehnte/${uid}` },
    async ({ requester, body }) => {
      if (requester.role !== 'librarian') throw librariansOnly('lend works');
      if (!(await findAccount(req.db, uid))) throw new HttpError(404, `There is no user with the id ${uid}.`);
      const { input, errors } = readLoan(body, req.link(''));
      rejectInvalid(errors, 'Nothing was lent');
      const loan = await lend(req.db, { accountId: uid, ...input });
      const path = `/entlehnte/${uid}/${input.werkId}`;
      return {
        then: `/entlehnte/${uid}`,
        document: {
          path,
          title: `${loan.werk.titel}, lent to ${loan.account.username}`,
          data: loan,
          status: 201,
          location: path,
          view: loanView,
        },
        touched: touched.nothing(),
      };
    },
    (failure) => loanList(req, { uid, offset: 0, failure }),
  );
}

async function loanList(
  req: ScriptRequest,
  options: { uid: number; offset: number; failure: Failure | null },
): Promise<Document<LoanList>> {
  const { db } = req;
  const { uid, offset, failure } = options;
  const back = `/entlehnte/${uid}`;
  const requester = await requireLogin(req, back, {
    anonymous: 'This loan list is protected. Log in as its owner or as a librarian to see it.',
    expired: 'This loan list is protected. Your session has expired; log in again to see it.',
  });
  if (!mayReadLoans(requester, uid)) {
    throw new HttpError(403, 'This loan list belongs to another user; only its owner and librarians may see it.', {
      login: back,
    });
  }
  const account = await findAccount(db, uid);
  if (!account) throw new HttpError(404, `There is no user with the id ${uid}.`);

  const { loans, total } = await findOpenLoans(db, uid, { offset, limit: pageSize });
  return {
    path: listPath(uid, offset),
    title: `Loans of ${account.username}`,
    data: {
      account: { id: account.id, username: account.username, person: account.person },
      offset,
      size: pageSize,
      total,
      ...pageLinks(offset, pageSize, total),
      loans,
      manage: await lendForm(req, requester, failure),
    },
    pages: pagingOf(offset, pageSize, total, (at) => listPath(uid, at)),
    ...(failure ? { status: failure.status } : {}),
  };
}

/** The lend form, filled with what was typed when a lending failed. */
async function lendForm(req: ScriptRequest, requester: Identity, failure: Failure | null): Promise<LoanList['manage']> {
  if (requester.role !== 'librarian' || requester.via !== 'session') {
    // Only a librarian's page has the form to show a failed lending in.
    if (failure) throw new HttpError(failure.status, failure.message, { login: `/entlehnte/${req.query.get('uid')}` });
    return null;
  }
  const state = { values: failure ? Object.fromEntries(failure.fields) : {}, errors: failure?.errors ?? [] };
  const term = (req.query.get('suche') ?? '').trim().slice(0, 200);
  const search = term === '' || failure ? null : { term, werke: await findWorksToLend(req.db, term) };
  return {
    csrfToken: await req.session.csrfToken(),
    fields: loanFields(state),
    message: failure?.message ?? null,
    search,
  };
}

export function listPath(uid: number, offset: number): string {
  return offset === 0 ? `/entlehnte/${uid}` : `/entlehnte/${uid}?offset=${offset}`;
}

function pageUrl(list: LoanList, offset: number | null, link: LinkFn): string | null {
  return offset === null ? null : link(listPath(list.account.id, offset));
}

function toJson(list: LoanList, link: LinkFn) {
  return {
    url: pageUrl(list, list.offset, link),
    benutzer: {
      name: list.account.username,
      person: list.account.person && link(`/person/${list.account.person.slug}`),
    },
    total: list.total,
    offset: list.offset,
    limit: list.size,
    previous: pageUrl(list, list.previous, link),
    next: pageUrl(list, list.next, link),
    entlehnt: list.loans.map((loan) => ({
      titel: loan.werk.titel,
      url: link(`/werk/${loan.werk.id}`),
      seit: loan.seit,
      bis: loan.bis,
      ueberfaellig: loan.ueberfaellig,
      person: { name: `${loan.person.vorname} ${loan.person.nachname}`, url: link(`/person/${loan.person.slug}`) },
    })),
  };
}

function toXml(list: LoanList, link: LinkFn) {
  const previous = pageUrl(list, list.previous, link);
  const next = pageUrl(list, list.next, link);
  return {
    entlehnte: {
      '@_ref': pageUrl(list, list.offset, link),
      '@_total': list.total,
      '@_offset': list.offset,
      '@_limit': list.size,
      benutzer: {
        '@_name': list.account.username,
        ...(list.account.person ? { '@_ref': link(`/person/${list.account.person.slug}`) } : {}),
      },
      ...(previous ? { previous: { '@_ref': previous } } : {}),
      ...(next ? { next: { '@_ref': next } } : {}),
      werk: list.loans.map((loan) => ({
        '@_ref': link(`/werk/${loan.werk.id}`),
        '@_seit': loan.seit,
        '@_bis': loan.bis,
        '@_ueberfaellig': String(loan.ueberfaellig),
        titel: loan.werk.titel,
        person: {
          '@_ref': link(`/person/${loan.person.slug}`),
          '#text': `${loan.person.vorname} ${loan.person.nachname}`,
        },
      })),
    },
  };
}

/** Its addresses in /openapi.json (lib/page/api-description.ts). */
export const api: ApiFragment = ({ params, ok, problems, body, changing, created, seeOther, loanForm }) => [
  {
    path: '/entlehnte/{uid}',
    pathParams: [params.uid],
    query: [params.offset],
    operations: {
      get: {
        summary: 'The works an account has on loan (the account itself and librarians).',
        security: [{ basic: [] }, { session: [] }],
        responses: { 200: ok('A page of the loan list.', 'entlehnte'), ...problems('403', '404', '406') },
      },
      post: {
        summary: 'Lends a work (librarians).',
        ...changing,
        requestBody: body('LoanInput', loanForm),
        responses: {
          201: created('loan', 'entlehnung'),
          303: seeOther,
          ...problems('400', '403', '404', '409', '415', '422'),
        },
      },
    },
  },
];

export const view: View = { template: 'entlehnte', toJson, toXml };
