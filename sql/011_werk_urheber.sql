-- Each work carries its creator's name as the creator facet shows it (vorname nachname): a
-- search counts its hits by creator from the rows it has read, where it looked up each hit's
-- person, about a sixth of the statement's time at a million works (docs/performance.md,
-- Search). werk_suche keeps it, with the work and when the person is renamed
-- (person_suche_werke writes the person's works again).
ALTER TABLE werk ADD COLUMN urheber text;

-- The person is locked (FOR SHARE) while its name is read: a rename that commits meanwhile
-- waits for the work's transaction, and then writes the work again with the new name
-- (person_suche_werke); a rename that came first is read as it was committed.
CREATE OR REPLACE FUNCTION werk_suche() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  beschreibung text := search_fold(NEW.beschreibung);
  art text := search_fold(NEW.art);
  name text;
  folded text;
BEGIN
  SELECT p.vorname || ' ' || p.nachname, p.suche_name INTO name, folded FROM person p WHERE p.id = NEW.person_id FOR SHARE;
  IF NOT FOUND THEN
    -- What the foreign key would say, which checks only after the row is written.
    RAISE foreign_key_violation USING
      MESSAGE = 'insert or update on table "werk" violates foreign key constraint "werk_person_id_fkey"',
      DETAIL = format('Key (person_id)=(%s) is not present in table "person".', NEW.person_id),
      TABLE = 'werk', CONSTRAINT = 'werk_person_id_fkey';
  END IF;
  NEW.urheber := name;
  NEW.suche_titel := search_fold(NEW.titel);
  -- What the fields desc, rtype and cdate hold, for phrases in any.
  NEW.suche_text := btrim(beschreibung || ' ' || art || ' ' || coalesce(NEW.jahr::text, ''));
  NEW.suche := search_werk(NEW.suche_titel, folded, beschreibung, art, NEW.jahr);
  RETURN NEW;
END;
$$;

-- Every work is written again: the GIN indexes, which would take an insert per row, are built
-- once after, and the rows' words are the index's already.
DROP INDEX werk_suche;
DROP INDEX werk_titel_trgm;
ALTER TABLE werk DISABLE TRIGGER werk_search_words_update;
UPDATE werk w SET urheber = p.vorname || ' ' || p.nachname FROM person p WHERE p.id = w.person_id;
ALTER TABLE werk ENABLE TRIGGER werk_search_words_update;
ALTER TABLE werk ALTER COLUMN urheber SET NOT NULL;
-- A statement that writes the name itself gets the person's name all the same.
DROP TRIGGER werk_suche ON werk;
CREATE TRIGGER werk_suche BEFORE INSERT OR UPDATE OF titel, beschreibung, art, jahr, person_id, urheber ON werk
  FOR EACH ROW EXECUTE FUNCTION werk_suche();
CREATE INDEX werk_titel_trgm ON werk USING gin (titel gin_trgm_ops) WITH (fastupdate = off);
CREATE INDEX werk_suche ON werk USING gin (search_blocked(suche, id)) WITH (fastupdate = off);
ANALYZE werk;
