package telemetry

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"
)

// SQLStore keeps samples in the accounts store's database (SQLite or
// MySQL/MariaDB), in the tables of its migration 0007_telemetry; times are
// Unix seconds.
type SQLStore struct{ db *sql.DB }

// NewSQLStore returns a Store over db, migrated by sqlstore.
func NewSQLStore(db *sql.DB) *SQLStore { return &SQLStore{db: db} }

// rowsPerInsert bounds one INSERT's rows (SQLite allows 32766 parameters).
const rowsPerInsert = 500

func nullF(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

func (s *SQLStore) Write(ctx context.Context, gpus []GPUSample, backends []BackendSample) error {
	for len(gpus) > 0 {
		n := min(len(gpus), rowsPerInsert)
		var args []any
		for _, g := range gpus[:n] {
			args = append(args, g.At.Unix(), g.Node, g.GPU, g.Name, nullF(g.UtilPct), nullF(g.MemUsed), nullF(g.MemTotal), nullF(g.TempC), nullF(g.PowerW))
		}
		q := "INSERT INTO telemetry_gpus (at, node, gpu, name, util_pct, mem_used, mem_total, temp_c, power_w) VALUES " +
			strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?, ?, ?, ?, ?, ?), ", n), ", ")
		if _, err := s.db.ExecContext(ctx, q, args...); err != nil {
			return wrap("write GPU samples", err)
		}
		gpus = gpus[n:]
	}
	for len(backends) > 0 {
		n := min(len(backends), rowsPerInsert)
		var args []any
		for _, b := range backends[:n] {
			h := 0
			if b.Healthy {
				h = 1
			}
			args = append(args, b.At.Unix(), b.Replica, b.Backend, h, b.State, b.Breaker, b.InFlight, b.MaxConcurrent, b.Waiting, b.LatencyMs)
		}
		q := "INSERT INTO telemetry_backends (at, replica, backend, healthy, state, breaker, in_flight, max_concurrent, waiting, latency_ms) VALUES " +
			strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?, ?, ?, ?, ?, ?, ?), ", n), ", ")
		if _, err := s.db.ExecContext(ctx, q, args...); err != nil {
			return wrap("write backend samples", err)
		}
		backends = backends[n:]
	}
	return nil
}

// bucketWhere is the bucket expression and the WHERE clause of q over a
// table whose name column is col.
func bucketWhere(q Query, col string) (string, string, []any) {
	step := q.stepSeconds()
	where := " WHERE at >= ? AND at < ?"
	args := []any{step, q.Since.Unix(), q.Until.Add(time.Second - 1).Unix()}
	if q.Name != "" {
		where += " AND " + col + " = ?"
		args = append(args, q.Name)
	}
	return "at - (at % ?)", where, args
}

func (s *SQLStore) GPUs(ctx context.Context, q Query) ([]GPUPoint, error) {
	if err := q.Validate(); err != nil {
		return nil, err
	}
	b, where, args := bucketWhere(q, "node")
	rows, err := s.db.QueryContext(ctx, "SELECT "+b+" AS bk, node, gpu, max(name), count(*), avg(util_pct), avg(mem_used), avg(mem_total), avg(temp_c), avg(power_w)"+
		" FROM telemetry_gpus"+where+" GROUP BY bk, node, gpu ORDER BY node, gpu, bk", args...)
	if err != nil {
		return nil, wrap("read GPU samples", err)
	}
	defer rows.Close()
	out := []GPUPoint{}
	for rows.Next() {
		var p GPUPoint
		var at int64
		var f [5]sql.NullFloat64
		if err := rows.Scan(&at, &p.Node, &p.GPU, &p.Name, &p.Samples, &f[0], &f[1], &f[2], &f[3], &f[4]); err != nil {
			return nil, wrap("read GPU samples", err)
		}
		p.At = time.Unix(at, 0).UTC()
		for i, dst := range []**float64{&p.UtilPct, &p.MemUsed, &p.MemTotal, &p.TempC, &p.PowerW} {
			if f[i].Valid {
				v := f[i].Float64
				*dst = &v
			}
		}
		out = append(out, p)
	}
	return out, wrap("read GPU samples", rows.Err())
}

func (s *SQLStore) Backends(ctx context.Context, q Query) ([]BackendPoint, error) {
	if err := q.Validate(); err != nil {
		return nil, err
	}
	// + 0e0: MySQL averages integers as DECIMAL with 4 places; a double
	// keeps the figure whole (SQLite is unchanged).
	b, where, args := bucketWhere(q, "backend")
	rows, err := s.db.QueryContext(ctx, "SELECT "+b+" AS bk, backend, count(*), avg(healthy + 0e0), avg(in_flight + 0e0), max(in_flight), max(max_concurrent), avg(waiting + 0e0),"+
		" avg(CASE WHEN latency_ms > 0 THEN latency_ms END) FROM telemetry_backends"+where+" GROUP BY bk, backend ORDER BY backend, bk", args...)
	if err != nil {
		return nil, wrap("read backend samples", err)
	}
	defer rows.Close()
	out := []BackendPoint{}
	for rows.Next() {
		var p BackendPoint
		var at int64
		var lat sql.NullFloat64
		if err := rows.Scan(&at, &p.Backend, &p.Samples, &p.Healthy, &p.InFlight, &p.InFlightMax, &p.MaxConcurrent, &p.Waiting, &lat); err != nil {
			return nil, wrap("read backend samples", err)
		}
		p.At, p.LatencyMs = time.Unix(at, 0).UTC(), lat.Float64
		out = append(out, p)
	}
	return out, wrap("read backend samples", rows.Err())
}

func (s *SQLStore) Prune(ctx context.Context, before time.Time) error {
	for _, t := range []string{"telemetry_gpus", "telemetry_backends"} {
		if _, err := s.db.ExecContext(ctx, "DELETE FROM "+t+" WHERE at < ?", before.Unix()); err != nil {
			return wrap(fmt.Sprintf("prune %s", t), err)
		}
	}
	return nil
}
