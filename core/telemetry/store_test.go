package telemetry

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/core/audit"
	"github.com/mindrouter/mindrouter/core/internal/testsvc"
	"github.com/mindrouter/mindrouter/core/store/sqlstore"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testsvc.StopAll()
	os.Exit(code)
}

func f(v float64) *float64 { return &v }

var base = time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)

// samples: node n1's two GPUs and a backend every 10 s for 10 minutes;
// GPU 1 reports no power; the backend is unhealthy for the first minute
// and has no latency before its second minute.
func samples() ([]GPUSample, []BackendSample) {
	var gs []GPUSample
	var bs []BackendSample
	for i := range 60 {
		at := base.Add(time.Duration(i) * 10 * time.Second)
		gs = append(gs,
			GPUSample{At: at, Node: "n1", GPU: 0, Name: "NVIDIA H100", UtilPct: f(float64(i)), MemUsed: f(1e9), MemTotal: f(8e10), TempC: f(50), PowerW: f(300)},
			GPUSample{At: at, Node: "n1", GPU: 1, Name: "NVIDIA H100", UtilPct: f(10), MemUsed: f(2e9), MemTotal: f(8e10), TempC: f(60)},
			GPUSample{At: at, Node: "n2", GPU: 0, Name: "NVIDIA L40S", UtilPct: f(99)})
		b := BackendSample{At: at, Replica: "gw-a", Backend: "gpu1-vllm", Healthy: i >= 6, State: "enabled", Breaker: "closed",
			InFlight: int64(i % 4), MaxConcurrent: 16, Waiting: int64(i % 2)}
		if i >= 12 {
			b.LatencyMs = 200
		}
		bs = append(bs, b, BackendSample{At: at, Replica: "gw-a", Backend: "gpu2-ollama", Healthy: true, State: "draining", Breaker: "open", MaxConcurrent: 4})
	}
	return gs, bs
}

func checkStore(t *testing.T, st Store) {
	ctx := context.Background()
	gs, bs := samples()
	if err := st.Write(ctx, gs, bs); err != nil {
		t.Fatal(err)
	}
	// One bucket per minute for node n1.
	pts, err := st.GPUs(ctx, Query{Name: "n1", Since: base, Until: base.Add(10 * time.Minute), Step: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if len(pts) != 20 {
		t.Fatalf("%d points, want 20 (2 GPUs × 10 minutes): %+v", len(pts), pts)
	}
	p := pts[3] // GPU 0, minute 3: util 18..23
	want := GPUPoint{At: base.Add(3 * time.Minute), Node: "n1", GPU: 0, Name: "NVIDIA H100", Samples: 6,
		UtilPct: f(20.5), MemUsed: f(1e9), MemTotal: f(8e10), TempC: f(50), PowerW: f(300)}
	if !reflect.DeepEqual(p, want) {
		t.Errorf("GPU 0 minute 3:\n got %s\nwant %s", show(p), show(want))
	}
	if q := pts[10]; q.GPU != 1 || q.PowerW != nil || q.TempC == nil || *q.TempC != 60 {
		t.Errorf("GPU 1 (no power reading): %s", show(q))
	}
	// Every node, the whole range in one step: three series.
	pts, err = st.GPUs(ctx, Query{Since: base.Add(-time.Hour), Until: base.Add(time.Hour), Step: 2 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if len(pts) != 3 || pts[2].Node != "n2" || pts[2].Samples != 60 || pts[2].MemUsed != nil {
		t.Errorf("all nodes, one step: %+v", pts)
	}
	// The range is half-open: until excludes its second.
	pts, _ = st.GPUs(ctx, Query{Name: "n2", Since: base.Add(10 * time.Second), Until: base.Add(30 * time.Second), Step: time.Hour})
	if len(pts) != 1 || pts[0].Samples != 2 {
		t.Errorf("[10s, 30s): %+v", pts)
	}

	bps, err := st.Backends(ctx, Query{Since: base, Until: base.Add(10 * time.Minute), Step: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if len(bps) != 20 || bps[0].Backend != "gpu1-vllm" || bps[10].Backend != "gpu2-ollama" {
		t.Fatalf("backend points: %+v", bps)
	}
	b0, b1, b2 := bps[0], bps[1], bps[2]
	if b0.Healthy != 0 || b1.Healthy != 1 || b0.LatencyMs != 0 || b2.LatencyMs != 200 || b0.InFlightMax != 3 ||
		math.Abs(b0.InFlight-7.0/6) > 1e-9 || b0.MaxConcurrent != 16 || math.Abs(b0.Waiting-0.5) > 1e-9 || b0.Samples != 6 {
		t.Errorf("gpu1-vllm minutes 0-2: %+v %+v %+v", b0, b1, b2)
	}
	// A step too fine for the range is raised to MaxPoints buckets.
	bps, err = st.Backends(ctx, Query{Name: "gpu2-ollama", Since: base.Add(-30 * 24 * time.Hour), Until: base.Add(time.Hour), Step: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if len(bps) > 2 {
		t.Errorf("a one-second step over 30 days: %d points", len(bps))
	}
	for _, q := range []Query{{}, {Since: base, Until: base, Step: time.Second}, {Since: base, Until: base.Add(time.Hour)}} {
		if _, err := st.GPUs(ctx, q); err == nil {
			t.Errorf("GPUs(%+v): no error", q)
		}
	}

	if err := st.Prune(ctx, base.Add(5*time.Minute)); err != nil {
		t.Fatal(err)
	}
	// ClickHouse deletes in a mutation, asynchronously: wait for it.
	deadline := time.Now().Add(20 * time.Second)
	for {
		pts, err = st.GPUs(ctx, Query{Name: "n2", Since: base.Add(-time.Hour), Until: base.Add(time.Hour), Step: 2 * time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		bps, _ = st.Backends(ctx, Query{Name: "gpu2-ollama", Since: base.Add(-time.Hour), Until: base.Add(time.Hour), Step: 2 * time.Hour})
		if len(pts) == 1 && pts[0].Samples == 30 && len(bps) == 1 && bps[0].Samples == 30 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if len(pts) != 1 || pts[0].Samples != 30 || len(bps) != 1 || bps[0].Samples != 30 {
		t.Errorf("after pruning the first 5 minutes: %+v, %+v", pts, bps)
	}
}

func show(p GPUPoint) string {
	s := p.At.Format(time.TimeOnly) + " " + p.Node + " " + p.Name
	for _, v := range []*float64{p.UtilPct, p.MemUsed, p.MemTotal, p.TempC, p.PowerW} {
		if v == nil {
			s += " nil"
		} else {
			s += " " + strconv.FormatFloat(*v, 'g', -1, 64)
		}
	}
	return s
}

func TestSQLiteStore(t *testing.T) {
	st, err := sqlstore.Open(context.Background(), "sqlite", filepath.Join(t.TempDir(), "db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	checkStore(t, NewSQLStore(st.DB()))
}

func TestMariaDBStore(t *testing.T) {
	db := testsvc.StartMariaDB(t)
	st, err := sqlstore.Open(context.Background(), "mysql", db.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	checkStore(t, NewSQLStore(st.DB()))
}

func TestClickHouseStore(t *testing.T) {
	srv := testsvc.StartClickHouse(t)
	conn := srv.Open(t)
	if err := audit.MigrateClickHouse(context.Background(), conn, srv.Database); err != nil {
		t.Fatal(err)
	}
	checkStore(t, NewCHStore(conn, srv.Database))
}
