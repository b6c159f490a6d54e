// Writing persons, each change in one transaction: a new slug when the name changes (the old
// one stays in the history and answers 301), and on delete every path of the person and
// their works noted as gone (410). A failure half-way leaves the database as it was. What the
// answer shows is read in the same transaction: once it has committed, nothing is left to fail.
import type { Identity } from '../auth/index.ts';
import type { Db, Queryable } from '../db/index.ts';
import { HttpError } from '../http/index.ts';
import { databaseErrorOf, mayChangePerson, notYours } from './change.ts';
import { buryPerson, recordSlugChange, reuseSlug } from './history.ts';
import type { Person, PersonInput } from './person.ts';
import { findPerson } from './person.ts';

/** Inserts a person; returns the new person as stored. */
export async function insertPerson(db: Db, input: PersonInput & { username: string }): Promise<Person> {
  return db
    .transaction(async (tx) => {
      const slug = await freeSlug(tx, slugOf(input.vorname, input.nachname), null);
      await reuseSlug(tx, slug);
      const [row] = await tx.query<{ id: number }>(
        'INSERT INTO person (slug, vorname, nachname, username, image) VALUES ($1, $2, $3, $4, $5) RETURNING id',
        [slug, input.vorname, input.nachname, input.username, input.image],
      );
      return (await findPerson(tx, { id: (row as { id: number }).id })) as Person;
    })
    .catch(refusal('The person was not created'));
}

/** Replaces a person's fields; returns the person as stored, with a new slug if the name changed. */
export async function updatePerson(
  db: Db,
  change: { id: number; input: PersonInput; requester: Identity },
): Promise<Person> {
  const { id, input } = change;
  return db
    .transaction(async (tx) => {
      const current = await lockPerson(tx, id);
      if (!(await mayChangePerson(tx, change.requester, id))) throw notYours(`${current.vorname} ${current.nachname}`);
      let slug = current.slug;
      if (current.vorname !== input.vorname || current.nachname !== input.nachname) {
        slug = await freeSlug(tx, slugOf(input.vorname, input.nachname), id);
        if (slug !== current.slug) await recordSlugChange(tx, { personId: id, from: current.slug, to: slug });
      }
      await tx.query(
        `UPDATE person SET slug = $2, vorname = $3, nachname = $4, username = coalesce($5, username), image = $6, updated_at = now()
        WHERE id = $1`,
        [id, slug, input.vorname, input.nachname, input.username, input.image],
      );
      return (await findPerson(tx, { id })) as Person;
    })
    .catch(refusal('The person was not changed'));
}

/** Sets a person's picture (a path of an uploaded one); returns the person as stored. */
export async function setPersonImage(
  db: Db,
  change: { id: number; image: string; requester: Identity },
): Promise<Person> {
  return db
    .transaction(async (tx) => {
      const current = await lockPerson(tx, change.id);
      if (!(await mayChangePerson(tx, change.requester, change.id)))
        throw notYours(`${current.vorname} ${current.nachname}`);
      await tx.query('UPDATE person SET image = $2, updated_at = now() WHERE id = $1', [change.id, change.image]);
      return (await findPerson(tx, { id: change.id })) as Person;
    })
    .catch(refusal('The picture was not changed'));
}

/** Deletes a person and their works; 409 while one of the works is on loan. */
export async function deletePerson(db: Db, change: { id: number; requester: Identity }): Promise<void> {
  await db.transaction(async (tx) => {
    const current = await lockPerson(tx, change.id);
    if (!(await mayChangePerson(tx, change.requester, change.id)))
      throw notYours(`${current.vorname} ${current.nachname}`);
    const onLoan = await tx.query<{ titel: string }>(
      `SELECT w.titel FROM werk w JOIN loan l ON l.werk_id = w.id AND l.returned_at IS NULL WHERE w.person_id = $1 ORDER BY w.titel`,
      [change.id],
    );
    if (onLoan.length > 0) {
      const titles = onLoan.map((w) => `"${w.titel}"`).join(', ');
      throw new HttpError(
        409,
        `The person was not deleted: ${titles} ${onLoan.length === 1 ? 'is' : 'are'} on loan; a librarian records the return first.`,
      );
    }
    await buryPerson(tx, change.id);
    await tx.query('DELETE FROM person WHERE id = $1', [change.id]);
  });
}

async function lockPerson(tx: Queryable, id: number): Promise<{ slug: string; vorname: string; nachname: string }> {
  const [row] = await tx.query<{ slug: string; vorname: string; nachname: string }>(
    'SELECT slug, vorname, nachname FROM person WHERE id = $1 FOR UPDATE',
    [id],
  );
  if (!row) throw new HttpError(404, 'The person was deleted a moment ago.');
  return row;
}

/** Constraint violations as answers: a taken user name is 422, a slug taken at the same moment 409. */
function refusal(what: string) {
  return (err: unknown): never => {
    const failure = databaseErrorOf(err);
    if (failure?.code === '23505' && failure.constraint === 'person_username_key') {
      throw new HttpError(422, `${what}: one field is invalid.`, {
        errors: [{ field: 'username', message: 'This user name belongs to another person; choose another.' }],
      });
    }
    if (failure?.code === '23505' && failure.constraint === 'person_slug_key') {
      throw new HttpError(409, `${what}: another change took the same address at the same moment; send it again.`);
    }
    throw err;
  };
}

// A person's slug is made from the name the way the demo data's are (Jürgen Müller:
// juergen-mueller) and kept unique: a name taken by someone else gets -2, -3 …
const umlauts: Record<string, string> = {
  ä: 'ae',
  ö: 'oe',
  ü: 'ue',
  ß: 'ss',
  æ: 'ae',
  œ: 'oe',
  ø: 'o',
  å: 'a',
  ł: 'l',
  đ: 'd',
  þ: 'th',
};
const maxLength = 120;

/** juergen-mueller from Jürgen Müller; always contains a letter, so /person/42 stays an id. */
function slugOf(vorname: string, nachname: string): string {
  const slug = `${vorname} ${nachname}`
    .toLowerCase()
    .replace(/[äöüßæœøåłđþ]/g, (c) => umlauts[c] as string)
    .normalize('NFD')
    .replace(/[\u0300-\u036f]/g, '')
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, maxLength - 4)
    .replace(/-+$/, '');
  return /[a-z]/.test(slug) ? slug : `person-${slug}`.replace(/-$/, '');
}

/**
 * The first of base, base-2, base-3 … that no other person has now or had before (their old
 * links must keep leading to them). The person's own old slugs may come back.
 */
async function freeSlug(db: Queryable, base: string, personId: number | null): Promise<string> {
  const taken = new Set(
    (
      await db.query<{ slug: string }>(
        `SELECT slug FROM person WHERE (slug = $1 OR slug LIKE $2) AND id IS DISTINCT FROM $3
     UNION ALL
     SELECT slug FROM person_slug_history WHERE (slug = $1 OR slug LIKE $2) AND person_id IS DISTINCT FROM $3`,
        [base, `${base}-%`, personId],
      )
    ).map((r) => r.slug),
  );
  for (let n = 1; ; n++) {
    const candidate = n === 1 ? base : `${base}-${n}`;
    if (!taken.has(candidate)) return candidate;
  }
}
