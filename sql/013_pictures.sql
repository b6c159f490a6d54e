-- Uploaded pictures live in the database, so that every instance serves every picture with
-- nothing shared but PostgreSQL, and a replica serves them like any other read (docs/operations.md,
-- Pictures). Each is a WebP of one width under the name it is served by, made of the upload's
-- SHA-256: the bytes of a name never change. PICTURES_DIR keeps copies of those served.
CREATE TABLE picture (
  name       text PRIMARY KEY CHECK (name ~ '^[0-9a-f]{32}-[0-9]+\.webp$'),
  bytes      bytea NOT NULL CHECK (length(bytes) BETWEEN 1 AND 16777216),
  created_at timestamptz NOT NULL DEFAULT now()
);
-- WebP is compressed already: stored out of line as it is, without another try at compressing it.
ALTER TABLE picture ALTER COLUMN bytes SET STORAGE EXTERNAL;
