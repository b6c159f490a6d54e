-- The search index in blocks of ids (docs/interface.md, Search, Cost): each lexeme of a row is
-- entered with the block of 65,536 ids the row is in (t:hafen:0, t:hafen:1 …), so a search
-- probes one block after the other and stops when it has the hits it takes
-- (lib/search/run.ts). A GIN index reads the whole entry of a word before any LIMIT can stop
-- it: for a word in one work of five, 200,000 rows at a million works, 40 ms; its first block
-- is about 13,000 (2 ms). A search for rare words probes every block, each at little cost.
-- The index is on an expression: the rows keep their tsvector as it was, for the checks and
-- the ranking.
CREATE FUNCTION search_blocked(v tsvector, id integer) RETURNS tsvector LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN array_to_tsvector(ARRAY(SELECT u.lexeme || ':' || (id >> 16) FROM unnest(v) AS u));

-- A query of the index (lexemes such as 't:hafen', lib/search/plan.ts) for block b.
CREATE FUNCTION search_block(q text, b integer) RETURNS tsquery LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN regexp_replace(q, '''([^'']*)''', '''\1:' || b || '''', 'g')::tsquery;

DROP INDEX person_suche;
DROP INDEX werk_suche;
CREATE INDEX person_suche ON person USING gin (search_blocked(suche, id)) WITH (fastupdate = off);
CREATE INDEX werk_suche ON werk USING gin (search_blocked(suche, id)) WITH (fastupdate = off);
ANALYZE person;
ANALYZE werk;
