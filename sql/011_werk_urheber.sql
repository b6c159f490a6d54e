-- Each work carries its creator's name as the creator facet shows it (vorname nachname): a
-- search counts its hits by creator from the rows it has read, where it looked up each hit's
-- person, about a sixth of the statement's time at a million works (docs/performance.md,
-- Search). werk_suche keeps it, with the work and when the person is renamed
-- (person_suche_werke writes the person's works again).
ALTER TABLE werk ADD COLUMN urheber text;

CREATE OR REPLACE FUNCTION werk_suche() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  beschreibung text := search_fold(NEW.beschreibung);
  art text := search_fold(NEW.art);
  creator person%ROWTYPE;
BEGIN
  SELECT * INTO creator FROM person p WHERE p.id = NEW.person_id;
  NEW.urheber := creator.vorname || ' ' || creator.nachname;
  NEW.suche_titel := search_fold(NEW.titel);
  -- What the fields desc, rtype and cdate hold, for phrases in any.
  NEW.suche_text := btrim(beschreibung || ' ' || art || ' ' || coalesce(NEW.jahr::text, ''));
  NEW.suche := search_werk(NEW.suche_titel, creator.suche_name, beschreibung, art, NEW.jahr);
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
CREATE INDEX werk_titel_trgm ON werk USING gin (titel gin_trgm_ops) WITH (fastupdate = off);
CREATE INDEX werk_suche ON werk USING gin (search_blocked(suche, id)) WITH (fastupdate = off);
ANALYZE werk;
