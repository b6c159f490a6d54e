-- Failed logins counted per pair of account name and client address, and per client address, in
-- a fixed window, in the database so that every worker process and instance sees the same
-- counts (lib/auth/login-throttle.ts).
CREATE TABLE login_attempt (
  -- 'pair:<lower-case name>|<client IP>' or 'address:<client IP>'
  key          text PRIMARY KEY,
  -- Attempts in the current window whose password check failed.
  failures     integer NOT NULL,
  window_start timestamptz NOT NULL
);

CREATE INDEX login_attempt_window ON login_attempt (window_start);
