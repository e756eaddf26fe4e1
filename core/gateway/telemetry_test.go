package gateway

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/bench/fakellm"
	"github.com/mindrouter/mindrouter/core/admin"
	"github.com/mindrouter/mindrouter/sidecar/wire"
)

// A sidecar's per-GPU readings and every backend's state are kept at each
// discovery round, and the admin API reads them back as series; GET
// /api/admin/cluster shows the live state they are sampled from.
func TestTelemetryHistory(t *testing.T) {
	const key = "sk-telemetry-sidecar"
	t.Setenv("MR_TEST_TEL_KEY", key)
	u, p := 37, 250.5
	mem, total := uint64(10<<30), uint64(80<<30)
	temp := 61
	sc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/gpu-info" || r.Header.Get(wire.HeaderKey) != key {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		_ = json.NewEncoder(w).Encode(wire.GPUInfo{Hostname: "gpu-a", Timestamp: time.Now().UTC(), GPUCount: 2, GPUs: []wire.GPU{
			{Index: 0, Name: "NVIDIA H100", UtilizationGPU: &u, MemoryUsedBytes: &mem, MemoryTotalBytes: &total, MemoryFreeBytes: &total, TemperatureGPU: &temp, PowerDrawWatts: &p},
			{Index: 1, Name: "NVIDIA H100", UtilizationGPU: &u, Error: "power: not supported"},
		}})
	}))
	defer sc.Close()
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, `discovery: {interval: 100ms, timeout: 2s}
nodes:
  - {name: node-a, sidecar_url: "`+sc.URL+`", sidecar_key_env: MR_TEST_TEL_KEY}
`)
	type gpus struct {
		Step int64 `json:"step_seconds"`
		GPUs []struct {
			Node   string `json:"node"`
			GPU    int    `json:"gpu"`
			Name   string `json:"name"`
			Points []struct {
				Samples int64    `json:"samples"`
				Util    *float64 `json:"utilization_pct"`
				Power   *float64 `json:"power_w"`
				Temp    *float64 `json:"temperature_c"`
				MemUsed *float64 `json:"memory_used_bytes"`
			} `json:"points"`
		} `json:"gpus"`
	}
	var g gpus
	deadline := time.Now().Add(15 * time.Second)
	for {
		if st := callAPI(t, e.base, adminKey, "GET", "/api/admin/telemetry/gpus?since=5m&step=3600", nil, &g); st != 200 {
			t.Fatalf("GET telemetry/gpus: %d", st)
		}
		if len(g.GPUs) == 2 && g.GPUs[0].Points[0].Samples >= 3 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if len(g.GPUs) != 2 || g.GPUs[0].Node != "node-a" || g.GPUs[0].Name != "NVIDIA H100" || g.GPUs[1].GPU != 1 {
		t.Fatalf("GPU series: %+v", g)
	}
	p0, p1 := g.GPUs[0].Points[0], g.GPUs[1].Points[0]
	if p0.Util == nil || *p0.Util != 37 || p0.Power == nil || *p0.Power != 250.5 || p0.Temp == nil || *p0.Temp != 61 ||
		p0.MemUsed == nil || *p0.MemUsed != float64(mem) {
		t.Errorf("GPU 0: %+v", p0)
	}
	if p1.Util == nil || p1.Power != nil || p1.MemUsed != nil {
		t.Errorf("GPU 1 (no power, no memory reading): %+v", p1)
	}
	var b struct {
		Backends []struct {
			Backend string `json:"backend"`
			Points  []struct {
				Samples       int64   `json:"samples"`
				Healthy       float64 `json:"healthy"`
				MaxConcurrent int64   `json:"max_concurrent"`
			} `json:"points"`
		} `json:"backends"`
	}
	// Backends are sampled at most once a second (a probe's hook runs
	// between rounds too): wait for two rounds' samples.
	for deadline := time.Now().Add(15 * time.Second); ; {
		if st := callAPI(t, e.base, adminKey, "GET", "/api/admin/telemetry/backends?since=5m&step=1h", nil, &b); st != 200 {
			t.Fatalf("GET telemetry/backends: %d", st)
		}
		if len(b.Backends) == 2 && b.Backends[0].Points[0].Samples >= 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if len(b.Backends) != 2 || b.Backends[0].Backend != "gpu1-vllm" || b.Backends[1].Backend != "gpu2-ollama" {
		t.Fatalf("backend series: %+v", b)
	}
	if pt := b.Backends[0].Points[0]; pt.Samples < 2 || pt.Healthy < 0.5 || pt.MaxConcurrent != 16 {
		t.Errorf("gpu1-vllm: %+v", pt)
	}
	if st := callAPI(t, e.base, adminKey, "GET", "/api/admin/telemetry/backends?backend=gpu2-ollama&since=5m", nil, &b); st != 200 ||
		len(b.Backends) != 1 || b.Backends[0].Points[0].MaxConcurrent != 4 {
		t.Errorf("one backend by name: %d %+v", st, b)
	}

	var cl admin.ClusterView
	if st := callAPI(t, e.base, adminKey, "GET", "/api/admin/cluster", nil, &cl); st != 200 {
		t.Fatalf("GET cluster: %d", st)
	}
	if len(cl.Backends) != 2 || cl.Backends[0].Name != "gpu1-vllm" || !cl.Backends[0].Healthy || cl.Backends[0].MaxConcurrent != 16 ||
		cl.Backends[0].Breaker != "closed" || !slices.Contains(cl.Backends[0].Models, vllmModel) || cl.Backends[1].Engine != "ollama" {
		t.Errorf("cluster backends: %+v", cl.Backends)
	}
	if len(cl.Nodes) != 1 || cl.Nodes[0].Name != "node-a" || cl.Nodes[0].PolledAt == nil || len(cl.Nodes[0].GPUs) != 2 {
		t.Fatalf("cluster nodes: %+v", cl.Nodes)
	}
	if g0 := cl.Nodes[0].GPUs[0]; g0.UtilPct == nil || *g0.UtilPct != 37 || g0.PowerW == nil || *g0.PowerW != 250.5 || g0.Name != "NVIDIA H100" {
		t.Errorf("cluster GPU 0: %+v", g0)
	}
	if g1 := cl.Nodes[0].GPUs[1]; g1.Error != "power: not supported" || g1.PowerW != nil {
		t.Errorf("cluster GPU 1: %+v", g1)
	}
}
