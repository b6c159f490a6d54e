// One loan: /entlehnte/<user_id>/<work_id>, the URL a lending answers with (201 Location).
// It shows the latest loan of that work to that user, so the link keeps working after the
// return, which it then states (zurueck).
import type { Queryable } from './db.ts';
import type { LinkFn, View } from './script.ts';

export interface LoanRecord {
  account: { id: number; username: string };
  werk: { id: number; titel: string };
  person: { slug: string; vorname: string; nachname: string };
  /** YYYY-MM-DD */
  seit: string;
  bis: string;
  /** The day it came back, or null while it is out. */
  zurueck: string | null;
  ueberfaellig: boolean;
}

export async function findLoan(db: Queryable, accountId: number, werkId: number): Promise<LoanRecord | null> {
  const [loan] = await db.query<LoanRecord>(
    `SELECT json_build_object('id', a.id, 'username', a.username) AS account,
            json_build_object('id', w.id, 'titel', w.titel) AS werk,
            json_build_object('slug', p.slug, 'vorname', p.vorname, 'nachname', p.nachname) AS person,
            to_char(l.since, 'YYYY-MM-DD') AS seit, to_char(l.until, 'YYYY-MM-DD') AS bis,
            to_char(l.returned_at, 'YYYY-MM-DD') AS zurueck,
            l.returned_at IS NULL AND l.until < current_date AS ueberfaellig
       FROM loan l JOIN account a ON a.id = l.account_id JOIN werk w ON w.id = l.werk_id JOIN person p ON p.id = w.person_id
      WHERE l.account_id = $1 AND l.werk_id = $2
      ORDER BY l.returned_at IS NULL DESC, l.since DESC, l.id DESC
      LIMIT 1`,
    [accountId, werkId],
  );
  return loan ?? null;
}

export function loanPath(loan: { account: { id: number }; werk: { id: number } }): string {
  return `/entlehnte/${loan.account.id}/${loan.werk.id}`;
}

export function loanJson(loan: LoanRecord, link: LinkFn) {
  return {
    url: link(loanPath(loan)),
    benutzer: { name: loan.account.username, entlehnte: link(`/entlehnte/${loan.account.id}`) },
    werk: { titel: loan.werk.titel, url: link(`/werk/${loan.werk.id}`) },
    person: { name: `${loan.person.vorname} ${loan.person.nachname}`, url: link(`/person/${loan.person.slug}`) },
    seit: loan.seit,
    bis: loan.bis,
    zurueck: loan.zurueck,
    ueberfaellig: loan.ueberfaellig,
  };
}

export function loanXml(loan: LoanRecord, link: LinkFn) {
  return {
    entlehnung: {
      '@_ref': link(loanPath(loan)),
      '@_seit': loan.seit,
      '@_bis': loan.bis,
      ...(loan.zurueck ? { '@_zurueck': loan.zurueck } : {}),
      '@_ueberfaellig': String(loan.ueberfaellig),
      benutzer: { '@_name': loan.account.username, '@_ref': link(`/entlehnte/${loan.account.id}`) },
      werk: { '@_ref': link(`/werk/${loan.werk.id}`), '#text': loan.werk.titel },
      person: { '@_ref': link(`/person/${loan.person.slug}`), '#text': `${loan.person.vorname} ${loan.person.nachname}` },
    },
  };
}

export const loanView: View = { template: 'entlehnung', toJson: loanJson, toXml: loanXml };
