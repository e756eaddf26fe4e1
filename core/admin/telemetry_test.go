package admin

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/core/store"
	"github.com/mindrouter/mindrouter/core/telemetry"
)

func f64(v float64) *float64 { return &v }

// The telemetry routes over a real SQLite history: series grouped per GPU
// and backend, ranges given as spans or times, names by id or name, and
// every bad parameter a 400 naming it.
func TestTelemetryRoutes(t *testing.T) {
	e := newEnv(t)
	now := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	ts := telemetry.NewSQLStore(e.st.(interface{ DB() *sql.DB }).DB())
	e.h = New(Options{Store: e.st, Keys: e.keys, Telemetry: ts, Now: func() time.Time { return now }})
	ctx := context.Background()
	var gs []telemetry.GPUSample
	var bs []telemetry.BackendSample
	for i := range 120 { // two hours, a sample a minute
		at := now.Add(-time.Duration(i) * time.Minute)
		gs = append(gs, telemetry.GPUSample{At: at, Node: "node-a", GPU: 0, Name: "H100", UtilPct: f64(50), PowerW: f64(300)},
			telemetry.GPUSample{At: at, Node: "node-b", GPU: 3, Name: "L40S", UtilPct: f64(10)})
		bs = append(bs, telemetry.BackendSample{At: at, Replica: "r", Backend: "gpu1", Healthy: true, State: "enabled", Breaker: "closed", InFlight: 2, MaxConcurrent: 8})
	}
	if err := ts.Write(ctx, gs, bs); err != nil {
		t.Fatal(err)
	}
	node := store.Node{Name: "node-b", Status: "enabled"}
	if err := e.st.UpsertNode(ctx, &node); err != nil {
		t.Fatal(err)
	}
	var g struct {
		Step int64 `json:"step_seconds"`
		GPUs []gpuSeries
	}
	e.getJSON(e.auditorKey, "/api/admin/telemetry/gpus", 200, &g) // the last hour, ~300 buckets: 12 s
	if g.Step != 12 || len(g.GPUs) != 2 || g.GPUs[0].Node != "node-a" || len(g.GPUs[0].Points) != 60 || g.GPUs[1].Name != "L40S" {
		t.Fatalf("default query: step %d, %d series", g.Step, len(g.GPUs))
	}
	e.getJSON(e.adminKey, "/api/admin/telemetry/gpus?node_id="+itoa(node.ID)+"&since=3h&step=1h", 200, &g)
	if g.Step != 3600 || len(g.GPUs) != 1 || g.GPUs[0].GPU != 3 || len(g.GPUs[0].Points) != 2 {
		t.Errorf("node-b by id, hourly: %+v", g)
	}
	e.getJSON(e.adminKey, "/api/admin/telemetry/gpus?node=node-a&since=2026-03-10T11:00:00Z&until=2026-03-10T11:30:00Z&step=600", 200, &g)
	if len(g.GPUs) != 1 || len(g.GPUs[0].Points) != 3 || g.GPUs[0].Points[0].Samples != 10 {
		t.Errorf("node-a, half an hour in 10-minute steps: %+v", g)
	}
	var b struct{ Backends []backendSeries }
	e.getJSON(e.adminKey, "/api/admin/telemetry/backends?backend=gpu1&since=30m&step=30m", 200, &b)
	if len(b.Backends) != 1 || len(b.Backends[0].Points) != 1 || b.Backends[0].Points[0].InFlight != 2 || b.Backends[0].Points[0].Healthy != 1 {
		t.Errorf("backend gpu1: %+v", b)
	}
	for _, tc := range []struct {
		path   string
		status int
		detail string
	}{
		{"/api/admin/telemetry/gpus?node_id=999", 404, "Node not found"},
		{"/api/admin/telemetry/backends?backend_id=999", 404, "Backend not found"},
		{"/api/admin/telemetry/gpus?node_id=1&node=x", 400, "give one"},
		{"/api/admin/telemetry/gpus?since=yesterday", 400, "query parameter since"},
		{"/api/admin/telemetry/gpus?since=1h&until=2h", 400, "since must be before until"},
		{"/api/admin/telemetry/gpus?step=0", 400, "query parameter step"},
		{"/api/admin/telemetry/gpus?step=500ms", 400, "query parameter step"},
		{"/api/admin/telemetry/backends?step=40d", 400, "query parameter step"},
	} {
		var d detail
		e.getJSON(e.adminKey, tc.path, tc.status, &d)
		if !strings.Contains(d.Detail, tc.detail) {
			t.Errorf("GET %s: %q, want it to say %q", tc.path, d.Detail, tc.detail)
		}
	}
	e.getJSON(e.aliceKey, "/api/admin/telemetry/gpus", 403, nil)
	e.h = New(Options{Store: e.st, Keys: e.keys})
	e.getJSON(e.adminKey, "/api/admin/telemetry/backends", 503, nil)
}
