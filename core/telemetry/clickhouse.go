package telemetry

import (
	"context"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// CHStore keeps samples in ClickHouse, in the tables
// audit.MigrateClickHouse creates (core/audit/schema/0006_telemetry.sql).
type CHStore struct {
	conn           driver.Conn
	gpus, backends string // `db`.telemetry_…
}

// NewCHStore returns a Store over database's telemetry tables.
func NewCHStore(conn driver.Conn, database string) *CHStore {
	q := "`" + strings.NewReplacer("\\", "\\\\", "`", "\\`").Replace(database) + "`."
	return &CHStore{conn: conn, gpus: q + "telemetry_gpus", backends: q + "telemetry_backends"}
}

func (s *CHStore) Write(ctx context.Context, gpus []GPUSample, backends []BackendSample) error {
	if len(gpus) > 0 {
		b, err := s.conn.PrepareBatch(ctx, "INSERT INTO "+s.gpus+" (at, node, gpu, name, util_pct, mem_used, mem_total, temp_c, power_w)")
		if err != nil {
			return wrap("write GPU samples", err)
		}
		for _, g := range gpus {
			if err := b.Append(g.At.UTC().Truncate(time.Second), g.Node, uint16(g.GPU), g.Name, g.UtilPct, g.MemUsed, g.MemTotal, g.TempC, g.PowerW); err != nil {
				_ = b.Abort()
				return wrap("write GPU samples", err)
			}
		}
		if err := b.Send(); err != nil {
			return wrap("write GPU samples", err)
		}
	}
	if len(backends) > 0 {
		b, err := s.conn.PrepareBatch(ctx, "INSERT INTO "+s.backends+" (at, replica, backend, healthy, state, breaker, in_flight, max_concurrent, waiting, latency_ms)")
		if err != nil {
			return wrap("write backend samples", err)
		}
		for _, x := range backends {
			h := uint8(0)
			if x.Healthy {
				h = 1
			}
			if err := b.Append(x.At.UTC().Truncate(time.Second), x.Replica, x.Backend, h, x.State, x.Breaker, x.InFlight, int64(x.MaxConcurrent), x.Waiting, x.LatencyMs); err != nil {
				_ = b.Abort()
				return wrap("write backend samples", err)
			}
		}
		if err := b.Send(); err != nil {
			return wrap("write backend samples", err)
		}
	}
	return nil
}

// chBucket is the bucket and WHERE of q for ClickHouse (whole seconds, as
// DateTime keeps them).
func chBucket(q Query, col string) (string, string, []any) {
	step := q.stepSeconds()
	where := " WHERE at >= toDateTime(?) AND at < toDateTime(?)"
	args := []any{step, q.Since.Unix(), q.Until.Add(time.Second - 1).Unix()}
	if q.Name != "" {
		where += " AND " + col + " = ?"
		args = append(args, q.Name)
	}
	return "toInt64(toUInt32(at)) - toInt64(toUInt32(at)) % ?", where, args
}

func (s *CHStore) GPUs(ctx context.Context, q Query) ([]GPUPoint, error) {
	if err := q.Validate(); err != nil {
		return nil, err
	}
	b, where, args := chBucket(q, "node")
	rows, err := s.conn.Query(ctx, "SELECT "+b+" AS bk, node, toInt64(gpu), any(name), toInt64(count()), avg(util_pct), avg(mem_used), avg(mem_total), avg(temp_c), avg(power_w)"+
		" FROM "+s.gpus+where+" GROUP BY bk, node, gpu ORDER BY node, gpu, bk", args...)
	if err != nil {
		return nil, wrap("read GPU samples", err)
	}
	defer rows.Close()
	out := []GPUPoint{}
	for rows.Next() {
		var p GPUPoint
		var at, gpu int64
		if err := rows.Scan(&at, &p.Node, &gpu, &p.Name, &p.Samples, &p.UtilPct, &p.MemUsed, &p.MemTotal, &p.TempC, &p.PowerW); err != nil {
			return nil, wrap("read GPU samples", err)
		}
		p.At, p.GPU = time.Unix(at, 0).UTC(), int(gpu)
		out = append(out, p)
	}
	return out, wrap("read GPU samples", rows.Err())
}

func (s *CHStore) Backends(ctx context.Context, q Query) ([]BackendPoint, error) {
	if err := q.Validate(); err != nil {
		return nil, err
	}
	b, where, args := chBucket(q, "backend")
	rows, err := s.conn.Query(ctx, "SELECT "+b+" AS bk, backend, toInt64(count()), avg(healthy), avg(in_flight), max(in_flight), max(max_concurrent), avg(waiting),"+
		" if(countIf(latency_ms > 0) > 0, sumIf(latency_ms, latency_ms > 0) / countIf(latency_ms > 0), 0) FROM "+s.backends+where+
		" GROUP BY bk, backend ORDER BY backend, bk", args...)
	if err != nil {
		return nil, wrap("read backend samples", err)
	}
	defer rows.Close()
	out := []BackendPoint{}
	for rows.Next() {
		var p BackendPoint
		var at int64
		if err := rows.Scan(&at, &p.Backend, &p.Samples, &p.Healthy, &p.InFlight, &p.InFlightMax, &p.MaxConcurrent, &p.Waiting, &p.LatencyMs); err != nil {
			return nil, wrap("read backend samples", err)
		}
		p.At = time.Unix(at, 0).UTC()
		out = append(out, p)
	}
	return out, wrap("read backend samples", rows.Err())
}

// Prune deletes old samples with a mutation (ALTER TABLE … DELETE, which
// every supported release has; TTL needs 19.6), run in the background by
// the server.
func (s *CHStore) Prune(ctx context.Context, before time.Time) error {
	for _, t := range []string{s.gpus, s.backends} {
		if err := s.conn.Exec(ctx, "ALTER TABLE "+t+" DELETE WHERE at < toDateTime(?)", before.Unix()); err != nil {
			return wrap("prune "+t, err)
		}
	}
	return nil
}
