package admin

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/mindrouter/mindrouter/core/store"
	"github.com/mindrouter/mindrouter/core/telemetry"
)

// Telemetry reads the GPU and backend history (*telemetry.SQLStore and
// *telemetry.CHStore are ones).
type Telemetry interface {
	GPUs(ctx context.Context, q telemetry.Query) ([]telemetry.GPUPoint, error)
	Backends(ctx context.Context, q telemetry.Query) ([]telemetry.BackendPoint, error)
}

// Defaults of the telemetry routes: the last hour, in about defaultPoints
// buckets.
const (
	defaultTelemetryRange = time.Hour
	defaultPoints         = 300
)

var errTelemetryOff = errorf(fasthttp.StatusServiceUnavailable,
	"telemetry history is not kept on this gateway: telemetry.enabled is false, or there is no store for it")

type gpuSeries struct {
	Node   string               `json:"node"`
	GPU    int                  `json:"gpu"`
	Name   string               `json:"name"`
	Points []telemetry.GPUPoint `json:"points"`
}

type backendSeries struct {
	Backend string                   `json:"backend"`
	Points  []telemetry.BackendPoint `json:"points"`
}

// telemetryGPUs is GET /api/admin/telemetry/gpus?node_id=|node=&since=&until=&step=.
func (h *Handler) telemetryGPUs(c *call) (any, error) {
	if h.telemetry == nil {
		return nil, errTelemetryOff
	}
	q, err := c.telemetryQuery(h.now())
	if err != nil {
		return nil, err
	}
	if q.Name, err = c.telemetryName(h, "node"); err != nil {
		return nil, err
	}
	pts, err := h.telemetry.GPUs(c.ctx, q)
	if err != nil {
		return nil, fmt.Errorf("read GPU telemetry: %w", err)
	}
	out := []gpuSeries{}
	for _, p := range pts {
		if n := len(out); n == 0 || out[n-1].Node != p.Node || out[n-1].GPU != p.GPU {
			out = append(out, gpuSeries{Node: p.Node, GPU: p.GPU, Name: p.Name})
		}
		s := &out[len(out)-1]
		if p.Name != "" {
			s.Name = p.Name
		}
		s.Points = append(s.Points, p)
	}
	return map[string]any{"since": q.Since, "until": q.Until, "step_seconds": stepOf(q), "gpus": out}, nil
}

// telemetryBackends is GET /api/admin/telemetry/backends?backend_id=|backend=&since=&until=&step=.
func (h *Handler) telemetryBackends(c *call) (any, error) {
	if h.telemetry == nil {
		return nil, errTelemetryOff
	}
	q, err := c.telemetryQuery(h.now())
	if err != nil {
		return nil, err
	}
	if q.Name, err = c.telemetryName(h, "backend"); err != nil {
		return nil, err
	}
	pts, err := h.telemetry.Backends(c.ctx, q)
	if err != nil {
		return nil, fmt.Errorf("read backend telemetry: %w", err)
	}
	out := []backendSeries{}
	for _, p := range pts {
		if n := len(out); n == 0 || out[n-1].Backend != p.Backend {
			out = append(out, backendSeries{Backend: p.Backend})
		}
		out[len(out)-1].Points = append(out[len(out)-1].Points, p)
	}
	return map[string]any{"since": q.Since, "until": q.Until, "step_seconds": stepOf(q), "backends": out}, nil
}

// stepOf is the step a query's buckets really have (telemetry raises a
// step that would give more than MaxPoints).
func stepOf(q telemetry.Query) int64 {
	s := int64(q.Step / time.Second)
	if m := int64(q.Until.Sub(q.Since)/time.Second)/telemetry.MaxPoints + 1; s < m {
		s = m
	}
	return max(s, 1)
}

// telemetryName reads what names one series: kind_id (the store's id of
// the node or backend) or kind (its name), not both.
func (c *call) telemetryName(h *Handler, kind string) (string, error) {
	id, err := c.queryID(kind + "_id")
	if err != nil {
		return "", err
	}
	name, err := c.queryText(kind, 200)
	if err != nil {
		return "", err
	}
	if id != 0 && name != "" {
		return "", badRequest("query parameters " + kind + "_id, " + kind + ": give one")
	}
	if id == 0 {
		return name, nil
	}
	if kind == "node" {
		n, err := h.st.Node(c.ctx, id)
		if errors.Is(err, store.ErrNotFound) {
			return "", notFound("Node not found")
		}
		if err != nil {
			return "", fmt.Errorf("read node %d: %w", id, err)
		}
		return n.Name, nil
	}
	b, err := h.st.Backend(c.ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return "", notFound("Backend not found")
	}
	if err != nil {
		return "", fmt.Errorf("read backend %d: %w", id, err)
	}
	return b.Name, nil
}

// telemetryQuery reads since, until (a date, an RFC 3339 time, or a
// duration back from now: 90m, 6h, 7d) and step (seconds, or a duration:
// 30s, 5m).
func (c *call) telemetryQuery(now time.Time) (telemetry.Query, error) {
	var q telemetry.Query
	var err error
	if q.Until, err = c.queryWhen("until", now, now); err != nil {
		return q, err
	}
	if q.Since, err = c.queryWhen("since", now, q.Until.Add(-defaultTelemetryRange)); err != nil {
		return q, err
	}
	if !q.Since.Before(q.Until) {
		return q, badRequest("query parameters since, until: since must be before until")
	}
	q.Step = max(q.Until.Sub(q.Since)/defaultPoints, time.Second).Round(time.Second)
	if s := c.req.Query.Get("step"); s != "" {
		d, ok := parseSpan(s)
		if n, err := strconv.Atoi(s); err == nil {
			d, ok = time.Duration(n)*time.Second, n > 0
		}
		if !ok || d < time.Second || d > 31*24*time.Hour {
			return q, badRequest("query parameter step: seconds (60) or a duration (30s, 5m, 1h), from 1s to 31 days")
		}
		q.Step = d
	}
	return q, nil
}

// queryWhen reads a point in time: a date or RFC 3339 time, or a span
// back from now.
func (c *call) queryWhen(name string, now, def time.Time) (time.Time, error) {
	s := c.req.Query.Get(name)
	if s == "" {
		return def.UTC(), nil
	}
	if d, ok := parseSpan(s); ok && d > 0 {
		return now.Add(-d).UTC(), nil
	}
	t, err := c.queryDate(name, false)
	if err != nil {
		return t, badRequest("query parameter " + name + ": expected a date (2026-03-10), an RFC 3339 time (2026-03-10T14:00:00Z) or a span back from now (90m, 6h, 7d)")
	}
	return t, nil
}

// parseSpan is time.ParseDuration with days ("7d") too.
func parseSpan(s string) (time.Duration, bool) {
	if n, ok := strings.CutSuffix(s, "d"); ok {
		days, err := strconv.Atoi(n)
		if err != nil || days <= 0 || days > 3660 {
			return 0, false
		}
		return time.Duration(days) * 24 * time.Hour, true
	}
	d, err := time.ParseDuration(s)
	return d, err == nil
}
