package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/mindrouter/mindrouter/core/store"
)

// The console's sessions (migration 0006): store.Sessions.
var _ store.Sessions = (*Store)(nil)

// PutSession inserts or replaces a session record.
func (s *Store) PutSession(ctx context.Context, idHash, data []byte, expires time.Time) error {
	q := "INSERT INTO console_sessions (id_hash, data, expires_at) VALUES (?, ?, ?) " +
		"ON CONFLICT (id_hash) DO UPDATE SET data = excluded.data, expires_at = excluded.expires_at"
	if s.dialect == MySQL {
		q = "INSERT INTO console_sessions (id_hash, data, expires_at) VALUES (?, ?, ?) " +
			"ON DUPLICATE KEY UPDATE data = VALUES(data), expires_at = VALUES(expires_at)"
	}
	if _, err := s.db.ExecContext(ctx, q, idHash, string(data), expires.UnixMilli()); err != nil {
		return fmt.Errorf("put console session: %w", markUnavailable(err))
	}
	return nil
}

// Session reads a session record that has not expired at now.
func (s *Store) Session(ctx context.Context, idHash []byte, now time.Time) ([]byte, error) {
	var data string
	err := s.db.QueryRowContext(ctx, "SELECT data FROM console_sessions WHERE id_hash = ? AND expires_at > ?",
		idHash, now.UnixMilli()).Scan(&data)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("console session: %w", store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("read console session: %w", markUnavailable(err))
	}
	return []byte(data), nil
}

// DeleteSession deletes a session record (none: no error).
func (s *Store) DeleteSession(ctx context.Context, idHash []byte) error {
	if _, err := s.db.ExecContext(ctx, "DELETE FROM console_sessions WHERE id_hash = ?", idHash); err != nil {
		return fmt.Errorf("delete console session: %w", markUnavailable(err))
	}
	return nil
}

// PruneSessions deletes the records that expired before now.
func (s *Store) PruneSessions(ctx context.Context, now time.Time) (int64, error) {
	r, err := s.db.ExecContext(ctx, "DELETE FROM console_sessions WHERE expires_at <= ?", now.UnixMilli())
	if err != nil {
		return 0, fmt.Errorf("prune console sessions: %w", markUnavailable(err))
	}
	n, _ := r.RowsAffected()
	return n, nil
}
