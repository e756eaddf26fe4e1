package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"

	"github.com/mindrouter/mindrouter/core/store"
)

// Usage reads a user's counters; a zero Usage (with UserID set) when none
// are stored.
func (s *Store) Usage(ctx context.Context, userID int64) (store.Usage, error) {
	u := store.Usage{UserID: userID}
	err := s.db.QueryRowContext(ctx, `SELECT period_start, tokens_used, lifetime_tokens, updated_at
FROM user_usage WHERE user_id = ?`, userID).Scan(timeDest{&u.PeriodStart}, &u.TokensUsed, &u.LifetimeTokens, timeDest{&u.UpdatedAt})
	if errors.Is(err, sql.ErrNoRows) {
		return store.Usage{UserID: userID}, nil
	}
	return u, fail(err, fmt.Sprintf("usage of user %d", userID))
}

// The upserts insert through a SELECT from users so that a row for a user
// deleted meanwhile is skipped rather than failing the batch. PeriodStart
// and TokensUsed are replaced only by figures at least as new (UpdatedAt)
// as the stored ones; LifetimeTokens only grows. MySQL assigns left to
// right with the new values visible, so updated_at is assigned last;
// users has an updated_at too, hence the qualified names.
const (
	saveUsageMySQL = `INSERT INTO user_usage (user_id, period_start, tokens_used, lifetime_tokens, updated_at)
SELECT id, ?, ?, ?, ? FROM users WHERE id = ?
ON DUPLICATE KEY UPDATE
  period_start = IF(VALUES(updated_at) >= user_usage.updated_at, VALUES(period_start), user_usage.period_start),
  tokens_used = IF(VALUES(updated_at) >= user_usage.updated_at, VALUES(tokens_used), user_usage.tokens_used),
  lifetime_tokens = GREATEST(user_usage.lifetime_tokens, VALUES(lifetime_tokens)),
  updated_at = GREATEST(user_usage.updated_at, VALUES(updated_at))`
	saveUsageSQLite = `INSERT INTO user_usage (user_id, period_start, tokens_used, lifetime_tokens, updated_at)
SELECT id, ?, ?, ?, ? FROM users WHERE id = ?
ON CONFLICT (user_id) DO UPDATE SET
  period_start = CASE WHEN excluded.updated_at >= user_usage.updated_at THEN excluded.period_start ELSE user_usage.period_start END,
  tokens_used = CASE WHEN excluded.updated_at >= user_usage.updated_at THEN excluded.tokens_used ELSE user_usage.tokens_used END,
  lifetime_tokens = MAX(user_usage.lifetime_tokens, excluded.lifetime_tokens),
  updated_at = MAX(user_usage.updated_at, excluded.updated_at)`
)

// SaveUsage upserts each row in one transaction. A zero UpdatedAt is now.
// Rows of users that no longer exist are skipped. Rows of one user in one
// batch apply in the order given.
func (s *Store) SaveUsage(ctx context.Context, rows []store.Usage) error {
	if len(rows) == 0 {
		return nil
	}
	q := saveUsageSQLite
	if s.dialect == MySQL {
		q = saveUsageMySQL
	}
	t := now()
	// In user order, so that two replicas flushing overlapping batches
	// take their row locks in the same order (no deadlock).
	rows = slices.Clone(rows)
	slices.SortStableFunc(rows, func(a, b store.Usage) int { return cmp.Compare(a.UserID, b.UserID) })
	return s.inTx(ctx, func(tx *sql.Tx) error {
		stmt, err := tx.PrepareContext(ctx, q)
		if err != nil {
			return fail(err, "save usage")
		}
		defer stmt.Close()
		for _, r := range rows {
			at := r.UpdatedAt
			if at.IsZero() {
				at = t
			}
			if _, err := stmt.ExecContext(ctx, tv(r.PeriodStart), r.TokensUsed, r.LifetimeTokens, tv(at), r.UserID); err != nil {
				return fail(err, fmt.Sprintf("save usage of user %d", r.UserID))
			}
		}
		return nil
	})
}
