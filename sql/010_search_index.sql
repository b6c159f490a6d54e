-- The search index (docs/interface.md, Search; docs/performance.md, Search), made cheaper for
-- frequent words in two ways.
--
-- Stop words are in it: every word of a field is a whole-word lexeme now, der and im as much as
-- hafen; their stems stay out (to_tsvector drops them). A stop word's entry is as long as the
-- table, but a search reads it beside a rarer word, whose entries GIN walks and skips through
-- the long one by, where a check of the text read every row the rarer word found (100 ms for
-- "die kalte" at a million works).
--
-- The index holds each lexeme in the block of 65,536 ids its row is in (t:hafen:0,
-- t:hafen:1 …), so a search probes one block after the other and stops when it has the hits
-- it takes (lib/search/run.ts). GIN reads the whole entry of a word before any LIMIT can stop
-- it: for a word in one work of five, 200,000 rows at a million works, 40 ms; its first block
-- is about 13,000 (2 ms). A search for words that are rare together probes every block, each at
-- little cost. It is an index on an expression: the rows keep their tsvector as it was, for the
-- checks and the ranking.
-- The whole words of a field as its lexemes (tag:word), each once. A "word" of more than 100
-- letters is no word anyone searches for (and to_tsvector refuses one of 2 KB).
CREATE FUNCTION search_whole_words(tag text, words text[]) RETURNS text[] LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
BEGIN
  RETURN ARRAY(SELECT DISTINCT tag || ':' || w FROM unnest(words) AS w WHERE w <> '' AND length(w) <= 100);
END;
$$;

CREATE OR REPLACE FUNCTION search_lexemes(tag text, folded text) RETURNS text[] LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
  words text[] := ARRAY(SELECT w FROM unnest(string_to_array(folded, ' ')) AS w WHERE w <> '' AND length(w) <= 100);
BEGIN
  RETURN search_whole_words(tag, words)
      || ARRAY(SELECT tag || 's:' || u.lexeme FROM unnest(to_tsvector('german', array_to_string(words, ' '))) AS u);
END;
$$;

CREATE FUNCTION search_blocked(v tsvector, id integer) RETURNS tsvector LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN array_to_tsvector(ARRAY(SELECT u.lexeme || ':' || (id >> 16) FROM unnest(v) AS u));

-- A query of the index (lexemes such as 't:hafen', lib/search/atoms.ts) for block b.
CREATE FUNCTION search_block(q text, b integer) RETURNS tsquery LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN regexp_replace(q, '''([^'']*)''', '''\1:' || b || '''', 'g')::tsquery;

-- The rows there are get every whole word of their fields added, which with the stems they
-- have is what search_lexemes now gives, without folding and stemming every text again. A
-- type's words are folded once per type; a work's description is the words of suche_text
-- before its type's and year's.
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

UPDATE person p SET suche = p.suche || array_to_tsvector(search_whole_words('c', string_to_array(p.suche_name, ' ')));
UPDATE werk w SET suche = w.suche || array_to_tsvector(
       search_whole_words('t', string_to_array(w.suche_titel, ' '))
    || search_whole_words('c', string_to_array((SELECT p.suche_name FROM person p WHERE p.id = w.person_id), ' '))
    || search_whole_words('d', (string_to_array(w.suche_text, ' '))[1 : cardinality(string_to_array(w.suche_text, ' ')) - cardinality(a.words) - (w.jahr IS NOT NULL)::int])
    || search_whole_words('r', a.words))
  FROM search_art a
 WHERE a.art = w.art;

ALTER TABLE person ENABLE TRIGGER person_search_words_update;
ALTER TABLE werk ENABLE TRIGGER werk_search_words_update;
CREATE INDEX person_name_trgm ON person USING gin ((vorname || ' ' || nachname) gin_trgm_ops) WITH (fastupdate = off);
CREATE INDEX person_suche ON person USING gin (search_blocked(suche, id)) WITH (fastupdate = off);
CREATE INDEX werk_titel_trgm ON werk USING gin (titel gin_trgm_ops) WITH (fastupdate = off);
CREATE INDEX werk_suche ON werk USING gin (search_blocked(suche, id)) WITH (fastupdate = off);
ANALYZE person;
ANALYZE werk;
