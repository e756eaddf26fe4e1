-- 0001: the initial schema (MySQL 8 / MariaDB 10.6+). Keep it equivalent to
-- migrations/sqlite/0001_init.sql. Every statement ends with ";" at the end
-- of a line (the migrator splits there). Tables use IF NOT EXISTS and
-- declare their indexes inline so that a migration interrupted half-way
-- (MySQL DDL is not transactional) can simply be run again.
-- Text is utf8mb4_bin: names compare byte-for-byte, as in SQLite.

CREATE TABLE IF NOT EXISTS user_groups (
  id                 BIGINT       NOT NULL AUTO_INCREMENT,
  name               VARCHAR(100) NOT NULL,
  description        TEXT         NOT NULL,
  token_budget       BIGINT       NOT NULL DEFAULT 0,
  budget_period_days INT          NOT NULL DEFAULT 30,
  rpm                INT          NOT NULL DEFAULT 0,
  max_concurrent     INT          NOT NULL DEFAULT 0,
  weight             DOUBLE       NOT NULL DEFAULT 1,
  is_admin           BOOLEAN      NOT NULL DEFAULT FALSE,
  is_auditor         BOOLEAN      NOT NULL DEFAULT FALSE,
  key_expiry_days    INT          NOT NULL DEFAULT 0,
  max_keys           INT          NOT NULL DEFAULT 0,
  created_at         DATETIME(6)  NOT NULL,
  updated_at         DATETIME(6)  NOT NULL,
  PRIMARY KEY (id),
  UNIQUE KEY uq_user_groups_name (name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS users (
  id             BIGINT       NOT NULL AUTO_INCREMENT,
  username       VARCHAR(190) NOT NULL,
  email          VARCHAR(320) NOT NULL DEFAULT '',
  full_name      VARCHAR(255) NOT NULL DEFAULT '',
  group_id       BIGINT       NOT NULL,
  active         BOOLEAN      NOT NULL DEFAULT TRUE,
  token_budget   BIGINT       NULL,
  rpm            INT          NULL,
  max_concurrent INT          NULL,
  weight         DOUBLE       NULL,
  created_at     DATETIME(6)  NOT NULL,
  updated_at     DATETIME(6)  NOT NULL,
  PRIMARY KEY (id),
  UNIQUE KEY uq_users_username (username),
  KEY ix_users_group (group_id),
  CONSTRAINT fk_users_group FOREIGN KEY (group_id) REFERENCES user_groups (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS api_keys (
  id           BIGINT       NOT NULL AUTO_INCREMENT,
  user_id      BIGINT       NOT NULL,
  name         VARCHAR(255) NOT NULL DEFAULT '',
  prefix       VARCHAR(32)  NOT NULL,
  hash         VARBINARY(64) NULL,
  argon2       VARCHAR(255) NOT NULL DEFAULT '',
  scopes       VARCHAR(255) NOT NULL DEFAULT '',
  status       VARCHAR(16)  NOT NULL DEFAULT 'active',
  expires_at   DATETIME(6)  NULL,
  last_used_at DATETIME(6)  NULL,
  usage_count  BIGINT       NOT NULL DEFAULT 0,
  created_at   DATETIME(6)  NOT NULL,
  revoked_at   DATETIME(6)  NULL,
  PRIMARY KEY (id),
  UNIQUE KEY uq_api_keys_hash (hash),
  KEY ix_api_keys_prefix (prefix),
  KEY ix_api_keys_user (user_id),
  CONSTRAINT fk_api_keys_user FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS user_usage (
  user_id         BIGINT      NOT NULL,
  period_start    DATETIME(6) NOT NULL,
  tokens_used     BIGINT      NOT NULL DEFAULT 0,
  lifetime_tokens BIGINT      NOT NULL DEFAULT 0,
  updated_at      DATETIME(6) NOT NULL,
  PRIMARY KEY (user_id),
  CONSTRAINT fk_user_usage_user FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS nodes (
  id          BIGINT        NOT NULL AUTO_INCREMENT,
  name        VARCHAR(190)  NOT NULL,
  sidecar_url VARCHAR(2048) NOT NULL DEFAULT '',
  sidecar_key VARCHAR(255)  NOT NULL DEFAULT '',
  status      VARCHAR(16)   NOT NULL DEFAULT 'enabled',
  from_config BOOLEAN       NOT NULL DEFAULT FALSE,
  created_at  DATETIME(6)   NOT NULL,
  updated_at  DATETIME(6)   NOT NULL,
  PRIMARY KEY (id),
  UNIQUE KEY uq_nodes_name (name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS backends (
  id             BIGINT        NOT NULL AUTO_INCREMENT,
  name           VARCHAR(190)  NOT NULL,
  engine         VARCHAR(64)   NOT NULL,
  url            VARCHAR(2048) NOT NULL,
  max_concurrent INT           NOT NULL DEFAULT 0,
  models         TEXT          NOT NULL,
  gpu_indices    TEXT          NOT NULL,
  priority       INT           NOT NULL DEFAULT 0,
  status         VARCHAR(16)   NOT NULL DEFAULT 'enabled',
  node_id        BIGINT        NULL,
  from_config    BOOLEAN       NOT NULL DEFAULT FALSE,
  created_at     DATETIME(6)   NOT NULL,
  updated_at     DATETIME(6)   NOT NULL,
  PRIMARY KEY (id),
  UNIQUE KEY uq_backends_name (name),
  KEY ix_backends_node (node_id),
  CONSTRAINT fk_backends_node FOREIGN KEY (node_id) REFERENCES nodes (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS admin_events (
  id          BIGINT       NOT NULL AUTO_INCREMENT,
  at          DATETIME(6)  NOT NULL,
  actor_id    BIGINT       NOT NULL DEFAULT 0,
  actor_key   VARCHAR(64)  NOT NULL DEFAULT '',
  action      VARCHAR(64)  NOT NULL,
  target_type VARCHAR(32)  NOT NULL DEFAULT '',
  target_id   VARCHAR(190) NOT NULL DEFAULT '',
  detail      TEXT         NOT NULL,
  remote_addr VARCHAR(64)  NOT NULL DEFAULT '',
  PRIMARY KEY (id),
  KEY ix_admin_events_at (at),
  KEY ix_admin_events_target (target_type, target_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
