-- 0006: the web console's sessions (core/console), when no Redis holds
-- them. id_hash is the SHA-256 of the cookie's random token (the token
-- itself is never stored); data is the console's JSON record; expires_at
-- (Unix milliseconds) is when the row may be deleted. Keep it equivalent
-- to migrations/sqlite/0006_console_sessions.sql. Re-runnable.

CREATE TABLE IF NOT EXISTS console_sessions (
  id_hash    VARBINARY(32) NOT NULL,
  data       TEXT          NOT NULL,
  expires_at BIGINT        NOT NULL,
  PRIMARY KEY (id_hash),
  KEY console_sessions_expires (expires_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
