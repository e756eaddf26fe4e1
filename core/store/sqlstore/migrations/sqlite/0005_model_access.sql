-- 0004: model access (core/allowlist). A group's model allowlist, and a
-- user's override of it, as a JSON array of patterns in a table of its
-- own (new tables are re-runnable where ADD COLUMN is not). A group
-- without a row allows every model; a user without a row inherits the
-- group's list, and a row (even "[]": every model) replaces it. Keep it
-- equivalent to migrations/mysql/0005_model_access.sql. Re-runnable.

CREATE TABLE IF NOT EXISTS group_model_access (
  group_id INTEGER NOT NULL PRIMARY KEY REFERENCES user_groups (id) ON DELETE CASCADE,
  patterns TEXT    NOT NULL
);

CREATE TABLE IF NOT EXISTS user_model_access (
  user_id  INTEGER NOT NULL PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
  patterns TEXT    NOT NULL
);
