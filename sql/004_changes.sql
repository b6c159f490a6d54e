-- What keeps old links working once data changes (docs/interface.md, URLs and Changing data): the slugs a person had
-- before (answered with 301 to the current one) and the paths of deleted persons and works
-- (answered with 410). Both are read only when a look-up misses, so a hit stays one query.

CREATE TABLE person_slug_history (
  slug        text PRIMARY KEY
              CHECK (slug ~ '^[a-z0-9]+(-[a-z0-9]+)*$' AND slug ~ '[a-z]' AND length(slug) <= 120),
  -- A deleted person's old slugs go to gone with the person.
  person_id   integer NOT NULL REFERENCES person (id) ON DELETE CASCADE,
  replaced_at timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX person_slug_history_person ON person_slug_history (person_id);

CREATE TABLE gone (
  -- A site path that named a deleted resource: /person/12, /person/max-muster, /werk/7.
  path       text PRIMARY KEY CHECK (path ~ '^/(person|werk)/[a-z0-9-]+$'),
  deleted_at timestamptz NOT NULL DEFAULT now()
);
