-- The site's secret key, made at the first start (lib/auth/login-token.ts) and shared by every
-- worker process and instance on this database: it signs the login form's token, so that form
-- needs no session row per visitor.
CREATE TABLE site_secret (
  id     integer PRIMARY KEY CHECK (id = 1),
  secret text NOT NULL
);
