package sqlstore

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mindrouter/mindrouter/core/store"
)

const backendCols = "b.id, b.name, b.engine, b.url, b.max_concurrent, b.models, b.gpu_indices, b.priority, b.status, " +
	"b.node_id, b.from_config, b.created_at, b.updated_at"

// jsonList scans a JSON array column; an empty array reads as nil.
type jsonList[T any] struct{ p *[]T }

func (d jsonList[T]) Scan(src any) error {
	var b []byte
	switch v := src.(type) {
	case nil:
		*d.p = nil
		return nil
	case string:
		b = []byte(v)
	case []byte:
		b = v
	default:
		return fmt.Errorf("sqlstore: cannot read %T as a JSON list", src)
	}
	var out []T
	if len(b) > 0 {
		if err := json.Unmarshal(b, &out); err != nil {
			return fmt.Errorf("sqlstore: read JSON list: %w", err)
		}
	}
	if len(out) == 0 {
		out = nil
	}
	*d.p = out
	return nil
}

func jsonArg[T any](v []T) string {
	if len(v) == 0 {
		return "[]"
	}
	b, _ := json.Marshal(v) // strings and ints always marshal
	return string(b)
}

func backendDest(b *store.Backend) []any {
	return []any{&b.ID, &b.Name, &b.Engine, &b.URL, &b.MaxConcurrent, jsonList[string]{&b.Models}, jsonList[int]{&b.GPUIndices},
		&b.Priority, &b.Status, &b.NodeID, &b.FromConfig, timeDest{&b.CreatedAt}, timeDest{&b.UpdatedAt}}
}

// UpsertBackend creates b, or updates the backend with its name in place
// (same ID, CreatedAt kept), and reads back the stored row into b. An
// empty Status becomes store.BackendEnabled on insert and keeps the stored
// one on update (an admin's "disabled" survives a restart's upsert).
// ErrConflict when NodeID names no node.
func (s *Store) UpsertBackend(ctx context.Context, b *store.Backend) error {
	t := tv(now())
	what := fmt.Sprintf("upsert backend %q", b.Name)
	insStatus := b.Status
	if insStatus == "" {
		insStatus = store.BackendEnabled
	}
	args := []any{b.Name, b.Engine, b.URL, b.MaxConcurrent, jsonArg(b.Models), jsonArg(b.GPUIndices), b.Priority,
		insStatus, b.NodeID, b.FromConfig, t, t}
	var id int64
	if s.dialect == MySQL {
		// id = LAST_INSERT_ID(id) makes LastInsertId the existing row's ID
		// on update.
		res, err := s.db.ExecContext(ctx, `INSERT INTO backends (name, engine, url, max_concurrent, models, gpu_indices,
  priority, status, node_id, from_config, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON DUPLICATE KEY UPDATE id = LAST_INSERT_ID(id), engine = VALUES(engine), url = VALUES(url),
  max_concurrent = VALUES(max_concurrent), models = VALUES(models), gpu_indices = VALUES(gpu_indices),
  priority = VALUES(priority), status = IF(? = '', status, VALUES(status)), node_id = VALUES(node_id),
  from_config = VALUES(from_config), updated_at = VALUES(updated_at)`, append(args, b.Status)...)
		if err != nil {
			return fail(err, what)
		}
		if id, err = res.LastInsertId(); err != nil {
			return fail(err, what)
		}
	} else {
		err := s.db.QueryRowContext(ctx, `INSERT INTO backends (name, engine, url, max_concurrent, models, gpu_indices,
  priority, status, node_id, from_config, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (name) DO UPDATE SET engine = excluded.engine, url = excluded.url,
  max_concurrent = excluded.max_concurrent, models = excluded.models, gpu_indices = excluded.gpu_indices,
  priority = excluded.priority, status = CASE WHEN ? = '' THEN backends.status ELSE excluded.status END,
  node_id = excluded.node_id, from_config = excluded.from_config, updated_at = excluded.updated_at
RETURNING id`, append(args, b.Status)...).Scan(&id)
		if err != nil {
			return fail(err, what)
		}
	}
	got, err := s.Backend(ctx, id)
	if err != nil {
		return fmt.Errorf("%s: read back: %w", what, err)
	}
	*b = got
	return nil
}

// Backend reads a backend by ID.
func (s *Store) Backend(ctx context.Context, id int64) (store.Backend, error) {
	var b store.Backend
	err := s.db.QueryRowContext(ctx, "SELECT "+backendCols+" FROM backends b WHERE b.id = ?", id).Scan(backendDest(&b)...)
	return b, fail(err, fmt.Sprintf("backend %d", id))
}

// Backends lists every backend by ID.
func (s *Store) Backends(ctx context.Context) ([]store.Backend, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT "+backendCols+" FROM backends b ORDER BY b.id")
	if err != nil {
		return nil, fail(err, "list backends")
	}
	defer rows.Close()
	var bs []store.Backend
	for rows.Next() {
		var b store.Backend
		if err := rows.Scan(backendDest(&b)...); err != nil {
			return nil, fail(err, "list backends")
		}
		bs = append(bs, b)
	}
	return bs, fail(rows.Err(), "list backends")
}

// UpdateBackend writes every field of b but CreatedAt, and sets UpdatedAt.
func (s *Store) UpdateBackend(ctx context.Context, b *store.Backend) error {
	t := now()
	status := b.Status
	if status == "" {
		status = store.BackendEnabled
	}
	res, err := s.db.ExecContext(ctx, `UPDATE backends SET name = ?, engine = ?, url = ?, max_concurrent = ?, models = ?,
  gpu_indices = ?, priority = ?, status = ?, node_id = ?, from_config = ?, updated_at = ? WHERE id = ?`,
		b.Name, b.Engine, b.URL, b.MaxConcurrent, jsonArg(b.Models), jsonArg(b.GPUIndices), b.Priority, status,
		b.NodeID, b.FromConfig, tv(t), b.ID)
	if err := affected(res, err, fmt.Sprintf("update backend %d", b.ID)); err != nil {
		return err
	}
	b.Status, b.UpdatedAt = status, t
	return nil
}

// DeleteBackend deletes a backend.
func (s *Store) DeleteBackend(ctx context.Context, id int64) error {
	res, err := s.db.ExecContext(ctx, "DELETE FROM backends WHERE id = ?", id)
	return affected(res, err, fmt.Sprintf("delete backend %d", id))
}

const nodeCols = "n.id, n.name, n.sidecar_url, n.sidecar_key, n.status, n.from_config, n.created_at, n.updated_at"

func nodeDest(n *store.Node) []any {
	return []any{&n.ID, &n.Name, &n.SidecarURL, &n.SidecarKey, &n.Status, &n.FromConfig, timeDest{&n.CreatedAt}, timeDest{&n.UpdatedAt}}
}

// UpsertNode creates n, or updates the node with its name in place, and
// reads back the stored row into n. Status as in UpsertBackend.
func (s *Store) UpsertNode(ctx context.Context, n *store.Node) error {
	t := tv(now())
	what := fmt.Sprintf("upsert node %q", n.Name)
	insStatus := n.Status
	if insStatus == "" {
		insStatus = store.BackendEnabled
	}
	args := []any{n.Name, n.SidecarURL, n.SidecarKey, insStatus, n.FromConfig, t, t, n.Status}
	var id int64
	if s.dialect == MySQL {
		res, err := s.db.ExecContext(ctx, `INSERT INTO nodes (name, sidecar_url, sidecar_key, status, from_config,
  created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)
ON DUPLICATE KEY UPDATE id = LAST_INSERT_ID(id), sidecar_url = VALUES(sidecar_url), sidecar_key = VALUES(sidecar_key),
  status = IF(? = '', status, VALUES(status)), from_config = VALUES(from_config), updated_at = VALUES(updated_at)`, args...)
		if err != nil {
			return fail(err, what)
		}
		if id, err = res.LastInsertId(); err != nil {
			return fail(err, what)
		}
	} else {
		err := s.db.QueryRowContext(ctx, `INSERT INTO nodes (name, sidecar_url, sidecar_key, status, from_config,
  created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (name) DO UPDATE SET sidecar_url = excluded.sidecar_url, sidecar_key = excluded.sidecar_key,
  status = CASE WHEN ? = '' THEN nodes.status ELSE excluded.status END, from_config = excluded.from_config,
  updated_at = excluded.updated_at
RETURNING id`, args...).Scan(&id)
		if err != nil {
			return fail(err, what)
		}
	}
	got, err := s.Node(ctx, id)
	if err != nil {
		return fmt.Errorf("%s: read back: %w", what, err)
	}
	*n = got
	return nil
}

// Node reads a node by ID.
func (s *Store) Node(ctx context.Context, id int64) (store.Node, error) {
	var n store.Node
	err := s.db.QueryRowContext(ctx, "SELECT "+nodeCols+" FROM nodes n WHERE n.id = ?", id).Scan(nodeDest(&n)...)
	return n, fail(err, fmt.Sprintf("node %d", id))
}

// Nodes lists every node by ID.
func (s *Store) Nodes(ctx context.Context) ([]store.Node, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT "+nodeCols+" FROM nodes n ORDER BY n.id")
	if err != nil {
		return nil, fail(err, "list nodes")
	}
	defer rows.Close()
	var ns []store.Node
	for rows.Next() {
		var n store.Node
		if err := rows.Scan(nodeDest(&n)...); err != nil {
			return nil, fail(err, "list nodes")
		}
		ns = append(ns, n)
	}
	return ns, fail(rows.Err(), "list nodes")
}

// UpdateNode writes every field of n but CreatedAt, and sets UpdatedAt.
func (s *Store) UpdateNode(ctx context.Context, n *store.Node) error {
	t := now()
	status := n.Status
	if status == "" {
		status = store.BackendEnabled
	}
	res, err := s.db.ExecContext(ctx, `UPDATE nodes SET name = ?, sidecar_url = ?, sidecar_key = ?, status = ?,
  from_config = ?, updated_at = ? WHERE id = ?`, n.Name, n.SidecarURL, n.SidecarKey, status, n.FromConfig, tv(t), n.ID)
	if err := affected(res, err, fmt.Sprintf("update node %d", n.ID)); err != nil {
		return err
	}
	n.Status, n.UpdatedAt = status, t
	return nil
}

// DeleteNode deletes a node; ErrConflict while backends refer to it.
func (s *Store) DeleteNode(ctx context.Context, id int64) error {
	res, err := s.db.ExecContext(ctx, "DELETE FROM nodes WHERE id = ?", id)
	if isConflict(err) {
		return fmt.Errorf("delete node %d: backends still refer to it: %w", id, store.ErrConflict)
	}
	return affected(res, err, fmt.Sprintf("delete node %d", id))
}
