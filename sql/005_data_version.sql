-- A counter that moves with every change to persons and works, in the same transaction
-- as the change. Cached results (lib/db/data-version.ts) are checked against it with one
-- cheap read instead of being computed again: search totals at a million works cost
-- tens of milliseconds, the read a fraction of one.
CREATE TABLE data_version (
  id boolean PRIMARY KEY DEFAULT true CHECK (id),
  n  bigint NOT NULL DEFAULT 0
);
INSERT INTO data_version DEFAULT VALUES;

CREATE FUNCTION bump_data_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE data_version SET n = n + 1;
  RETURN NULL;
END;
$$;

-- Once per statement, not per row: a bulk load moves the counter once.
CREATE TRIGGER person_data_version AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON person
  FOR EACH STATEMENT EXECUTE FUNCTION bump_data_version();
CREATE TRIGGER werk_data_version AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON werk
  FOR EACH STATEMENT EXECUTE FUNCTION bump_data_version();

-- Works in the order search lists them: case-insensitive, by code point, then id.
-- A page of a frequent term walks this index and stops after ten hits instead of sorting
-- every match; begins_with and exact become a range of it (LIKE 'abc%' can use a btree
-- under the C collation). It replaces werk_titel_lower.
CREATE INDEX werk_titel_sort ON werk ((lower(titel) COLLATE "C"), id);
DROP INDEX werk_titel_lower;
ANALYZE werk;
