-- Logins counted per account name and per client address in a fixed window, in the database
-- so that every worker process sees the same counts (lib/auth/login-throttle.ts).
CREATE TABLE login_attempt (
  -- 'user:<lower-case name>' or 'address:<client IP>'
  key          text PRIMARY KEY,
  -- Attempts in the current window that did not succeed (each is counted before it is checked).
  failures     integer NOT NULL,
  window_start timestamptz NOT NULL
);

CREATE INDEX login_attempt_window ON login_attempt (window_start);
