package audit

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// BlobReader reads the blobs that stored content refers to (for an
// auditor: GET /api/admin/audit/blobs/{sha256}). The searchers that
// NewClickHouseSearcher and NewSQLiteSearcher return implement it.
type BlobReader interface {
	// Blob returns the blob with this hash (64 lowercase hex digits);
	// ErrNotFound when none is stored.
	Blob(ctx context.Context, sha256 string) (Blob, error)
}

// ErrBadHash is Blob's answer for a hash that is not 64 lowercase hex
// digits.
var ErrBadHash = errors.New("audit: a blob hash is 64 lowercase hex digits")

func validHash(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

func (s *chSearcher) Blob(ctx context.Context, sum string) (Blob, error) {
	if !validHash(sum) {
		return Blob{}, ErrBadHash
	}
	b := Blob{SHA256: sum}
	// The hash is validated: it is spliced as a literal.
	err := s.conn.QueryRow(ctx, "SELECT media_type, data FROM "+s.blobs+" WHERE sha256 = '"+sum+"' LIMIT 1").Scan(&b.MediaType, &b.Data)
	if errors.Is(err, sql.ErrNoRows) {
		return Blob{}, ErrNotFound
	}
	if err != nil {
		return Blob{}, fmt.Errorf("audit: read blob: %w", err)
	}
	return b, nil
}

func (s *sqliteSearcher) Blob(ctx context.Context, sum string) (Blob, error) {
	if !validHash(sum) {
		return Blob{}, ErrBadHash
	}
	b := Blob{SHA256: sum}
	var data []byte
	err := s.db.QueryRowContext(ctx, `SELECT media_type, data FROM blobs WHERE sha256 = ?`, sum).Scan(&b.MediaType, &data)
	if errors.Is(err, sql.ErrNoRows) {
		return Blob{}, ErrNotFound
	}
	if err != nil {
		return Blob{}, fmt.Errorf("audit: read blob: %w", err)
	}
	b.Data = string(data)
	return b, nil
}
