// Writing works, each change in one transaction, with the same rule as persons: the owner of
// the person or a librarian, checked on the locked row; a deleted work's path answers 410.
// What the answer shows is read in the same transaction, before the COMMIT.
import type { Identity } from '../auth/index.ts';
import type { Db, Queryable } from '../db/index.ts';
import { HttpError } from '../http/index.ts';
import { mayChangePerson, notYours } from './change.ts';
import { buryWerk } from './history.ts';
import type { Werk, WerkInput } from './werk.ts';
import { findWerk } from './werk.ts';

interface WerkChange {
  requester: Identity;
}

/** Adds a work to a person; returns it as stored. */
export async function insertWerk(db: Db, change: WerkChange & { personId: number; input: WerkInput }): Promise<Werk> {
  return db.transaction(async (tx) => {
    const [person] = await tx.query<{ name: string }>(
      `SELECT vorname || ' ' || nachname AS name FROM person WHERE id = $1 FOR SHARE`,
      [change.personId],
    );
    if (!person) throw new HttpError(404, 'The person was deleted a moment ago.');
    if (!(await mayChangePerson(tx, change.requester, change.personId))) throw notYours(`the works of ${person.name}`);
    const { titel, jahr, art, beschreibung } = change.input;
    const [row] = await tx.query<{ id: number }>(
      'INSERT INTO werk (person_id, titel, jahr, art, beschreibung) VALUES ($1, $2, $3, $4, $5) RETURNING id',
      [change.personId, titel, jahr, art, beschreibung],
    );
    return (await findWerk(tx, (row as { id: number }).id)) as Werk;
  });
}

/** Replaces a work's fields; returns it as stored. */
export async function updateWerk(db: Db, change: WerkChange & { id: number; input: WerkInput }): Promise<Werk> {
  return db.transaction(async (tx) => {
    await lockOwnWerk(tx, change.id, change);
    const { titel, jahr, art, beschreibung } = change.input;
    await tx.query(
      'UPDATE werk SET titel = $2, jahr = $3, art = $4, beschreibung = $5, updated_at = now() WHERE id = $1',
      [change.id, titel, jahr, art, beschreibung],
    );
    return (await findWerk(tx, change.id)) as Werk;
  });
}

/** Deletes a work; 409 while it is on loan. Returns the slug of its person. */
export async function deleteWerk(db: Db, change: WerkChange & { id: number }): Promise<string> {
  return db.transaction(async (tx) => {
    const werk = await lockOwnWerk(tx, change.id, change);
    const [loan] = await tx.query<{ username: string }>(
      'SELECT a.username FROM loan l JOIN account a ON a.id = l.account_id WHERE l.werk_id = $1 AND l.returned_at IS NULL',
      [change.id],
    );
    // Who borrowed it is the borrower's and the librarians' business, not the owner's.
    if (loan && change.requester.role === 'librarian')
      throw new HttpError(409, `The work was not deleted: it is on loan to ${loan.username}; record its return first.`);
    if (loan)
      throw new HttpError(409, 'The work was not deleted: it is on loan; a librarian records the return first.');
    await buryWerk(tx, change.id);
    await tx.query('DELETE FROM werk WHERE id = $1', [change.id]);
    return werk.slug;
  });
}

async function lockOwnWerk(
  tx: Queryable,
  id: number,
  change: WerkChange,
): Promise<{ personId: number; slug: string; titel: string }> {
  const [werk] = await tx.query<{ personId: number; slug: string; titel: string }>(
    'SELECT w.person_id AS "personId", p.slug, w.titel FROM werk w JOIN person p ON p.id = w.person_id WHERE w.id = $1 FOR UPDATE OF w',
    [id],
  );
  if (!werk) throw new HttpError(404, 'The work was deleted a moment ago.');
  if (!(await mayChangePerson(tx, change.requester, werk.personId))) throw notYours(`"${werk.titel}"`);
  return werk;
}
