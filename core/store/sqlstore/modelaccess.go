package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
)

// Model access lists (migration 0004) are JSON arrays of patterns in two
// side tables, read with the group or user by a scalar subquery in the
// column list (no FROM clause changes) and written in the transaction
// that writes the group or user, so a list never lags its row: a group
// written without its list would briefly allow every model.

const (
	groupAccessCol = "(SELECT ma.patterns FROM group_model_access ma WHERE ma.group_id = g.id)"
	userAccessCol  = "(SELECT ma.patterns FROM user_model_access ma WHERE ma.user_id = u.id)"
)

// setGroupAccess replaces group id's list; an empty one removes the row.
func setGroupAccess(ctx context.Context, q querier, id int64, pats []string) error {
	if _, err := q.ExecContext(ctx, "DELETE FROM group_model_access WHERE group_id = ?", id); err != nil {
		return fmt.Errorf("clear model access of group %d: %w", id, err)
	}
	if len(pats) == 0 {
		return nil
	}
	b, err := json.Marshal(pats)
	if err != nil {
		return fmt.Errorf("encode model access: %w", err)
	}
	if _, err := q.ExecContext(ctx, "INSERT INTO group_model_access (group_id, patterns) VALUES (?, ?)", id, string(b)); err != nil {
		return fmt.Errorf("set model access of group %d: %w", id, err)
	}
	return nil
}

// setUserAccess replaces user id's override: nil removes it (inherit the
// group's), an empty list stores "[]" (every model).
func setUserAccess(ctx context.Context, q querier, id int64, pats *[]string) error {
	if _, err := q.ExecContext(ctx, "DELETE FROM user_model_access WHERE user_id = ?", id); err != nil {
		return fmt.Errorf("clear model access of user %d: %w", id, err)
	}
	if pats == nil {
		return nil
	}
	b := []byte("[]")
	if len(*pats) > 0 {
		var err error
		if b, err = json.Marshal(*pats); err != nil {
			return fmt.Errorf("encode model access: %w", err)
		}
	}
	if _, err := q.ExecContext(ctx, "INSERT INTO user_model_access (user_id, patterns) VALUES (?, ?)", id, string(b)); err != nil {
		return fmt.Errorf("set model access of user %d: %w", id, err)
	}
	return nil
}

// accessDest scans a group's list (NULL: none, every model).
type accessDest struct{ dst *[]string }

func (d accessDest) Scan(src any) error {
	var ns sql.NullString
	if err := ns.Scan(src); err != nil {
		return err
	}
	*d.dst = nil
	if !ns.Valid || ns.String == "" {
		return nil
	}
	if err := json.Unmarshal([]byte(ns.String), d.dst); err != nil {
		return fmt.Errorf("sqlstore: decode model access: %w", err)
	}
	if len(*d.dst) == 0 {
		*d.dst = nil
	}
	return nil
}

// userAccessDest scans a user's override (NULL: nil, inherit).
type userAccessDest struct{ dst **[]string }

func (d userAccessDest) Scan(src any) error {
	var ns sql.NullString
	if err := ns.Scan(src); err != nil {
		return err
	}
	*d.dst = nil
	if !ns.Valid {
		return nil
	}
	pats := []string{}
	if err := json.Unmarshal([]byte(ns.String), &pats); err != nil {
		return fmt.Errorf("sqlstore: decode model access: %w", err)
	}
	*d.dst = &pats
	return nil
}

// rowsAffected is affected inside a transaction whose error fail wraps
// once at the end: sql.ErrNoRows (ErrNotFound there) when nothing matched.
func rowsAffected(res sql.Result, err error) error {
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return sql.ErrNoRows
	}
	return nil
}
