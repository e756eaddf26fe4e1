package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/mindrouter/mindrouter/core/store"
)

const groupCols = "g.id, g.name, g.description, g.token_budget, g.budget_period_days, g.rpm, g.max_concurrent, " +
	"g.weight, g.is_admin, g.is_auditor, g.key_expiry_days, g.max_keys, " + groupAccessCol + ", g.created_at, g.updated_at"

func groupDest(g *store.Group) []any {
	return []any{&g.ID, &g.Name, &g.Description, &g.TokenBudget, &g.BudgetPeriodDays, &g.RPM, &g.MaxConcurrent,
		&g.Weight, &g.IsAdmin, &g.IsAuditor, &g.KeyExpiryDays, &g.MaxKeys, accessDest{&g.ModelAccess}, timeDest{&g.CreatedAt}, timeDest{&g.UpdatedAt}}
}

// CreateGroup inserts g and sets its ID, CreatedAt and UpdatedAt. A
// BudgetPeriodDays of 0 becomes 30 and a Weight of 0 becomes 1.
func (s *Store) CreateGroup(ctx context.Context, g *store.Group) error {
	groupDefaults(g)
	t := now()
	var id int64
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO user_groups (name, description, token_budget, budget_period_days, rpm,
  max_concurrent, weight, is_admin, is_auditor, key_expiry_days, max_keys, created_at, updated_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			g.Name, g.Description, g.TokenBudget, g.BudgetPeriodDays, g.RPM, g.MaxConcurrent, g.Weight,
			g.IsAdmin, g.IsAuditor, g.KeyExpiryDays, g.MaxKeys, tv(t), tv(t))
		if err != nil {
			return err
		}
		if id, err = res.LastInsertId(); err != nil {
			return err
		}
		return setGroupAccess(ctx, tx, id, g.ModelAccess)
	})
	if err != nil {
		return fail(err, fmt.Sprintf("create group %q", g.Name))
	}
	g.ID, g.CreatedAt, g.UpdatedAt = id, t, t
	return nil
}

// Group reads a group by ID.
func (s *Store) Group(ctx context.Context, id int64) (store.Group, error) {
	var g store.Group
	err := s.db.QueryRowContext(ctx, "SELECT "+groupCols+" FROM user_groups g WHERE g.id = ?", id).Scan(groupDest(&g)...)
	return g, fail(err, fmt.Sprintf("group %d", id))
}

// GroupByName reads a group by name.
func (s *Store) GroupByName(ctx context.Context, name string) (store.Group, error) {
	var g store.Group
	err := s.db.QueryRowContext(ctx, "SELECT "+groupCols+" FROM user_groups g WHERE g.name = ?", name).Scan(groupDest(&g)...)
	return g, fail(err, fmt.Sprintf("group %q", name))
}

// Groups lists every group by ID.
func (s *Store) Groups(ctx context.Context) ([]store.Group, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT "+groupCols+" FROM user_groups g ORDER BY g.id")
	if err != nil {
		return nil, fail(err, "list groups")
	}
	defer rows.Close()
	var gs []store.Group
	for rows.Next() {
		var g store.Group
		if err := rows.Scan(groupDest(&g)...); err != nil {
			return nil, fail(err, "list groups")
		}
		gs = append(gs, g)
	}
	return gs, fail(rows.Err(), "list groups")
}

// UpdateGroup writes every field of g but CreatedAt, and sets UpdatedAt;
// zero BudgetPeriodDays and Weight become their defaults as in CreateGroup.
func (s *Store) UpdateGroup(ctx context.Context, g *store.Group) error {
	return s.updateGroup(ctx, g, false)
}

// UpdateGroupKeepingAdmin implements store.Store. The admin groups' rows
// are locked (MySQL: SELECT … FOR UPDATE; SQLite transactions are
// IMMEDIATE, one writer at a time) before the check: of two demotions of
// the last two admin groups at once, the second sees the first's.
func (s *Store) UpdateGroupKeepingAdmin(ctx context.Context, g *store.Group) error {
	return s.updateGroup(ctx, g, true)
}

func (s *Store) updateGroup(ctx context.Context, g *store.Group, keepAdmin bool) error {
	groupDefaults(g)
	t := now()
	what := fmt.Sprintf("update group %d", g.ID)
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		if keepAdmin && !g.IsAdmin {
			if err := s.keepAnAdminGroup(ctx, tx, g.ID); err != nil {
				return err
			}
		}
		res, err := tx.ExecContext(ctx, `UPDATE user_groups SET name = ?, description = ?, token_budget = ?,
  budget_period_days = ?, rpm = ?, max_concurrent = ?, weight = ?, is_admin = ?, is_auditor = ?,
  key_expiry_days = ?, max_keys = ?, updated_at = ? WHERE id = ?`,
			g.Name, g.Description, g.TokenBudget, g.BudgetPeriodDays, g.RPM, g.MaxConcurrent, g.Weight,
			g.IsAdmin, g.IsAuditor, g.KeyExpiryDays, g.MaxKeys, tv(t), g.ID)
		if err := rowsAffected(res, err); err != nil {
			return err
		}
		return setGroupAccess(ctx, tx, g.ID, g.ModelAccess)
	})
	if errors.Is(err, store.ErrLastAdmin) {
		return fmt.Errorf("%s: %w", what, err)
	}
	if err != nil {
		return fail(err, what)
	}
	g.UpdatedAt = t
	return nil
}

// keepAnAdminGroup returns ErrLastAdmin when group id is an admin group
// and no other admin group has an active member, holding the admin
// groups' rows until tx ends.
func (s *Store) keepAnAdminGroup(ctx context.Context, tx *sql.Tx, id int64) error {
	lock := "SELECT id FROM user_groups WHERE is_admin = ? ORDER BY id"
	if s.dialect == MySQL {
		lock += " FOR UPDATE"
	}
	rows, err := tx.QueryContext(ctx, lock, true)
	if err != nil {
		return err
	}
	var others []int64
	demoted := false
	for rows.Next() {
		var gid int64
		if err := rows.Scan(&gid); err != nil {
			rows.Close()
			return err
		}
		if gid == id {
			demoted = true
		} else {
			others = append(others, gid)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	if !demoted {
		return nil // not an admin group: nothing is taken
	}
	for _, gid := range others {
		var one int
		err := tx.QueryRowContext(ctx, "SELECT 1 FROM users WHERE group_id = ? AND active = ? LIMIT 1", gid, true).Scan(&one)
		if err == nil {
			return nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
	}
	return store.ErrLastAdmin
}

// DeleteGroup deletes an empty group; ErrConflict while users belong to it.
func (s *Store) DeleteGroup(ctx context.Context, id int64) error {
	res, err := s.db.ExecContext(ctx, "DELETE FROM user_groups WHERE id = ?", id)
	if isConflict(err) {
		return fmt.Errorf("delete group %d: users still belong to it: %w", id, store.ErrConflict)
	}
	return affected(res, err, fmt.Sprintf("delete group %d", id))
}

func groupDefaults(g *store.Group) {
	if g.BudgetPeriodDays == 0 {
		g.BudgetPeriodDays = 30
	}
	if g.Weight == 0 {
		g.Weight = 1
	}
}
