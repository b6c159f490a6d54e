-- The data version without one row that every writer waits on. A single counter row is locked
-- by the first change until it commits, so concurrent changes queued behind each other. Now the
-- version is the sum of 64 counters, and a transaction moves the one its id points at:
-- transactions that run at the same time have neighbouring ids and so different rows. Each move
-- still commits (and becomes visible) with its change, so on any one server the sum moves exactly
-- when the data does and a kept result is never taken for current when it is not.
-- data_version stays, as a view with the one column it had: a worker of the version before,
-- still serving during a rolling reload, reads it as it did.
CREATE TABLE data_version_counter (
  slot smallint PRIMARY KEY CHECK (slot BETWEEN 0 AND 63),
  n    bigint NOT NULL DEFAULT 0
);
INSERT INTO data_version_counter (slot, n) SELECT s, 0 FROM generate_series(0, 63) AS s;
UPDATE data_version_counter SET n = (SELECT n FROM data_version) WHERE slot = 0;

CREATE OR REPLACE FUNCTION bump_data_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE data_version_counter SET n = n + 1 WHERE slot = (pg_current_xact_id()::text::bigint % 64);
  RETURN NULL;
END;
$$;

DROP TABLE data_version;
CREATE VIEW data_version AS SELECT sum(n)::bigint AS n FROM data_version_counter;
