package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/mindrouter/mindrouter/core/store"
)

const keyCols = "k.id, k.user_id, k.name, k.prefix, k.hash, k.argon2, k.scopes, k.status, k.expires_at, " +
	"k.last_used_at, k.usage_count, k.created_at, k.revoked_at"

func keyDest(k *store.APIKey) []any {
	return []any{&k.ID, &k.UserID, &k.Name, &k.Prefix, &k.Hash, &k.Argon2, &k.Scopes, &k.Status,
		nullTimeDest{&k.ExpiresAt}, nullTimeDest{&k.LastUsedAt}, &k.UsageCount, timeDest{&k.CreatedAt}, nullTimeDest{&k.RevokedAt}}
}

// CreateKey inserts k and sets its ID; an empty Status becomes
// store.KeyActive and a zero CreatedAt now. Times are normalised to what
// reads back (UTC, microseconds). ErrConflict when the hash is taken or
// the user does not exist.
func (s *Store) CreateKey(ctx context.Context, k *store.APIKey) error {
	return insertKey(ctx, s.db, k)
}

// CreateKeyCapped implements store.Store. The user's row is locked
// (MySQL: SELECT … FOR UPDATE; SQLite transactions are IMMEDIATE, one
// writer at a time) before the count, so concurrent calls for one user
// — from any replica — are serialised by the database.
func (s *Store) CreateKeyCapped(ctx context.Context, k *store.APIKey, max int, at time.Time) (active int, err error) {
	what := fmt.Sprintf("create key %q for user %d", k.Prefix, k.UserID)
	lock := "SELECT id FROM users WHERE id = ?"
	if s.dialect == MySQL {
		lock += " FOR UPDATE"
	}
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		var id int64
		if err := tx.QueryRowContext(ctx, lock, k.UserID).Scan(&id); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return fmt.Errorf("%s: %w", what, store.ErrConflict) // as CreateKey for a missing user
			}
			return fail(err, what)
		}
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM api_keys WHERE user_id = ? AND status = ?
  AND (expires_at IS NULL OR expires_at > ?)`, k.UserID, store.KeyActive, tv(norm(at))).Scan(&active); err != nil {
			return fail(err, what)
		}
		if max > 0 && active >= max {
			return store.ErrLimit
		}
		return insertKey(ctx, tx, k)
	})
	if errors.Is(err, store.ErrLimit) {
		return active, fmt.Errorf("%s: %d active: %w", what, active, store.ErrLimit)
	}
	return active, err
}

// insertKey is CreateKey on db (the pool or a transaction).
func insertKey(ctx context.Context, db querier, k *store.APIKey) error {
	if k.Status == "" {
		k.Status = store.KeyActive
	}
	if k.CreatedAt.IsZero() {
		k.CreatedAt = now()
	}
	k.CreatedAt = norm(k.CreatedAt)
	k.ExpiresAt, k.LastUsedAt, k.RevokedAt = normp(k.ExpiresAt), normp(k.LastUsedAt), normp(k.RevokedAt)
	var hash any
	if k.Hash != nil {
		hash = k.Hash
	}
	what := fmt.Sprintf("create key %q for user %d", k.Prefix, k.UserID)
	res, err := db.ExecContext(ctx, `INSERT INTO api_keys (user_id, name, prefix, hash, argon2, scopes, status,
  expires_at, last_used_at, usage_count, created_at, revoked_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		k.UserID, k.Name, k.Prefix, hash, k.Argon2, k.Scopes, k.Status,
		ntv(k.ExpiresAt), ntv(k.LastUsedAt), k.UsageCount, tv(k.CreatedAt), ntv(k.RevokedAt))
	if err != nil {
		return fail(err, what)
	}
	id, err := res.LastInsertId()
	if err != nil {
		return fail(err, what)
	}
	k.ID = id
	return nil
}

// Key reads a key by ID.
func (s *Store) Key(ctx context.Context, id int64) (store.APIKey, error) {
	var k store.APIKey
	err := s.db.QueryRowContext(ctx, "SELECT "+keyCols+" FROM api_keys k WHERE k.id = ?", id).Scan(keyDest(&k)...)
	return k, fail(err, fmt.Sprintf("key %d", id))
}

// Keys lists a user's keys (every key when userID is 0) by ID.
func (s *Store) Keys(ctx context.Context, userID int64) ([]store.APIKey, error) {
	q, args := "SELECT "+keyCols+" FROM api_keys k ORDER BY k.id", []any(nil)
	if userID != 0 {
		q, args = "SELECT "+keyCols+" FROM api_keys k WHERE k.user_id = ? ORDER BY k.id", []any{userID}
	}
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fail(err, "list keys")
	}
	defer rows.Close()
	var ks []store.APIKey
	for rows.Next() {
		var k store.APIKey
		if err := rows.Scan(keyDest(&k)...); err != nil {
			return nil, fail(err, "list keys")
		}
		ks = append(ks, k)
	}
	return ks, fail(rows.Err(), "list keys")
}

const credentialQuery = "SELECT " + keyCols + ", " + userCols + ", " + groupCols +
	" FROM api_keys k JOIN users u ON u.id = k.user_id JOIN user_groups g ON g.id = u.group_id"

func credentialDest(c *store.Credential) []any {
	d := keyDest(&c.Key)
	d = append(d, userDest(&c.User)...)
	return append(d, groupDest(&c.Group)...)
}

// CredentialByHash reads an issued key with its user and group in one
// query, whatever the key's status or expiry (the caller judges those).
func (s *Store) CredentialByHash(ctx context.Context, hash []byte) (store.Credential, error) {
	var c store.Credential
	err := s.db.QueryRowContext(ctx, credentialQuery+" WHERE k.hash = ?", hash).Scan(credentialDest(&c)...)
	// Never the hash in the message: it identifies a key.
	return c, fail(err, "credential by hash")
}

// CredentialsByPrefix reads the imported keys (Argon2 set) with prefix,
// with their users and groups, in one query.
func (s *Store) CredentialsByPrefix(ctx context.Context, prefix string) ([]store.Credential, error) {
	rows, err := s.db.QueryContext(ctx, credentialQuery+" WHERE k.prefix = ? AND k.argon2 <> '' ORDER BY k.id", prefix)
	if err != nil {
		return nil, fail(err, "credentials by prefix")
	}
	defer rows.Close()
	var cs []store.Credential
	for rows.Next() {
		var c store.Credential
		if err := rows.Scan(credentialDest(&c)...); err != nil {
			return nil, fail(err, "credentials by prefix")
		}
		cs = append(cs, c)
	}
	return cs, fail(rows.Err(), "credentials by prefix")
}

// RevokeKey marks a key revoked at at; revoking it again keeps the first
// time.
func (s *Store) RevokeKey(ctx context.Context, id int64, at time.Time) error {
	res, err := s.db.ExecContext(ctx, "UPDATE api_keys SET status = ?, revoked_at = COALESCE(revoked_at, ?) WHERE id = ?",
		store.KeyRevoked, tv(at), id)
	return affected(res, err, fmt.Sprintf("revoke key %d", id))
}

// DeleteKey deletes a key.
func (s *Store) DeleteKey(ctx context.Context, id int64) error {
	res, err := s.db.ExecContext(ctx, "DELETE FROM api_keys WHERE id = ?", id)
	return affected(res, err, fmt.Sprintf("delete key %d", id))
}

// TouchKeys adds each use to its key in one transaction: usage_count
// grows by Count and last_used_at becomes the later of the stored and the
// given time. Uses of one key are merged first, and rows are updated in ID
// order so that concurrent batches cannot deadlock. Keys deleted meanwhile
// are skipped.
func (s *Store) TouchKeys(ctx context.Context, uses []store.KeyUse) error {
	if len(uses) == 0 {
		return nil
	}
	merged := make([]store.KeyUse, 0, len(uses))
	sorted := slices.Clone(uses)
	slices.SortFunc(sorted, func(a, b store.KeyUse) int { return cmp.Compare(a.KeyID, b.KeyID) })
	for _, u := range sorted {
		if n := len(merged); n > 0 && merged[n-1].KeyID == u.KeyID {
			merged[n-1].Count += u.Count
			if u.LastUsed.After(merged[n-1].LastUsed) {
				merged[n-1].LastUsed = u.LastUsed
			}
			continue
		}
		merged = append(merged, u)
	}
	return s.inTx(ctx, func(tx *sql.Tx) error {
		stmt, err := tx.PrepareContext(ctx, `UPDATE api_keys SET usage_count = usage_count + ?,
  last_used_at = CASE WHEN last_used_at IS NULL OR last_used_at < ? THEN ? ELSE last_used_at END WHERE id = ?`)
		if err != nil {
			return fail(err, "touch keys")
		}
		defer stmt.Close()
		for _, u := range merged {
			t := tv(u.LastUsed)
			if _, err := stmt.ExecContext(ctx, u.Count, t, t, u.KeyID); err != nil {
				return fail(err, fmt.Sprintf("touch key %d", u.KeyID))
			}
		}
		return nil
	})
}
