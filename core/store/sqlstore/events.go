package sqlstore

import (
	"context"
	"fmt"

	"github.com/mindrouter/mindrouter/core/store"
)

// RecordAdmin appends e to the admin audit log and sets its ID; a zero At
// is now.
func (s *Store) RecordAdmin(ctx context.Context, e *store.AdminEvent) error {
	if e.At.IsZero() {
		e.At = now()
	}
	e.At = norm(e.At)
	res, err := s.db.ExecContext(ctx, `INSERT INTO admin_events (at, actor_id, actor_key, action, target_type,
  target_id, detail, remote_addr) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		tv(e.At), e.ActorID, e.ActorKey, e.Action, e.TargetType, e.TargetID, e.Detail, e.RemoteAddr)
	if err != nil {
		return fail(err, fmt.Sprintf("record admin event %q", e.Action))
	}
	id, err := res.LastInsertId()
	if err != nil {
		return fail(err, fmt.Sprintf("record admin event %q", e.Action))
	}
	e.ID = id
	return nil
}

// AdminEvents lists the log newest first (by insertion order); limit 0
// means 100.
func (s *Store) AdminEvents(ctx context.Context, offset, limit int) ([]store.AdminEvent, error) {
	if limit <= 0 {
		limit = 100
	}
	rows, err := s.db.QueryContext(ctx, `SELECT id, at, actor_id, actor_key, action, target_type, target_id, detail, remote_addr
FROM admin_events ORDER BY id DESC LIMIT ? OFFSET ?`, limit, max(offset, 0))
	if err != nil {
		return nil, fail(err, "list admin events")
	}
	defer rows.Close()
	var es []store.AdminEvent
	for rows.Next() {
		var e store.AdminEvent
		if err := rows.Scan(&e.ID, timeDest{&e.At}, &e.ActorID, &e.ActorKey, &e.Action, &e.TargetType,
			&e.TargetID, &e.Detail, &e.RemoteAddr); err != nil {
			return nil, fail(err, "list admin events")
		}
		es = append(es, e)
	}
	return es, fail(rows.Err(), "list admin events")
}
