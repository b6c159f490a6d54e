// A person's slug, made from the name the way the demo data's are (Jürgen Müller:
// juergen-mueller), and kept unique: a name taken by someone else gets -2, -3 …
import type { Queryable } from './db.ts';

const umlauts: Record<string, string> = { ä: 'ae', ö: 'oe', ü: 'ue', ß: 'ss', æ: 'ae', œ: 'oe', ø: 'o', å: 'a', ł: 'l', đ: 'd', þ: 'th' };
const maxLength = 120;

/** juergen-mueller from Jürgen Müller; always contains a letter (CONTRACT 1). */
export function slugOf(vorname: string, nachname: string): string {
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
export async function freeSlug(db: Queryable, base: string, personId: number | null): Promise<string> {
  const taken = new Set((await db.query<{ slug: string }>(
    `SELECT slug FROM person WHERE (slug = $1 OR slug LIKE $2) AND id IS DISTINCT FROM $3
     UNION ALL
     SELECT slug FROM person_slug_history WHERE (slug = $1 OR slug LIKE $2) AND person_id IS DISTINCT FROM $3`,
    [base, `${base}-%`, personId],
  )).map((r) => r.slug));
  for (let n = 1; ; n++) {
    const candidate = n === 1 ? base : `${base}-${n}`;
    if (!taken.has(candidate)) return candidate;
  }
}
