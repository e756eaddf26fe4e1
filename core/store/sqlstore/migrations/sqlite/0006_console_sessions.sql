-- 0006: the web console's sessions (core/console), when no Redis holds
-- them. id_hash is the SHA-256 of the cookie's random token (the token
-- itself is never stored); data is the console's JSON record; expires_at
-- (Unix milliseconds) is when the row may be deleted. Keep it equivalent
-- to migrations/mysql/0006_console_sessions.sql. Re-runnable.

CREATE TABLE IF NOT EXISTS console_sessions (
  id_hash    BLOB    NOT NULL PRIMARY KEY,
  data       TEXT    NOT NULL,
  expires_at INTEGER NOT NULL
);

CREATE INDEX IF NOT EXISTS console_sessions_expires ON console_sessions (expires_at);
