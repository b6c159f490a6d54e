// Keeps links working after a change: a person's old slugs lead to the current one (301), and
// the paths of deleted persons and works answer 410 (docs/interface.md, URLs). Read only after
// a look-up missed, so the hot path of a document stays one query.
import type { Queryable } from '../db/index.ts';

/** The current slug of the person who once had this slug, or null. */
export async function movedSlug(db: Queryable, slug: string): Promise<string | null> {
  const [row] = await db.query<{ slug: string }>(
    'SELECT p.slug FROM person_slug_history h JOIN person p ON p.id = h.person_id WHERE h.slug = $1',
    [slug],
  );
  return row?.slug ?? null;
}

/** Whether a deleted person or work had this path. */
export async function isGone(db: Queryable, path: string): Promise<boolean> {
  return (await db.query('SELECT 1 FROM gone WHERE path = $1', [path])).length > 0;
}

/** Notes a person's slug change: the old slug leads to the person, the new one is no longer history or gone. */
export async function recordSlugChange(
  tx: Queryable,
  change: { personId: number; from: string; to: string },
): Promise<void> {
  await tx.query('DELETE FROM person_slug_history WHERE slug = $1', [change.to]);
  await tx.query(
    'INSERT INTO person_slug_history (slug, person_id) VALUES ($1, $2) ON CONFLICT (slug) DO UPDATE SET person_id = EXCLUDED.person_id, replaced_at = now()',
    [change.from, change.personId],
  );
  await tx.query('DELETE FROM gone WHERE path = $1', [`/person/${change.to}`]);
}

/** A slug taken by a new person is no longer gone. */
export async function reuseSlug(tx: Queryable, slug: string): Promise<void> {
  await tx.query('DELETE FROM gone WHERE path = $1', [`/person/${slug}`]);
}

/** Every path of a person about to be deleted, old slugs and works included, answers 410 from now on. */
export async function buryPerson(tx: Queryable, personId: number): Promise<void> {
  await tx.query(
    `INSERT INTO gone (path)
     SELECT '/person/' || id FROM person WHERE id = $1
     UNION SELECT '/person/' || slug FROM person WHERE id = $1
     UNION SELECT '/person/' || slug FROM person_slug_history WHERE person_id = $1
     UNION SELECT '/werk/' || id FROM werk WHERE person_id = $1
     ON CONFLICT (path) DO UPDATE SET deleted_at = now()`,
    [personId],
  );
}

export async function buryWerk(tx: Queryable, werkId: number): Promise<void> {
  await tx.query(
    `INSERT INTO gone (path) VALUES ('/werk/' || $1::int) ON CONFLICT (path) DO UPDATE SET deleted_at = now()`,
    [werkId],
  );
}
