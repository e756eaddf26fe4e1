package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/mindrouter/mindrouter/core/store"
)

const userCols = "u.id, u.username, u.email, u.full_name, u.group_id, u.active, u.token_budget, u.rpm, " +
	"u.max_concurrent, u.weight, " + userAccessCol + ", u.created_at, u.updated_at"

func userDest(u *store.User) []any {
	return []any{&u.ID, &u.Username, &u.Email, &u.FullName, &u.GroupID, &u.Active, &u.TokenBudget, &u.RPM,
		&u.MaxConcurrent, &u.Weight, userAccessDest{&u.ModelAccess}, timeDest{&u.CreatedAt}, timeDest{&u.UpdatedAt}}
}

// CreateUser inserts u and sets its ID, CreatedAt and UpdatedAt.
// ErrConflict when the username is taken or the group does not exist.
func (s *Store) CreateUser(ctx context.Context, u *store.User) error {
	t := now()
	what := fmt.Sprintf("create user %q", u.Username)
	var id int64
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO users (username, email, full_name, group_id, active,
  token_budget, rpm, max_concurrent, weight, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			u.Username, u.Email, u.FullName, u.GroupID, u.Active, u.TokenBudget, u.RPM, u.MaxConcurrent, u.Weight, tv(t), tv(t))
		if err != nil {
			return err
		}
		if id, err = res.LastInsertId(); err != nil {
			return err
		}
		return setUserAccess(ctx, tx, id, u.ModelAccess)
	})
	if err != nil {
		return fail(err, what)
	}
	u.ID, u.CreatedAt, u.UpdatedAt = id, t, t
	return nil
}

// User reads a user by ID.
func (s *Store) User(ctx context.Context, id int64) (store.User, error) {
	var u store.User
	err := s.db.QueryRowContext(ctx, "SELECT "+userCols+" FROM users u WHERE u.id = ?", id).Scan(userDest(&u)...)
	return u, fail(err, fmt.Sprintf("user %d", id))
}

// UserByName reads a user by username, ignoring ASCII case (MySQL also
// folds other letters): usernames are unique that way (migration 0003).
func (s *Store) UserByName(ctx context.Context, username string) (store.User, error) {
	q := "SELECT " + userCols + " FROM users u WHERE u.username = ?"
	if s.dialect == SQLite {
		q += " COLLATE NOCASE"
	}
	var u store.User
	err := s.db.QueryRowContext(ctx, q, username).Scan(userDest(&u)...)
	return u, fail(err, fmt.Sprintf("user %q", username))
}

// Users lists users by ID with the total that match f. Search matches a
// substring of username, email or full name, ignoring ASCII case
// (MySQL also folds other letters); % and _ in it are literal.
func (s *Store) Users(ctx context.Context, f store.UserFilter) ([]store.User, int, error) {
	var (
		where []string
		args  []any
	)
	if f.GroupID != 0 {
		where = append(where, "u.group_id = ?")
		args = append(args, f.GroupID)
	}
	if f.Search != "" {
		pat := "%" + escapeLike(strings.ToLower(f.Search)) + "%"
		where = append(where, "(LOWER(u.username) LIKE ? ESCAPE '!' OR LOWER(u.email) LIKE ? ESCAPE '!' OR LOWER(u.full_name) LIKE ? ESCAPE '!')")
		args = append(args, pat, pat, pat)
	}
	cond := ""
	if len(where) > 0 {
		cond = " WHERE " + strings.Join(where, " AND ")
	}
	var total int
	if err := s.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM users u"+cond, args...).Scan(&total); err != nil {
		return nil, 0, fail(err, "count users")
	}
	limit := f.Limit
	if limit <= 0 {
		limit = 100
	}
	offset := max(f.Offset, 0)
	rows, err := s.db.QueryContext(ctx, "SELECT "+userCols+" FROM users u"+cond+" ORDER BY u.id LIMIT ? OFFSET ?",
		append(args, limit, offset)...)
	if err != nil {
		return nil, 0, fail(err, "list users")
	}
	defer rows.Close()
	var us []store.User
	for rows.Next() {
		var u store.User
		if err := rows.Scan(userDest(&u)...); err != nil {
			return nil, 0, fail(err, "list users")
		}
		us = append(us, u)
	}
	return us, total, fail(rows.Err(), "list users")
}

// escapeLike makes s literal inside a LIKE pattern with ESCAPE '!'.
// ('!' rather than '\', which MySQL string literals would also unescape.)
func escapeLike(s string) string {
	return strings.NewReplacer("!", "!!", "%", "!%", "_", "!_").Replace(s)
}

// UpdateUser writes every field of u but CreatedAt, and sets UpdatedAt.
func (s *Store) UpdateUser(ctx context.Context, u *store.User) error {
	t := now()
	what := fmt.Sprintf("update user %d", u.ID)
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE users SET username = ?, email = ?, full_name = ?, group_id = ?,
  active = ?, token_budget = ?, rpm = ?, max_concurrent = ?, weight = ?, updated_at = ? WHERE id = ?`,
			u.Username, u.Email, u.FullName, u.GroupID, u.Active, u.TokenBudget, u.RPM, u.MaxConcurrent, u.Weight, tv(t), u.ID)
		if err := rowsAffected(res, err); err != nil {
			return err
		}
		return setUserAccess(ctx, tx, u.ID, u.ModelAccess)
	})
	if err != nil {
		return fail(err, what)
	}
	u.UpdatedAt = t
	return nil
}

// DeleteUser deletes a user; the foreign keys cascade to its keys and
// usage.
func (s *Store) DeleteUser(ctx context.Context, id int64) error {
	res, err := s.db.ExecContext(ctx, "DELETE FROM users WHERE id = ?", id)
	return affected(res, err, fmt.Sprintf("delete user %d", id))
}
