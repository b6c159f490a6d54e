-- Stop words in the index (docs/interface.md, Search): every word of a field is a whole-word
-- lexeme now, der and im as much as hafen; their stems stay out (to_tsvector drops them). A
-- stop word's entry is as long as the table, but a search reads it only beside a rarer word:
-- GIN walks the rarer word's entries and skips through the long one to those rows, where a
-- check of the text read every row the rarer word found (100 ms for "die kalte" at a million
-- works). A search of stop words alone still reads rows until it has enough (lib/search/plan.ts).
CREATE OR REPLACE FUNCTION search_lexemes(tag text, folded text) RETURNS text[] LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
  -- A "word" of more than 100 letters is no word anyone searches for (and to_tsvector refuses
  -- one of 2 KB).
  words text[] := ARRAY(SELECT w FROM unnest(string_to_array(folded, ' ')) AS w WHERE w <> '' AND length(w) <= 100);
BEGIN
  RETURN ARRAY(SELECT DISTINCT tag || ':' || w FROM unnest(words) AS w)
      || ARRAY(SELECT tag || 's:' || u.lexeme FROM unnest(to_tsvector('german', array_to_string(words, ' '))) AS u);
END;
$$;

-- The rows there are get the stop words of their fields added, which is what search_lexemes
-- now gives them, without folding and stemming every text again: the stop words are those of
-- search_word that to_tsvector drops, a type's words are folded once per type, and a work's
-- description is the words of suche_text before its type's and year's.
CREATE FUNCTION pg_temp.stop_lexemes(tag text, words text[], stops text[]) RETURNS text[] LANGUAGE sql IMMUTABLE
RETURN ARRAY(SELECT DISTINCT tag || ':' || w FROM unnest(words) AS w WHERE w = ANY(stops));
CREATE TEMP TABLE search_stop ON COMMIT DROP AS
  SELECT coalesce(array_agg(word), '{}') AS words FROM search_word
   WHERE length(word) <= 100 AND to_tsvector('german', word) = ''::tsvector;
CREATE TEMP TABLE search_art ON COMMIT DROP AS
  SELECT art, string_to_array(search_fold(art), ' ') AS words FROM (SELECT DISTINCT art FROM werk) a;

-- Every row is written again: the indexes that would take a slow insert per row (GIN) are built
-- once after, and the words are in search_word already.
DROP INDEX person_suche;
DROP INDEX person_name_trgm;
DROP INDEX werk_suche;
DROP INDEX werk_titel_trgm;
ALTER TABLE person DISABLE TRIGGER person_search_words_update;
ALTER TABLE werk DISABLE TRIGGER werk_search_words_update;

UPDATE person p SET suche = p.suche || array_to_tsvector(pg_temp.stop_lexemes('c', string_to_array(p.suche_name, ' '), s.words))
  FROM search_stop s;
UPDATE werk w SET suche = w.suche || array_to_tsvector(
       pg_temp.stop_lexemes('t', string_to_array(w.suche_titel, ' '), s.words)
    || pg_temp.stop_lexemes('c', string_to_array((SELECT p.suche_name FROM person p WHERE p.id = w.person_id), ' '), s.words)
    || pg_temp.stop_lexemes('d', (string_to_array(w.suche_text, ' '))[1 : cardinality(string_to_array(w.suche_text, ' ')) - cardinality(a.words) - (w.jahr IS NOT NULL)::int], s.words)
    || pg_temp.stop_lexemes('r', a.words, s.words))
  FROM search_stop s, search_art a
 WHERE a.art IS NOT DISTINCT FROM w.art;

ALTER TABLE person ENABLE TRIGGER person_search_words_update;
ALTER TABLE werk ENABLE TRIGGER werk_search_words_update;
CREATE INDEX person_name_trgm ON person USING gin ((vorname || ' ' || nachname) gin_trgm_ops) WITH (fastupdate = off);
CREATE INDEX person_suche ON person USING gin (suche) WITH (fastupdate = off);
CREATE INDEX werk_titel_trgm ON werk USING gin (titel gin_trgm_ops) WITH (fastupdate = off);
CREATE INDEX werk_suche ON werk USING gin (suche) WITH (fastupdate = off);
ANALYZE person;
ANALYZE werk;
