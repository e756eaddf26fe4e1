-- 0004: the bytes each stored response and conversation item added to
-- the store (its JSON and the blobs first stored with it), by owner, so
-- that a user's stored state is summed from small rows, never by reading
-- the content (responses.max_stored_bytes). A size goes with its row (ON
-- DELETE CASCADE). Keep it equivalent to
-- migrations/mysql/0004_stored_size.sql. Rows stored before it count
-- their JSON only. Re-runnable.

CREATE TABLE IF NOT EXISTS response_sizes (
  response_id TEXT    NOT NULL PRIMARY KEY REFERENCES stored_responses (id) ON DELETE CASCADE,
  owner_id    INTEGER NOT NULL,
  size        INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS ix_response_sizes_owner ON response_sizes (owner_id);

CREATE TABLE IF NOT EXISTS conversation_item_sizes (
  conversation_id TEXT    NOT NULL,
  seq             INTEGER NOT NULL,
  owner_id        INTEGER NOT NULL,
  size            INTEGER NOT NULL,
  PRIMARY KEY (conversation_id, seq),
  FOREIGN KEY (conversation_id, seq) REFERENCES conversation_items (conversation_id, seq) ON DELETE CASCADE
);
CREATE INDEX IF NOT EXISTS ix_conversation_item_sizes_owner ON conversation_item_sizes (owner_id);

INSERT OR IGNORE INTO response_sizes (response_id, owner_id, size)
  SELECT id, owner_id, LENGTH(CAST(input AS BLOB)) + LENGTH(CAST(response AS BLOB)) FROM stored_responses;
INSERT OR IGNORE INTO conversation_item_sizes (conversation_id, seq, owner_id, size)
  SELECT i.conversation_id, i.seq, c.owner_id, LENGTH(CAST(i.item AS BLOB))
  FROM conversation_items i JOIN conversations c ON c.id = i.conversation_id;
