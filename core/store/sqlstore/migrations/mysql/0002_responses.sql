-- 0002: the OpenAI Responses and Conversations state (MySQL 8 / MariaDB
-- 10.6+). Keep it equivalent to migrations/sqlite/0002_responses.sql; see
-- there for the model. Ids are ASCII; JSON is LONGTEXT (an expanded input
-- grows with its chain) and blob data LONGBLOB, each bounded by the
-- gateway (responses.max_item_bytes) and by the server's
-- max_allowed_packet. Re-runnable: IF NOT EXISTS, indexes inline.

CREATE TABLE IF NOT EXISTS stored_responses (
  id              VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  owner_id        BIGINT       NOT NULL,
  model           VARCHAR(255) NOT NULL DEFAULT '',
  previous_id     VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '',
  conversation_id VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '',
  input           LONGTEXT     NOT NULL,
  response        LONGTEXT     NOT NULL,
  created_at      DATETIME(6)  NOT NULL,
  touched_at      DATETIME(6)  NOT NULL,
  PRIMARY KEY (id),
  KEY ix_stored_responses_owner (owner_id, id),
  KEY ix_stored_responses_touched (touched_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS conversations (
  id         VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  owner_id   BIGINT      NOT NULL,
  metadata   TEXT        NOT NULL,
  next_seq   BIGINT      NOT NULL DEFAULT 1,
  created_at DATETIME(6) NOT NULL,
  touched_at DATETIME(6) NOT NULL,
  PRIMARY KEY (id),
  KEY ix_conversations_owner (owner_id, id),
  KEY ix_conversations_touched (touched_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS conversation_items (
  conversation_id VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  seq             BIGINT       NOT NULL,
  item_id         VARCHAR(190) NOT NULL,
  item            LONGTEXT     NOT NULL,
  created_at      DATETIME(6)  NOT NULL,
  PRIMARY KEY (conversation_id, seq),
  KEY ix_conversation_items_item (conversation_id, item_id),
  CONSTRAINT fk_conversation_items_conv FOREIGN KEY (conversation_id) REFERENCES conversations (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS response_blobs (
  hash       CHAR(64)    CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  data       LONGBLOB    NOT NULL,
  created_at DATETIME(6) NOT NULL,
  touched_at DATETIME(6) NOT NULL,
  PRIMARY KEY (hash),
  KEY ix_response_blobs_touched (touched_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS response_blob_refs (
  response_id VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  hash        CHAR(64)    CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  PRIMARY KEY (response_id, hash),
  KEY ix_response_blob_refs_hash (hash),
  CONSTRAINT fk_response_blob_refs_resp FOREIGN KEY (response_id) REFERENCES stored_responses (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS conversation_blob_refs (
  conversation_id VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  hash            CHAR(64)    CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  PRIMARY KEY (conversation_id, hash),
  KEY ix_conversation_blob_refs_hash (hash),
  CONSTRAINT fk_conversation_blob_refs_conv FOREIGN KEY (conversation_id) REFERENCES conversations (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
