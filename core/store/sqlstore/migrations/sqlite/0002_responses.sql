-- 0002: the OpenAI Responses and Conversations state (SQLite). Keep it
-- equivalent to migrations/mysql/0002_responses.sql. Owners are
-- auth.Principal.UserID values with no foreign key: 0 (the bootstrap
-- admin key) owns state too, and a deleted user's state ages out with
-- the retention. Blobs are content-addressed (hex SHA-256) and kept
-- while a reference row names them; references go with their response
-- or conversation (ON DELETE CASCADE).

CREATE TABLE IF NOT EXISTS stored_responses (
  id              TEXT    NOT NULL PRIMARY KEY,
  owner_id        INTEGER NOT NULL,
  model           TEXT    NOT NULL DEFAULT '',
  previous_id     TEXT    NOT NULL DEFAULT '',
  conversation_id TEXT    NOT NULL DEFAULT '',
  input           TEXT    NOT NULL,
  response        TEXT    NOT NULL,
  created_at      TEXT    NOT NULL,
  touched_at      TEXT    NOT NULL
);
CREATE INDEX IF NOT EXISTS ix_stored_responses_owner ON stored_responses (owner_id, id);
CREATE INDEX IF NOT EXISTS ix_stored_responses_touched ON stored_responses (touched_at);

CREATE TABLE IF NOT EXISTS conversations (
  id         TEXT    NOT NULL PRIMARY KEY,
  owner_id   INTEGER NOT NULL,
  metadata   TEXT    NOT NULL,
  next_seq   INTEGER NOT NULL DEFAULT 1,
  created_at TEXT    NOT NULL,
  touched_at TEXT    NOT NULL
);
CREATE INDEX IF NOT EXISTS ix_conversations_owner ON conversations (owner_id, id);
CREATE INDEX IF NOT EXISTS ix_conversations_touched ON conversations (touched_at);

CREATE TABLE IF NOT EXISTS conversation_items (
  conversation_id TEXT    NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
  seq             INTEGER NOT NULL,
  item_id         TEXT    NOT NULL,
  item            TEXT    NOT NULL,
  created_at      TEXT    NOT NULL,
  PRIMARY KEY (conversation_id, seq)
);
CREATE INDEX IF NOT EXISTS ix_conversation_items_item ON conversation_items (conversation_id, item_id);

CREATE TABLE IF NOT EXISTS response_blobs (
  hash       TEXT    NOT NULL PRIMARY KEY,
  data       BLOB    NOT NULL,
  created_at TEXT    NOT NULL,
  touched_at TEXT    NOT NULL
);
CREATE INDEX IF NOT EXISTS ix_response_blobs_touched ON response_blobs (touched_at);

CREATE TABLE IF NOT EXISTS response_blob_refs (
  response_id TEXT NOT NULL REFERENCES stored_responses (id) ON DELETE CASCADE,
  hash        TEXT NOT NULL,
  PRIMARY KEY (response_id, hash)
);
CREATE INDEX IF NOT EXISTS ix_response_blob_refs_hash ON response_blob_refs (hash);

CREATE TABLE IF NOT EXISTS conversation_blob_refs (
  conversation_id TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
  hash            TEXT NOT NULL,
  PRIMARY KEY (conversation_id, hash)
);
CREATE INDEX IF NOT EXISTS ix_conversation_blob_refs_hash ON conversation_blob_refs (hash);
