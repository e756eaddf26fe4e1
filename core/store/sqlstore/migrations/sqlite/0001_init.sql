-- 0001: the initial schema (SQLite 3.35+). Keep it equivalent to
-- migrations/mysql/0001_init.sql. Every statement ends with ";" at the end
-- of a line (the migrator splits there). Times are TEXT in the fixed-width
-- UTC form "2006-01-02 15:04:05.000000", so text order is time order.
-- Foreign keys need PRAGMA foreign_keys=ON, which Open sets on every
-- connection.

CREATE TABLE IF NOT EXISTS user_groups (
  id                 INTEGER PRIMARY KEY AUTOINCREMENT,
  name               TEXT    NOT NULL,
  description        TEXT    NOT NULL DEFAULT '',
  token_budget       INTEGER NOT NULL DEFAULT 0,
  budget_period_days INTEGER NOT NULL DEFAULT 30,
  rpm                INTEGER NOT NULL DEFAULT 0,
  max_concurrent     INTEGER NOT NULL DEFAULT 0,
  weight             REAL    NOT NULL DEFAULT 1,
  is_admin           INTEGER NOT NULL DEFAULT 0,
  is_auditor         INTEGER NOT NULL DEFAULT 0,
  key_expiry_days    INTEGER NOT NULL DEFAULT 0,
  max_keys           INTEGER NOT NULL DEFAULT 0,
  created_at         TEXT    NOT NULL,
  updated_at         TEXT    NOT NULL,
  CONSTRAINT uq_user_groups_name UNIQUE (name)
);

CREATE TABLE IF NOT EXISTS users (
  id             INTEGER PRIMARY KEY AUTOINCREMENT,
  username       TEXT    NOT NULL,
  email          TEXT    NOT NULL DEFAULT '',
  full_name      TEXT    NOT NULL DEFAULT '',
  group_id       INTEGER NOT NULL REFERENCES user_groups (id),
  active         INTEGER NOT NULL DEFAULT 1,
  token_budget   INTEGER NULL,
  rpm            INTEGER NULL,
  max_concurrent INTEGER NULL,
  weight         REAL    NULL,
  created_at     TEXT    NOT NULL,
  updated_at     TEXT    NOT NULL,
  CONSTRAINT uq_users_username UNIQUE (username)
);
CREATE INDEX IF NOT EXISTS ix_users_group ON users (group_id);

CREATE TABLE IF NOT EXISTS api_keys (
  id           INTEGER PRIMARY KEY AUTOINCREMENT,
  user_id      INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  name         TEXT    NOT NULL DEFAULT '',
  prefix       TEXT    NOT NULL,
  hash         BLOB    NULL,
  argon2       TEXT    NOT NULL DEFAULT '',
  scopes       TEXT    NOT NULL DEFAULT '',
  status       TEXT    NOT NULL DEFAULT 'active',
  expires_at   TEXT    NULL,
  last_used_at TEXT    NULL,
  usage_count  INTEGER NOT NULL DEFAULT 0,
  created_at   TEXT    NOT NULL,
  revoked_at   TEXT    NULL,
  CONSTRAINT uq_api_keys_hash UNIQUE (hash)
);
CREATE INDEX IF NOT EXISTS ix_api_keys_prefix ON api_keys (prefix);
CREATE INDEX IF NOT EXISTS ix_api_keys_user ON api_keys (user_id);

CREATE TABLE IF NOT EXISTS user_usage (
  user_id         INTEGER NOT NULL PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
  period_start    TEXT    NOT NULL,
  tokens_used     INTEGER NOT NULL DEFAULT 0,
  lifetime_tokens INTEGER NOT NULL DEFAULT 0,
  updated_at      TEXT    NOT NULL
);

CREATE TABLE IF NOT EXISTS nodes (
  id          INTEGER PRIMARY KEY AUTOINCREMENT,
  name        TEXT    NOT NULL,
  sidecar_url TEXT    NOT NULL DEFAULT '',
  sidecar_key TEXT    NOT NULL DEFAULT '',
  status      TEXT    NOT NULL DEFAULT 'enabled',
  from_config INTEGER NOT NULL DEFAULT 0,
  created_at  TEXT    NOT NULL,
  updated_at  TEXT    NOT NULL,
  CONSTRAINT uq_nodes_name UNIQUE (name)
);

CREATE TABLE IF NOT EXISTS backends (
  id             INTEGER PRIMARY KEY AUTOINCREMENT,
  name           TEXT    NOT NULL,
  engine         TEXT    NOT NULL,
  url            TEXT    NOT NULL,
  max_concurrent INTEGER NOT NULL DEFAULT 0,
  models         TEXT    NOT NULL DEFAULT '[]',
  gpu_indices    TEXT    NOT NULL DEFAULT '[]',
  priority       INTEGER NOT NULL DEFAULT 0,
  status         TEXT    NOT NULL DEFAULT 'enabled',
  node_id        INTEGER NULL REFERENCES nodes (id),
  from_config    INTEGER NOT NULL DEFAULT 0,
  created_at     TEXT    NOT NULL,
  updated_at     TEXT    NOT NULL,
  CONSTRAINT uq_backends_name UNIQUE (name)
);
CREATE INDEX IF NOT EXISTS ix_backends_node ON backends (node_id);

CREATE TABLE IF NOT EXISTS admin_events (
  id          INTEGER PRIMARY KEY AUTOINCREMENT,
  at          TEXT    NOT NULL,
  actor_id    INTEGER NOT NULL DEFAULT 0,
  actor_key   TEXT    NOT NULL DEFAULT '',
  action      TEXT    NOT NULL,
  target_type TEXT    NOT NULL DEFAULT '',
  target_id   TEXT    NOT NULL DEFAULT '',
  detail      TEXT    NOT NULL DEFAULT '',
  remote_addr TEXT    NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS ix_admin_events_at ON admin_events (at);
CREATE INDEX IF NOT EXISTS ix_admin_events_target ON admin_events (target_type, target_id);
