package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mindrouter/mindrouter/core/store"
)

var _ store.ResponseStore = (*Store)(nil)

// expireBatch bounds the rows one DeleteExpired statement deletes, so a
// first sweep after a long pause never holds locks on a whole table.
const expireBatch = 500

// PutResponse inserts r with its blobs and blob references in one
// transaction. Zero times become now; times are normalised.
func (s *Store) PutResponse(ctx context.Context, r *store.StoredResponse, blobs []store.Blob) error {
	if r.CreatedAt.IsZero() {
		r.CreatedAt = now()
	}
	if r.TouchedAt.IsZero() {
		r.TouchedAt = r.CreatedAt
	}
	r.CreatedAt, r.TouchedAt = norm(r.CreatedAt), norm(r.TouchedAt)
	r.Size = int64(len(r.Input)+len(r.Response)) + blobBytes(blobs)
	what := fmt.Sprintf("put response %q", r.ID)
	return s.inTx(ctx, func(tx *sql.Tx) error {
		if err := s.putBlobs(ctx, tx, blobs, r.TouchedAt); err != nil {
			return fail(err, what)
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO stored_responses (id, owner_id, model, previous_id, conversation_id,
  input, response, created_at, touched_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			r.ID, r.OwnerID, r.Model, r.PreviousID, r.ConversationID, string(r.Input), string(r.Response),
			tv(r.CreatedAt), tv(r.TouchedAt))
		if err != nil {
			return fail(err, what)
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO response_sizes (response_id, owner_id, size) VALUES (?, ?, ?)",
			r.ID, r.OwnerID, r.Size); err != nil {
			return fail(err, what)
		}
		return fail(s.insertRefs(ctx, tx, "response_blob_refs", "response_id", r.ID, r.BlobRefs), what)
	})
}

// blobBytes is the data of blobs: what a write that puts them is
// charged (whether or not another write stored the same blob first).
func blobBytes(blobs []store.Blob) int64 {
	var n int64
	for i := range blobs {
		n += int64(len(blobs[i].Data))
	}
	return n
}

// StoredUsage sums one owner's stored responses and conversation items.
func (s *Store) StoredUsage(ctx context.Context, ownerID int64) (store.StoredUsage, error) {
	var u, c store.StoredUsage
	err := s.db.QueryRowContext(ctx, "SELECT COALESCE(SUM(size), 0), COUNT(*) FROM response_sizes WHERE owner_id = ?",
		ownerID).Scan(&u.Bytes, &u.Items)
	if err != nil {
		return u, fail(err, "stored responses' usage")
	}
	err = s.db.QueryRowContext(ctx, "SELECT COALESCE(SUM(size), 0), COUNT(*) FROM conversation_item_sizes WHERE owner_id = ?",
		ownerID).Scan(&c.Bytes, &c.Items)
	if err != nil {
		return u, fail(err, "conversation items' usage")
	}
	return store.StoredUsage{Bytes: u.Bytes + c.Bytes, Items: u.Items + c.Items}, nil
}

// putBlobs inserts each blob once; one that exists is only touched, which
// also locks its row against a concurrent orphan sweep.
func (s *Store) putBlobs(ctx context.Context, q querier, blobs []store.Blob, at time.Time) error {
	for i := range blobs {
		b := &blobs[i]
		if b.CreatedAt.IsZero() {
			b.CreatedAt = at
		}
		if b.TouchedAt.IsZero() {
			b.TouchedAt = at
		}
		b.CreatedAt, b.TouchedAt = norm(b.CreatedAt), norm(b.TouchedAt)
		upsert := `INSERT INTO response_blobs (hash, data, created_at, touched_at) VALUES (?, ?, ?, ?)
  ON CONFLICT (hash) DO UPDATE SET touched_at = CASE WHEN touched_at < excluded.touched_at THEN excluded.touched_at ELSE touched_at END`
		if s.dialect == MySQL {
			upsert = `INSERT INTO response_blobs (hash, data, created_at, touched_at) VALUES (?, ?, ?, ?)
  ON DUPLICATE KEY UPDATE touched_at = GREATEST(touched_at, VALUES(touched_at))`
		}
		if _, err := q.ExecContext(ctx, upsert, b.Hash, b.Data, tv(b.CreatedAt), tv(b.TouchedAt)); err != nil {
			return fmt.Errorf("put blob %s: %w", b.Hash, err)
		}
	}
	return nil
}

// insertRefs records that holder refers to each hash (duplicates once).
func (s *Store) insertRefs(ctx context.Context, q querier, table, col, holder string, hashes []string) error {
	if len(hashes) == 0 {
		return nil
	}
	ins := "INSERT OR IGNORE INTO "
	if s.dialect == MySQL {
		ins = "INSERT IGNORE INTO "
	}
	stmt := ins + table + " (" + col + ", hash) VALUES (?, ?)"
	for _, h := range hashes {
		if _, err := q.ExecContext(ctx, stmt, holder, h); err != nil {
			return fmt.Errorf("refer to blob %s: %w", h, err)
		}
	}
	return nil
}

// Response reads one of owner's responses with its blob references,
// touching it at at (unless zero).
func (s *Store) Response(ctx context.Context, ownerID int64, id string, at time.Time) (store.StoredResponse, error) {
	what := fmt.Sprintf("response %q", id)
	if err := s.touch(ctx, "stored_responses", ownerID, id, at); err != nil {
		return store.StoredResponse{}, fail(err, what)
	}
	var (
		r               store.StoredResponse
		input, response string
	)
	err := s.db.QueryRowContext(ctx, `SELECT id, owner_id, model, previous_id, conversation_id, input, response,
  created_at, touched_at, COALESCE((SELECT size FROM response_sizes WHERE response_id = stored_responses.id), 0)
  FROM stored_responses WHERE id = ? AND owner_id = ?`, id, ownerID).
		Scan(&r.ID, &r.OwnerID, &r.Model, &r.PreviousID, &r.ConversationID, &input, &response,
			timeDest{&r.CreatedAt}, timeDest{&r.TouchedAt}, &r.Size)
	if err != nil {
		return store.StoredResponse{}, fail(err, what)
	}
	r.Input, r.Response = []byte(input), []byte(response)
	rows, err := s.db.QueryContext(ctx, "SELECT hash FROM response_blob_refs WHERE response_id = ? ORDER BY hash", id)
	if err != nil {
		return store.StoredResponse{}, fail(err, what)
	}
	defer rows.Close()
	for rows.Next() {
		var h string
		if err := rows.Scan(&h); err != nil {
			return store.StoredResponse{}, fail(err, what)
		}
		r.BlobRefs = append(r.BlobRefs, h)
	}
	return r, fail(rows.Err(), what)
}

// touch moves a row's touched_at forward to at (a zero at does nothing).
// A missing row is not an error here: the read that follows says so.
func (s *Store) touch(ctx context.Context, table string, ownerID int64, id string, at time.Time) error {
	if at.IsZero() {
		return nil
	}
	t := tv(at)
	_, err := s.db.ExecContext(ctx, "UPDATE "+table+" SET touched_at = ? WHERE id = ? AND owner_id = ? AND touched_at < ?",
		t, id, ownerID, t)
	return err
}

// DeleteResponse deletes one of owner's responses (its references go
// with it; the blobs stay until DeleteExpired finds them orphaned).
func (s *Store) DeleteResponse(ctx context.Context, ownerID int64, id string) error {
	res, err := s.db.ExecContext(ctx, "DELETE FROM stored_responses WHERE id = ? AND owner_id = ?", id, ownerID)
	return affected(res, err, fmt.Sprintf("delete response %q", id))
}

// CreateConversation inserts c, its first items and their blobs.
func (s *Store) CreateConversation(ctx context.Context, c *store.Conversation, items []store.ConversationItem, blobs []store.Blob) error {
	if c.CreatedAt.IsZero() {
		c.CreatedAt = now()
	}
	if c.TouchedAt.IsZero() {
		c.TouchedAt = c.CreatedAt
	}
	c.CreatedAt, c.TouchedAt = norm(c.CreatedAt), norm(c.TouchedAt)
	if len(c.Metadata) == 0 {
		c.Metadata = []byte("{}")
	}
	what := fmt.Sprintf("create conversation %q", c.ID)
	return s.inTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO conversations (id, owner_id, metadata, next_seq, created_at, touched_at)
  VALUES (?, ?, ?, 1, ?, ?)`, c.ID, c.OwnerID, string(c.Metadata), tv(c.CreatedAt), tv(c.TouchedAt))
		if err != nil {
			return fail(err, what)
		}
		return fail(s.appendItems(ctx, tx, c.OwnerID, c.ID, items, blobs, c.TouchedAt), what)
	})
}

const convCols = "id, owner_id, metadata, created_at, touched_at"

func convDest(c *store.Conversation, meta *string) []any {
	return []any{&c.ID, &c.OwnerID, meta, timeDest{&c.CreatedAt}, timeDest{&c.TouchedAt}}
}

// Conversation reads one of owner's conversations, touching it at at.
func (s *Store) Conversation(ctx context.Context, ownerID int64, id string, at time.Time) (store.Conversation, error) {
	what := fmt.Sprintf("conversation %q", id)
	if err := s.touch(ctx, "conversations", ownerID, id, at); err != nil {
		return store.Conversation{}, fail(err, what)
	}
	var (
		c    store.Conversation
		meta string
	)
	err := s.db.QueryRowContext(ctx, "SELECT "+convCols+" FROM conversations WHERE id = ? AND owner_id = ?", id, ownerID).
		Scan(convDest(&c, &meta)...)
	c.Metadata = []byte(meta)
	return c, fail(err, what)
}

// UpdateConversation replaces the metadata and touches the conversation.
func (s *Store) UpdateConversation(ctx context.Context, ownerID int64, id string, metadata []byte, at time.Time) (store.Conversation, error) {
	what := fmt.Sprintf("update conversation %q", id)
	if len(metadata) == 0 {
		metadata = []byte("{}")
	}
	if at.IsZero() {
		at = now()
	}
	res, err := s.db.ExecContext(ctx, `UPDATE conversations SET metadata = ?,
  touched_at = CASE WHEN touched_at < ? THEN ? ELSE touched_at END WHERE id = ? AND owner_id = ?`,
		string(metadata), tv(at), tv(at), id, ownerID)
	if err := affected(res, err, what); err != nil {
		return store.Conversation{}, err
	}
	return s.Conversation(ctx, ownerID, id, time.Time{})
}

// DeleteConversation deletes one of owner's conversations with its items
// and blob references.
func (s *Store) DeleteConversation(ctx context.Context, ownerID int64, id string) error {
	res, err := s.db.ExecContext(ctx, "DELETE FROM conversations WHERE id = ? AND owner_id = ?", id, ownerID)
	return affected(res, err, fmt.Sprintf("delete conversation %q", id))
}

// AppendConversationItems adds items (and their blobs) after the
// conversation's last one.
func (s *Store) AppendConversationItems(ctx context.Context, ownerID int64, id string, items []store.ConversationItem,
	blobs []store.Blob, at time.Time) error {
	if at.IsZero() {
		at = now()
	}
	return s.inTx(ctx, func(tx *sql.Tx) error {
		return fail(s.appendItems(ctx, tx, ownerID, id, items, blobs, norm(at)), fmt.Sprintf("append to conversation %q", id))
	})
}

// appendItems reserves len(items) sequence numbers with one UPDATE of the
// conversation row, whose lock orders concurrent appends (and checks the
// owner), then inserts the items, blobs and references.
func (s *Store) appendItems(ctx context.Context, tx *sql.Tx, ownerID int64, id string, items []store.ConversationItem,
	blobs []store.Blob, at time.Time) error {
	res, err := tx.ExecContext(ctx, `UPDATE conversations SET next_seq = next_seq + ?,
  touched_at = CASE WHEN touched_at < ? THEN ? ELSE touched_at END WHERE id = ? AND owner_id = ?`,
		len(items), tv(at), tv(at), id, ownerID)
	if err := affected(res, err, "reserve item numbers"); err != nil {
		return err
	}
	var next int64
	if err := tx.QueryRowContext(ctx, "SELECT next_seq FROM conversations WHERE id = ?", id).Scan(&next); err != nil {
		return fmt.Errorf("read item numbers: %w", err)
	}
	if err := s.putBlobs(ctx, tx, blobs, at); err != nil {
		return err
	}
	hashes := make([]string, len(blobs))
	for i, b := range blobs {
		hashes[i] = b.Hash
	}
	if err := s.insertRefs(ctx, tx, "conversation_blob_refs", "conversation_id", id, hashes); err != nil {
		return err
	}
	first := next - int64(len(items))
	extra := blobBytes(blobs) // charged to the write's first item
	for i := range items {
		it := &items[i]
		it.ConversationID, it.Seq = id, first+int64(i)
		if it.CreatedAt.IsZero() {
			it.CreatedAt = at
		}
		it.CreatedAt = norm(it.CreatedAt)
		size := int64(len(it.Item))
		if i == 0 {
			size += extra
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO conversation_items (conversation_id, seq, item_id, item, created_at)
  VALUES (?, ?, ?, ?, ?)`, id, it.Seq, it.ItemID, string(it.Item), tv(it.CreatedAt)); err != nil {
			return fmt.Errorf("insert item %q: %w", it.ItemID, err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO conversation_item_sizes (conversation_id, seq, owner_id, size)
  VALUES (?, ?, ?, ?)`, id, it.Seq, ownerID, size); err != nil {
			return fmt.Errorf("insert the size of item %q: %w", it.ItemID, err)
		}
	}
	return nil
}

// ConversationItems lists a page of one of owner's conversation's items.
func (s *Store) ConversationItems(ctx context.Context, ownerID int64, id string, page store.ItemPage) ([]store.ConversationItem, bool, error) {
	what := fmt.Sprintf("items of conversation %q", id)
	var n int
	if err := s.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM conversations WHERE id = ? AND owner_id = ?", id, ownerID).Scan(&n); err != nil {
		return nil, false, fail(err, what)
	}
	if n == 0 {
		return nil, false, fmt.Errorf("%s: %w", what, store.ErrNotFound)
	}
	q, args := "SELECT conversation_id, seq, item_id, item, created_at FROM conversation_items WHERE conversation_id = ?", []any{id}
	if page.After != "" {
		// The newest item with that id (ids need not be unique).
		var after sql.NullInt64
		err := s.db.QueryRowContext(ctx, "SELECT MAX(seq) FROM conversation_items WHERE conversation_id = ? AND item_id = ?",
			id, page.After).Scan(&after)
		if err == nil && !after.Valid {
			err = sql.ErrNoRows
		}
		if err != nil {
			return nil, false, fail(err, fmt.Sprintf("%s after %q", what, page.After))
		}
		if page.Desc {
			q += " AND seq < ?"
		} else {
			q += " AND seq > ?"
		}
		args = append(args, after.Int64)
	}
	if page.Desc {
		q += " ORDER BY seq DESC"
	} else {
		q += " ORDER BY seq"
	}
	if page.Limit > 0 {
		q += " LIMIT ?"
		args = append(args, page.Limit+1)
	}
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, false, fail(err, what)
	}
	defer rows.Close()
	var (
		items []store.ConversationItem
		total int
		over  bool
	)
	for rows.Next() {
		var (
			it   store.ConversationItem
			body sql.RawBytes // the driver's buffer: not copied unless kept
		)
		if err := rows.Scan(&it.ConversationID, &it.Seq, &it.ItemID, &body, timeDest{&it.CreatedAt}); err != nil {
			return nil, false, fail(err, what)
		}
		if total += len(body); page.MaxBytes > 0 && total > page.MaxBytes {
			over = true // the rows after it are not read (rows.Close)
			break
		}
		it.Item = []byte(string(body))
		items = append(items, it)
	}
	if err := rows.Err(); err != nil {
		return nil, false, fail(err, what)
	}
	more := over
	if page.Limit > 0 && len(items) > page.Limit {
		items, more = items[:page.Limit], true
	}
	return items, more, nil
}

// ConversationItem reads the newest item with itemID of one of owner's
// conversations.
func (s *Store) ConversationItem(ctx context.Context, ownerID int64, id, itemID string) (store.ConversationItem, error) {
	var (
		it   store.ConversationItem
		body string
	)
	err := s.db.QueryRowContext(ctx, `SELECT i.conversation_id, i.seq, i.item_id, i.item, i.created_at
  FROM conversation_items i JOIN conversations c ON c.id = i.conversation_id
  WHERE i.conversation_id = ? AND c.owner_id = ? AND i.item_id = ? ORDER BY i.seq DESC LIMIT 1`, id, ownerID, itemID).
		Scan(&it.ConversationID, &it.Seq, &it.ItemID, &body, timeDest{&it.CreatedAt})
	it.Item = []byte(body)
	return it, fail(err, fmt.Sprintf("item %q of conversation %q", itemID, id))
}

// DeleteConversationItem deletes the items with itemID of one of owner's
// conversations and touches it. The blobs the items referred to stay
// referenced by the conversation until it goes.
func (s *Store) DeleteConversationItem(ctx context.Context, ownerID int64, id, itemID string, at time.Time) error {
	what := fmt.Sprintf("delete item %q of conversation %q", itemID, id)
	if at.IsZero() {
		at = now()
	}
	return s.inTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE conversations SET touched_at = CASE WHEN touched_at < ? THEN ? ELSE touched_at END
  WHERE id = ? AND owner_id = ?`, tv(at), tv(at), id, ownerID)
		if err := affected(res, err, what); err != nil {
			return err
		}
		res, err = tx.ExecContext(ctx, "DELETE FROM conversation_items WHERE conversation_id = ? AND item_id = ?", id, itemID)
		return affected(res, err, what)
	})
}

// PutBlob stores b once; an existing hash is only touched.
func (s *Store) PutBlob(ctx context.Context, b *store.Blob) error {
	blobs := []store.Blob{*b}
	if err := s.putBlobs(ctx, s.db, blobs, now()); err != nil {
		return fail(err, "put blob")
	}
	*b = blobs[0]
	return nil
}

// Blob reads a blob by hash.
func (s *Store) Blob(ctx context.Context, hash string) (store.Blob, error) {
	var b store.Blob
	err := s.db.QueryRowContext(ctx, "SELECT hash, data, created_at, touched_at FROM response_blobs WHERE hash = ?", hash).
		Scan(&b.Hash, &b.Data, timeDest{&b.CreatedAt}, timeDest{&b.TouchedAt})
	return b, fail(err, fmt.Sprintf("blob %s", hash))
}

// DeleteBlob deletes a blob whatever refers to it.
func (s *Store) DeleteBlob(ctx context.Context, hash string) error {
	res, err := s.db.ExecContext(ctx, "DELETE FROM response_blobs WHERE hash = ?", hash)
	return affected(res, err, fmt.Sprintf("delete blob %s", hash))
}

// DeleteExpired deletes, in batches, responses and conversations touched
// before before (their items and references cascade), then the blobs
// touched before it that no reference names. A blob put for a response
// being stored right now is touched now, so the sweep cannot take it
// from under that write.
func (s *Store) DeleteExpired(ctx context.Context, before time.Time) (int64, error) {
	var total int64
	for _, step := range []struct{ table, where, key string }{
		{"stored_responses", "touched_at < ?", "id"},
		{"conversations", "touched_at < ?", "id"},
		{"response_blobs", `touched_at < ?
  AND NOT EXISTS (SELECT 1 FROM response_blob_refs r WHERE r.hash = response_blobs.hash)
  AND NOT EXISTS (SELECT 1 FROM conversation_blob_refs c WHERE c.hash = response_blobs.hash)`, "hash"},
	} {
		n, err := s.deleteBatches(ctx, step.table, step.key, step.where, tv(before))
		total += n
		if err != nil {
			return total, fmt.Errorf("delete expired %s: %w", step.table, err)
		}
	}
	return total, nil
}

// deleteBatches deletes the rows of table matching where, expireBatch
// keys at a time (the condition is checked again on delete: a row touched
// in between stays).
func (s *Store) deleteBatches(ctx context.Context, table, key, where string, arg any) (int64, error) {
	var total int64
	for {
		rows, err := s.db.QueryContext(ctx, fmt.Sprintf("SELECT %s FROM %s WHERE %s LIMIT %d", key, table, where, expireBatch), arg)
		if err != nil {
			return total, err
		}
		var keys []any
		for rows.Next() {
			var k string
			if err := rows.Scan(&k); err != nil {
				rows.Close()
				return total, err
			}
			keys = append(keys, k)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return total, err
		}
		if len(keys) == 0 {
			return total, nil
		}
		marks := strings.TrimSuffix(strings.Repeat("?, ", len(keys)), ", ")
		res, err := s.db.ExecContext(ctx, fmt.Sprintf("DELETE FROM %s WHERE %s IN (%s) AND %s", table, key, marks, where),
			append(keys, arg)...)
		if err != nil {
			return total, err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return total, err
		}
		total += n
		if len(keys) < expireBatch {
			return total, nil
		}
		if n == 0 {
			return total, errors.New("no progress deleting a full batch")
		}
	}
}
