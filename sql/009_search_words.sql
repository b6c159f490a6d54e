-- Search by words (docs/interface.md, Search): every person and work carries the words of its
-- fields as lexemes of one tsvector, folded for German and tagged with their field and kind,
-- so one GIN index answers a word in any field and tells the fields apart:
--   t: title  c: creator  d: description  r: type  y: year      (the whole word: t:haus)
--   ts: cs: ds: rs:                                                (its German stem: ts:haus)
-- A query names the tags it wants (lib/search/atoms.ts); phrases, exact and begins_with are
-- checked again on the folded text (werk.suche_titel, werk.suche_text, person.suche_name).
-- Words are lower case ASCII letters and digits: the Latin letters with accents lose them,
-- ä ö ü become a o u, ae oe ue become a o u too (not the ue after q: Quelle), ß becomes ss.
-- So Müller, Mueller and Muller are one word.

CREATE FUNCTION search_fold(t text) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN btrim(
  -- ue after q stays (Quelle): kept aside in capitals, which nothing else here has.
  replace(replace(replace(replace(replace(
    regexp_replace(
      -- Accents go with the decomposition (NFD); the letters that have none are mapped. The
      -- ASCII-only lower() after that does not depend on the database's locale.
      lower(translate(
        regexp_replace(normalize(
          replace(replace(replace(replace(replace(replace(coalesce(t, ''), 'ß', 'ss'), 'ẞ', 'ss'), 'æ', 'ae'), 'Æ', 'ae'), 'œ', 'oe'), 'Œ', 'oe'),
          NFD), '[\u0300-\u036f]', '', 'g'),
        'øØđĐłŁı', 'ooddlli')),
      '[^a-z0-9]+', ' ', 'g'),
    'ae', 'a'), 'oe', 'o'), 'que', 'QUE'), 'ue', 'u'), 'QUE', 'que'));

-- The lexemes of one field from its folded text: its words and their German stems, tagged.
-- Stop words (der, und, im …) are left out: in every other title and description, their
-- entries would be a million long, and reading one costs more than finding the rows that have
-- them by their text (lib/search/atoms.ts). to_tsvector drops them and numbers the words it keeps
-- by their place in the text, which finds the whole word of each stem.
-- PL/pgSQL, not SQL: PostgreSQL keeps its plans for the session, where it would plan the body of
-- an SQL function that is not inlined again on every call (3x slower per work).
CREATE FUNCTION search_lexemes(tag text, folded text) RETURNS text[] LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
  -- A "word" of more than 100 letters is no word anyone searches for (and to_tsvector refuses
  -- one of 2 KB).
  words text[] := ARRAY(SELECT w FROM unnest(string_to_array(folded, ' ')) AS w WHERE w <> '' AND length(w) <= 100);
  v tsvector := to_tsvector('german', array_to_string(words, ' '));
BEGIN
  RETURN ARRAY(SELECT DISTINCT tag || ':' || words[p] FROM unnest(v) AS u, unnest(u.positions) AS p WHERE words[p] IS NOT NULL)
      || ARRAY(SELECT tag || 's:' || u.lexeme FROM unnest(v) AS u);
END;
$$;

-- A work's tsvector from its folded fields.
CREATE FUNCTION search_werk(titel text, creator text, beschreibung text, art text, jahr integer) RETURNS tsvector
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
BEGIN
  RETURN array_to_tsvector(
    search_lexemes('t', titel) || search_lexemes('c', creator) || search_lexemes('d', beschreibung)
    || search_lexemes('r', art) || CASE WHEN jahr IS NULL THEN '{}'::text[] ELSE ARRAY['y:' || jahr] END);
END;
$$;

ALTER TABLE person ADD COLUMN suche tsvector, ADD COLUMN suche_name text;
ALTER TABLE werk ADD COLUMN suche tsvector, ADD COLUMN suche_titel text, ADD COLUMN suche_text text;

CREATE FUNCTION person_suche() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.suche_name := search_fold(NEW.vorname || ' ' || NEW.nachname);
  NEW.suche := array_to_tsvector(search_lexemes('c', NEW.suche_name));
  RETURN NEW;
END;
$$;

CREATE FUNCTION werk_suche() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  beschreibung text := search_fold(NEW.beschreibung);
  art text := search_fold(NEW.art);
BEGIN
  NEW.suche_titel := search_fold(NEW.titel);
  -- What the fields desc, rtype and cdate hold, for phrases in any.
  NEW.suche_text := btrim(beschreibung || ' ' || art || ' ' || coalesce(NEW.jahr::text, ''));
  NEW.suche := search_werk(NEW.suche_titel, (SELECT p.suche_name FROM person p WHERE p.id = NEW.person_id), beschreibung, art, NEW.jahr);
  RETURN NEW;
END;
$$;

-- A renamed person's works carry the new name as their creator (werk_suche reads it).
CREATE FUNCTION person_suche_werke() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE werk SET person_id = person_id WHERE person_id = NEW.id;
  RETURN NULL;
END;
$$;

CREATE TRIGGER person_suche BEFORE INSERT OR UPDATE OF vorname, nachname ON person
  FOR EACH ROW EXECUTE FUNCTION person_suche();
CREATE TRIGGER person_suche_werke AFTER UPDATE OF vorname, nachname ON person
  FOR EACH ROW WHEN (OLD.vorname IS DISTINCT FROM NEW.vorname OR OLD.nachname IS DISTINCT FROM NEW.nachname)
  EXECUTE FUNCTION person_suche_werke();
CREATE TRIGGER werk_suche BEFORE INSERT OR UPDATE OF titel, beschreibung, art, jahr, person_id ON werk
  FOR EACH ROW EXECUTE FUNCTION werk_suche();

-- Every word the index has seen, with the spelling it was first seen in (müller for muller):
-- compound parts and wildcards are looked up here (schicht → nachtschicht), and so is the
-- closest spelling a search without hits offers. Words stay when their last work goes: a
-- word that finds nothing costs one index probe.
CREATE TABLE search_word (
  word  text PRIMARY KEY,
  shown text NOT NULL
);
CREATE INDEX search_word_trgm ON search_word USING gin (word gin_trgm_ops);

-- The words of the rows a statement wrote that the index has not seen yet, each with a
-- spelling as written (lower case). A text's folded words and its pieces between spaces and
-- punctuation are taken side by side; a piece that does not fold to its word (a sign the
-- folding drops, such as ©, shifted them) gives way to the folded word itself.
CREATE FUNCTION search_pieces(t text) RETURNS text[] LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN regexp_split_to_array(
  regexp_replace(coalesce(t, ''), '^[[:space:][:punct:]„“”‚‘’«»–—…·]+|[[:space:][:punct:]„“”‚‘’«»–—…·]+$', '', 'g'),
  '[[:space:][:punct:]„“”‚‘’«»–—…·]+');

-- The new ones among the folded words f, each with its piece r as written, side by side.
CREATE FUNCTION search_remember(f text[], r text[]) RETURNS void LANGUAGE sql AS $$
  WITH pairs AS MATERIALIZED (
         SELECT x.f, x.r FROM unnest(f, r) AS x(f, r) WHERE x.f <> '' AND length(x.f) <= 100),
       new AS (
         SELECT d.f FROM (SELECT DISTINCT f FROM pairs) AS d
          WHERE NOT EXISTS (SELECT 1 FROM search_word s WHERE s.word = d.f))
  INSERT INTO search_word (word, shown)
  SELECT DISTINCT ON (p.f) p.f, CASE WHEN search_fold(p.r) = p.f THEN lower(p.r) ELSE p.f END
    FROM pairs p JOIN new n ON n.f = p.f
   ORDER BY p.f, search_fold(p.r) = p.f DESC, p.r
  ON CONFLICT (word) DO NOTHING
$$;

CREATE FUNCTION remember_search_words() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_TABLE_NAME = 'werk' THEN
    PERFORM search_remember(array_agg(x.f), array_agg(x.r))
       FROM fresh, LATERAL unnest(string_to_array(fresh.suche_titel || ' ' || fresh.suche_text, ' '),
                                  search_pieces(fresh.titel) || search_pieces(fresh.beschreibung || ' ' || fresh.art || ' ' || coalesce(fresh.jahr::text, ''))) AS x(f, r);
  ELSE
    PERFORM search_remember(array_agg(x.f), array_agg(x.r))
       FROM fresh, LATERAL unnest(string_to_array(fresh.suche_name, ' '), search_pieces(fresh.vorname || ' ' || fresh.nachname)) AS x(f, r);
  END IF;
  RETURN NULL;
END;
$$;

-- Once per statement, over all its rows: a bulk load looks each word up once.
CREATE TRIGGER werk_search_words_insert AFTER INSERT ON werk REFERENCING NEW TABLE AS fresh
  FOR EACH STATEMENT EXECUTE FUNCTION remember_search_words();
CREATE TRIGGER werk_search_words_update AFTER UPDATE ON werk REFERENCING NEW TABLE AS fresh
  FOR EACH STATEMENT EXECUTE FUNCTION remember_search_words();
CREATE TRIGGER person_search_words_insert AFTER INSERT ON person REFERENCING NEW TABLE AS fresh
  FOR EACH STATEMENT EXECUTE FUNCTION remember_search_words();
CREATE TRIGGER person_search_words_update AFTER UPDATE ON person REFERENCING NEW TABLE AS fresh
  FOR EACH STATEMENT EXECUTE FUNCTION remember_search_words();

-- The rows there are: persons first, so their works find the names.
UPDATE person SET vorname = vorname;
UPDATE werk SET titel = titel;

CREATE INDEX person_suche ON person USING gin (suche) WITH (fastupdate = off);
CREATE INDEX werk_suche ON werk USING gin (suche) WITH (fastupdate = off);
ANALYZE person;
ANALYZE werk;
ANALYZE search_word;
