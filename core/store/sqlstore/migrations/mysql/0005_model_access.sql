-- 0004: model access (core/allowlist). A group's model allowlist, and a
-- user's override of it, as a JSON array of patterns in a table of its
-- own (new tables are re-runnable where ADD COLUMN is not). A group
-- without a row allows every model; a user without a row inherits the
-- group's list, and a row (even "[]": every model) replaces it. Keep it
-- equivalent to migrations/sqlite/0005_model_access.sql. Re-runnable.

CREATE TABLE IF NOT EXISTS group_model_access (
  group_id BIGINT NOT NULL,
  patterns TEXT   NOT NULL,
  PRIMARY KEY (group_id),
  CONSTRAINT fk_group_model_access_group FOREIGN KEY (group_id) REFERENCES user_groups (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS user_model_access (
  user_id  BIGINT NOT NULL,
  patterns TEXT   NOT NULL,
  PRIMARY KEY (user_id),
  CONSTRAINT fk_user_model_access_user FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
