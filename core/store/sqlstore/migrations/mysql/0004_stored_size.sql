-- 0004: the bytes each stored response and conversation item added to
-- the store (its JSON and the blobs first stored with it), by owner, so
-- that a user's stored state is summed from small rows, never by reading
-- the content (responses.max_stored_bytes). A size goes with its row (ON
-- DELETE CASCADE). Keep it equivalent to
-- migrations/sqlite/0004_stored_size.sql. Rows stored before it count
-- their JSON only. Re-runnable: IF NOT EXISTS, INSERT IGNORE.

CREATE TABLE IF NOT EXISTS response_sizes (
  response_id VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  owner_id    BIGINT       NOT NULL,
  size        BIGINT       NOT NULL,
  PRIMARY KEY (response_id),
  KEY ix_response_sizes_owner (owner_id),
  CONSTRAINT fk_response_sizes_resp FOREIGN KEY (response_id) REFERENCES stored_responses (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS conversation_item_sizes (
  conversation_id VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  seq             BIGINT       NOT NULL,
  owner_id        BIGINT       NOT NULL,
  size            BIGINT       NOT NULL,
  PRIMARY KEY (conversation_id, seq),
  KEY ix_conversation_item_sizes_owner (owner_id),
  CONSTRAINT fk_conversation_item_sizes_item FOREIGN KEY (conversation_id, seq)
    REFERENCES conversation_items (conversation_id, seq) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

INSERT IGNORE INTO response_sizes (response_id, owner_id, size)
  SELECT id, owner_id, LENGTH(input) + LENGTH(response) FROM stored_responses;
INSERT IGNORE INTO conversation_item_sizes (conversation_id, seq, owner_id, size)
  SELECT i.conversation_id, i.seq, c.owner_id, LENGTH(i.item)
  FROM conversation_items i JOIN conversations c ON c.id = i.conversation_id;
