-- The word index moves into each serving process (lib/search/word-index.ts, docs/performance.md,
-- Search): it reads every person and work once at the start and then, before a search, the rows
-- that changed since. This is where it finds them.
--
-- Each row written notes its id here, in the writing transaction, with the words it had before
-- (its tsvector, NULL for a new row), which the index takes the row out of. A process remembers
-- the snapshot it last read at (pg_current_snapshot()) and reads the notes of the transactions
-- that snapshot did not see: those whose xid it counts as running or future. Notes are kept
-- ten minutes (lib/search/sync.ts deletes older ones); search_change_pruned keeps the highest xid
-- deleted, and a process whose snapshot may have missed one reads everything again.
CREATE TABLE search_change (
  xid  xid8 NOT NULL DEFAULT pg_current_xact_id(),
  at   timestamptz NOT NULL DEFAULT now(),
  -- p: a person, w: a work, *: everything (TRUNCATE, or a statement of many rows).
  kind "char" NOT NULL CHECK (kind IN ('p', 'w', '*')),
  id   integer NOT NULL,
  old  tsvector
);
CREATE INDEX search_change_xid ON search_change (xid);

CREATE TABLE search_change_pruned (
  id  boolean PRIMARY KEY DEFAULT true CHECK (id),
  xid xid8 NOT NULL DEFAULT '0'
);
INSERT INTO search_change_pruned DEFAULT VALUES;

-- A statement that writes more rows than this notes one '*' instead: the processes read
-- everything again rather than the rows one by one (a load, a migration, a rename of a person
-- with that many works).
CREATE FUNCTION search_many() RETURNS integer LANGUAGE sql IMMUTABLE RETURN 10000;

CREATE FUNCTION search_note_inserts() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF (SELECT count(*) FROM fresh) > search_many() THEN
    INSERT INTO search_change (kind, id) VALUES ('*', 0);
  ELSE
    INSERT INTO search_change (kind, id) SELECT CASE TG_TABLE_NAME WHEN 'person' THEN 'p' ELSE 'w' END::"char", id FROM fresh;
  END IF;
  RETURN NULL;
END;
$$;

CREATE FUNCTION search_note_updates() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF (SELECT count(*) FROM fresh) > search_many() THEN
    INSERT INTO search_change (kind, id) VALUES ('*', 0);
  ELSE
    -- An id that changed is two notes: the old id gone with its words, the new one written.
    INSERT INTO search_change (kind, id, old)
    SELECT CASE TG_TABLE_NAME WHEN 'person' THEN 'p' ELSE 'w' END::"char", coalesce(g.id, f.id), g.suche
      FROM gone g FULL JOIN fresh f ON f.id = g.id;
  END IF;
  RETURN NULL;
END;
$$;

CREATE FUNCTION search_note_deletes() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF (SELECT count(*) FROM gone) > search_many() THEN
    INSERT INTO search_change (kind, id) VALUES ('*', 0);
  ELSE
    INSERT INTO search_change (kind, id, old) SELECT CASE TG_TABLE_NAME WHEN 'person' THEN 'p' ELSE 'w' END::"char", id, suche FROM gone;
  END IF;
  RETURN NULL;
END;
$$;

CREATE FUNCTION search_note_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO search_change (kind, id) VALUES ('*', 0);
  RETURN NULL;
END;
$$;

CREATE TRIGGER person_search_note_inserts AFTER INSERT ON person REFERENCING NEW TABLE AS fresh
  FOR EACH STATEMENT EXECUTE FUNCTION search_note_inserts();
CREATE TRIGGER person_search_note_updates AFTER UPDATE ON person REFERENCING OLD TABLE AS gone NEW TABLE AS fresh
  FOR EACH STATEMENT EXECUTE FUNCTION search_note_updates();
CREATE TRIGGER person_search_note_deletes AFTER DELETE ON person REFERENCING OLD TABLE AS gone
  FOR EACH STATEMENT EXECUTE FUNCTION search_note_deletes();
CREATE TRIGGER person_search_note_truncate AFTER TRUNCATE ON person
  FOR EACH STATEMENT EXECUTE FUNCTION search_note_truncate();
CREATE TRIGGER werk_search_note_inserts AFTER INSERT ON werk REFERENCING NEW TABLE AS fresh
  FOR EACH STATEMENT EXECUTE FUNCTION search_note_inserts();
CREATE TRIGGER werk_search_note_updates AFTER UPDATE ON werk REFERENCING OLD TABLE AS gone NEW TABLE AS fresh
  FOR EACH STATEMENT EXECUTE FUNCTION search_note_updates();
CREATE TRIGGER werk_search_note_deletes AFTER DELETE ON werk REFERENCING OLD TABLE AS gone
  FOR EACH STATEMENT EXECUTE FUNCTION search_note_deletes();
CREATE TRIGGER werk_search_note_truncate AFTER TRUNCATE ON werk
  FOR EACH STATEMENT EXECUTE FUNCTION search_note_truncate();

-- The vocabulary with each word's stem (NULL for a stop word) and the transaction that added it,
-- which a process reads the new words by, as it reads changes.
ALTER TABLE search_word ADD COLUMN stem text, ADD COLUMN added xid8 NOT NULL DEFAULT pg_current_xact_id();
UPDATE search_word SET stem = (tsvector_to_array(to_tsvector('german', word)))[1];
CREATE INDEX search_word_added ON search_word (added);

CREATE OR REPLACE FUNCTION search_remember(f text[], r text[]) RETURNS void LANGUAGE sql AS $$
  WITH pairs AS MATERIALIZED (
         SELECT x.f, x.r FROM unnest(f, r) AS x(f, r) WHERE x.f <> '' AND length(x.f) <= 100),
       new AS (
         SELECT d.f FROM (SELECT DISTINCT f FROM pairs) AS d
          WHERE NOT EXISTS (SELECT 1 FROM search_word s WHERE s.word = d.f))
  INSERT INTO search_word (word, shown, stem)
  SELECT DISTINCT ON (p.f) p.f, CASE WHEN search_fold(p.r) = p.f THEN lower(p.r) ELSE p.f END,
         (tsvector_to_array(to_tsvector('german', p.f)))[1]
    FROM pairs p JOIN new n ON n.f = p.f
   ORDER BY p.f, search_fold(p.r) = p.f DESC, p.r
  ON CONFLICT (word) DO NOTHING
$$;

-- The database no longer answers searches: the index by blocks of ids (sql/010_search_index.sql)
-- goes, which every write of a work kept up. The rows keep their tsvector, which the processes
-- read. search_blocked and search_block stay for the workers of the version before, which a
-- rolling reload keeps serving for a while: their searches find their functions, run without the
-- index and answer 503 after their time-out, rather than 500.
DROP INDEX person_suche;
DROP INDEX werk_suche;
