-- Indexes behind search (docs/interface.md, Search): trigram GIN indexes answer "contains" and
-- "begins_with" (ILIKE) without reading the whole table; btree on lower() answers "exact".
CREATE EXTENSION IF NOT EXISTS pg_trgm;

CREATE INDEX werk_titel_trgm ON werk USING gin (titel gin_trgm_ops) WITH (fastupdate = off);
CREATE INDEX werk_titel_lower ON werk (lower(titel));

-- The name as search sees it: "Vorname Nachname".
CREATE INDEX person_name_trgm ON person USING gin ((vorname || ' ' || nachname) gin_trgm_ops) WITH (fastupdate = off);
CREATE INDEX person_name_lower ON person (lower(vorname || ' ' || nachname));
