package backend

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/core/config"
	"github.com/mindrouter/mindrouter/core/pluginhost"
	"github.com/mindrouter/mindrouter/sidecar/server"
	"github.com/mindrouter/mindrouter/sidecar/wire"
)

const sidecarKey = "sidecar-secret-do-not-log"

// gpuSource is a sidecar's reading source (the real sidecar server runs in
// front of it): it counts polls and serves gpus, or fails with err.
type gpuSource struct {
	polls atomic.Int32
	mu    sync.Mutex
	gpus  []wire.GPU
	err   error
}

func (s *gpuSource) Health(context.Context) (*wire.Health, error) {
	return &wire.Health{Status: wire.StatusOK}, nil
}

func (s *gpuSource) GPUInfo(context.Context) (*wire.GPUInfo, error) {
	s.polls.Add(1)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return nil, s.err
	}
	return &wire.GPUInfo{Hostname: "node", Timestamp: time.Now().UTC(), GPUCount: len(s.gpus), GPUs: s.gpus}, nil
}

func (s *gpuSource) set(gpus []wire.GPU, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gpus, s.err = gpus, err
}

// startSidecar serves src through the sidecar's own HTTP server (no
// reading cache, so every poll reaches src) and returns its URL.
func startSidecar(t *testing.T, src *gpuSource) string {
	t.Helper()
	key, err := server.NewSecret(sidecarKey)
	if err != nil {
		t.Fatal(err)
	}
	h, err := server.New(server.Config{Source: src, Key: key, CacheTTL: -1})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts.URL
}

func ptr[T any](v T) *T { return &v }

// gpu is a fully read GPU: util percent, memory in GiB, power in watts.
func gpu(index, util int, totalGiB, usedGiB uint64, watts float64) wire.GPU {
	return wire.GPU{
		Index: index, UtilizationGPU: ptr(util),
		MemoryTotalBytes: ptr(totalGiB << 30), MemoryUsedBytes: ptr(usedGiB << 30),
		MemoryFreeBytes: ptr((totalGiB - usedGiB) << 30), PowerDrawWatts: ptr(watts),
		Processes: []wire.Process{},
	}
}

// sidecarRegistry has backends a, b, c, d and a discoverer that loads no
// adapter (probes end at once, without network) logging into logs.
func sidecarRegistry(t *testing.T) (*Registry, *Discoverer, *syncBuffer) {
	t.Helper()
	r := newTestRegistry(t, `backends:
  - {name: a, engine: vllm, url: "http://127.0.0.1:1", max_concurrent: 2}
  - {name: b, engine: vllm, url: "http://127.0.0.1:2", max_concurrent: 2}
  - {name: c, engine: ollama, url: "http://127.0.0.1:3", max_concurrent: 2}
  - {name: d, engine: vllm, url: "http://127.0.0.1:4", max_concurrent: 2}
`)
	logs := &syncBuffer{}
	d := newDiscoverer(r, func() []*pluginhost.Plugin { return nil }, 2*time.Second,
		slog.New(slog.NewTextHandler(logs, nil)))
	return r, d, logs
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Each discovery round polls each node's sidecar exactly once, however
// many backends it hosts, and gives each backend its own GPUs' figures.
func TestDiscoverer_PollSidecars(t *testing.T) {
	r, d, _ := sidecarRegistry(t)
	n1, n2 := &gpuSource{}, &gpuSource{}
	n1.set([]wire.GPU{gpu(0, 10, 80, 20, 100), gpu(1, 30, 80, 60, 200), gpu(2, 90, 40, 40, 300)}, nil)
	n2.set([]wire.GPU{gpu(0, 50, 24, 4, 50), gpu(1, 70, 24, 8, 70)}, nil)
	err := r.SetNodes([]Node{
		{Name: "n1", URL: startSidecar(t, n1), Key: sidecarKey, Backends: map[string][]int{"a": {1, 0}, "b": {2}}},
		{Name: "n2", URL: startSidecar(t, n2), Key: sidecarKey, Backends: map[string][]int{"c": nil}},
	})
	if err != nil {
		t.Fatal(err)
	}
	for round := 1; round <= 3; round++ {
		d.Round(context.Background())
		if n1.polls.Load() != int32(round) || n2.polls.Load() != int32(round) {
			t.Fatalf("after %d rounds: polls n1=%d n2=%d", round, n1.polls.Load(), n2.polls.Load())
		}
	}
	a, b, c, dd := r.Backend("a").GPU(), r.Backend("b").GPU(), r.Backend("c").GPU(), r.Backend("d").GPU()
	if dd != nil {
		t.Fatalf("backend on no node has figures %+v", dd)
	}
	for _, tc := range []struct {
		name             string
		st               *GPUStats
		node             string
		gpus             int
		util             float64
		total, used, fre uint64
		watts            float64
	}{
		{"a: GPUs 0 and 1", a, "n1", 2, 0.2, 160 << 30, 80 << 30, 80 << 30, 300},
		{"b: GPU 2", b, "n1", 1, 0.9, 40 << 30, 40 << 30, 0, 300},
		{"c: every GPU of n2", c, "n2", 2, 0.6, 48 << 30, 12 << 30, 36 << 30, 120},
	} {
		st := tc.st
		if st == nil || st.Node != tc.node || st.GPUs != tc.gpus || !st.HasUtil || !near(st.Util, tc.util) ||
			!st.HasMem || st.MemTotal != tc.total || st.MemUsed != tc.used || st.MemFree != tc.fre ||
			!st.HasPower || !near(st.PowerW, tc.watts) || st.Polled.IsZero() {
			t.Errorf("%s: %+v", tc.name, st)
		}
	}
	// A new reading replaces the old one at the next round.
	n2.set([]wire.GPU{gpu(0, 0, 24, 4, 50), gpu(1, 0, 24, 8, 70)}, nil)
	d.Round(context.Background())
	if st := r.Backend("c").GPU(); st == nil || st.Util != 0 || !st.HasUtil {
		t.Fatalf("c after a new reading: %+v", st)
	}
}

// A GPU a backend claims but the sidecar does not report, or a reading
// missing on one of its GPUs, makes that figure unknown rather than
// partial; a lost GPU counts as unreported; no GPU at all: no figures.
func TestGPUStats_Partial(t *testing.T) {
	full := gpu(0, 40, 80, 40, 100)
	noUtil := gpu(1, 0, 80, 40, 100)
	noUtil.UtilizationGPU = nil
	noUtil.Errors = map[string]string{"utilization_gpu": "ERROR_UNKNOWN"}
	noPower := gpu(2, 20, 80, 40, 100)
	noPower.PowerDrawWatts = nil
	lost := wire.GPU{Index: 3, Error: "ERROR_GPU_IS_LOST"}
	info := &wire.GPUInfo{GPUs: []wire.GPU{full, noUtil, noPower, lost}}
	at := time.Now()

	st := gpuStats("n", at, info, []int{0, 1})
	if st == nil || st.HasUtil || st.Util != 0 || !st.HasMem || st.MemTotal != 160<<30 || !st.HasPower || st.PowerW != 200 {
		t.Errorf("util missing on one GPU: %+v", st)
	}
	st = gpuStats("n", at, info, []int{0, 2})
	if st == nil || !st.HasUtil || !near(st.Util, 0.3) || st.HasPower || st.PowerW != 0 {
		t.Errorf("power missing on one GPU: %+v", st)
	}
	st = gpuStats("n", at, info, []int{0, 3})
	if st == nil || st.GPUs != 1 || st.HasUtil || st.HasMem || st.HasPower {
		t.Errorf("lost GPU: %+v", st)
	}
	st = gpuStats("n", at, info, []int{0, 7})
	if st == nil || st.HasUtil || st.HasMem || st.HasPower {
		t.Errorf("unreported index: %+v", st)
	}
	if st = gpuStats("n", at, info, []int{3}); st != nil {
		t.Errorf("only a lost GPU: %+v", st)
	}
	if st = gpuStats("n", at, &wire.GPUInfo{}, nil); st != nil {
		t.Errorf("node without GPUs: %+v", st)
	}
	st = gpuStats("n", at, &wire.GPUInfo{GPUs: []wire.GPU{full, noPower}}, nil)
	if st == nil || st.GPUs != 2 || !st.HasUtil || !near(st.Util, 0.3) || st.HasPower {
		t.Errorf("all GPUs: %+v", st)
	}
}

// A failing sidecar (down, NVML failed, wrong key) leaves its backends'
// figures unknown; it is logged once when it starts failing and once when
// it recovers, never with its key.
func TestDiscoverer_SidecarFailure(t *testing.T) {
	r, d, logs := sidecarRegistry(t)
	src := &gpuSource{}
	src.set([]wire.GPU{gpu(0, 10, 80, 20, 100)}, nil)
	url := startSidecar(t, src)
	if err := r.SetNodes([]Node{{Name: "n1", URL: url, Key: sidecarKey, Backends: map[string][]int{"a": {0}}}}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	d.pollSidecars(ctx)
	if r.Backend("a").GPU() == nil {
		t.Fatal("no figures from a working sidecar")
	}
	src.set(nil, errors.New("nvml: ERROR_LIBRARY_NOT_FOUND")) // the sidecar answers 503
	for range 3 {
		d.pollSidecars(ctx)
		if st := r.Backend("a").GPU(); st != nil {
			t.Fatalf("figures kept while the sidecar fails: %+v", st)
		}
	}
	src.set([]wire.GPU{gpu(0, 10, 80, 20, 100)}, nil)
	d.pollSidecars(ctx)
	d.pollSidecars(ctx)
	if r.Backend("a").GPU() == nil {
		t.Fatal("no figures after the sidecar recovered")
	}
	out := logs.String()
	if n := strings.Count(out, "sidecar poll failed"); n != 1 {
		t.Errorf("failure logged %d times, want once:\n%s", n, out)
	}
	if n := strings.Count(out, "sidecar polled"); n != 2 { // first success, recovery
		t.Errorf("success logged %d times, want twice:\n%s", n, out)
	}
	if !strings.Contains(out, "503") || !strings.Contains(out, "node.name=n1") {
		t.Errorf("failure log lacks the cause or the node:\n%s", out)
	}

	// A wrong key (401) and an unreachable sidecar fail the same way.
	for _, n := range []Node{
		{Name: "n1", URL: url, Key: "wrong-key", Backends: map[string][]int{"a": {0}}},
		{Name: "n1", URL: "http://127.0.0.1:1", Key: sidecarKey, Backends: map[string][]int{"a": {0}}},
	} {
		d.pollSidecars(ctx) // figures back
		if r.Backend("a").GPU() == nil {
			t.Fatal("no figures")
		}
		if err := r.SetNodes([]Node{n}); err != nil {
			t.Fatal(err)
		}
		d.pollSidecars(ctx)
		if st := r.Backend("a").GPU(); st != nil {
			t.Fatalf("%v: figures %+v", n, st)
		}
		if err := r.SetNodes([]Node{{Name: "n1", URL: url, Key: sidecarKey, Backends: map[string][]int{"a": {0}}}}); err != nil {
			t.Fatal(err)
		}
	}
	if out := logs.String(); strings.Contains(out, sidecarKey) || strings.Contains(out, "wrong-key") {
		t.Errorf("a sidecar key was logged:\n%s", out)
	}
	if !strings.Contains(logs.String(), "401") {
		t.Errorf("wrong key not reported as 401:\n%s", logs.String())
	}
}

func TestRegistry_SetNodes(t *testing.T) {
	r, d, _ := sidecarRegistry(t)
	src := &gpuSource{}
	src.set([]wire.GPU{gpu(0, 10, 80, 20, 100), gpu(1, 10, 80, 20, 100)}, nil)
	url := startSidecar(t, src)
	good := []Node{{Name: "n1", URL: url, Key: sidecarKey, Backends: map[string][]int{"a": {1, 0, 1}, "b": nil}}}
	if err := r.SetNodes(good); err != nil {
		t.Fatal(err)
	}
	good[0].Backends["a"][0] = 5 // the registry keeps its own copy
	nodes := r.Nodes()
	if len(nodes) != 1 || len(nodes[0].Backends) != 2 || len(nodes[0].Backends["a"]) != 2 ||
		nodes[0].Backends["a"][0] != 0 || nodes[0].Backends["a"][1] != 1 {
		t.Fatalf("Nodes() = %+v", nodes)
	}
	d.pollSidecars(context.Background())
	if st := r.Backend("a").GPU(); st == nil || st.GPUs != 2 {
		t.Fatalf("a (GPU 1 listed twice): %+v", st)
	}

	for _, tc := range []struct {
		name  string
		nodes []Node
		want  string
	}{
		{"no url", []Node{{Name: "x"}}, "needs a name and a sidecar url"},
		{"no name", []Node{{URL: url}}, "needs a name and a sidecar url"},
		{"twice", []Node{{Name: "x", URL: url}, {Name: "x", URL: url}}, `node "x" is listed twice`},
		{"unknown backend", []Node{{Name: "x", URL: url, Backends: map[string][]int{"zz": nil}}}, `unknown backend "zz"`},
		{"two nodes", []Node{{Name: "x", URL: url, Backends: map[string][]int{"a": nil}},
			{Name: "y", URL: url, Backends: map[string][]int{"a": nil}}}, `backend "a" is on two nodes`},
		{"negative index", []Node{{Name: "x", URL: url, Backends: map[string][]int{"a": {-1}}}}, "negative gpu index"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := r.SetNodes(tc.nodes)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			if got := r.Nodes(); len(got) != 1 || got[0].Name != "n1" {
				t.Fatalf("a rejected SetNodes changed the nodes: %+v", got)
			}
		})
	}

	// Backend b leaves the node: its figures go at once; a keeps its own
	// until the next poll.
	if err := r.SetNodes([]Node{{Name: "n1", URL: url, Key: sidecarKey, Backends: map[string][]int{"a": {0}}}}); err != nil {
		t.Fatal(err)
	}
	if r.Backend("b").GPU() != nil || r.Backend("a").GPU() == nil {
		t.Fatalf("after b left: a=%+v b=%+v", r.Backend("a").GPU(), r.Backend("b").GPU())
	}
	d.pollSidecars(context.Background())
	if st := r.Backend("a").GPU(); st == nil || st.GPUs != 1 {
		t.Fatalf("a after its next poll: %+v", st)
	}
	if err := r.SetNodes(nil); err != nil || r.Nodes() != nil || r.Backend("a").GPU() != nil {
		t.Fatalf("no nodes: err=%v nodes=%v a=%+v", err, r.Nodes(), r.Backend("a").GPU())
	}
}

func TestNode_StringHidesKey(t *testing.T) {
	n := Node{Name: "n1", URL: "http://gpu-1:8007", Key: sidecarKey}
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("x", "node", n)
	for _, s := range []string{n.String(), buf.String()} {
		if strings.Contains(s, sidecarKey) || !strings.Contains(s, "gpu-1") {
			t.Errorf("%q", s)
		}
	}
}

// Placement names the node and GPUs SetNodes gave a backend, and nothing
// changes when SetNodes refuses the list.
func TestRegistry_Placement(t *testing.T) {
	cfg := config.Default()
	cfg.Backends = []config.Backend{{Name: "a", Engine: "vllm", URL: "http://127.0.0.1:1", MaxConcurrent: 1},
		{Name: "b", Engine: "vllm", URL: "http://127.0.0.1:2", MaxConcurrent: 1}}
	r, err := NewRegistry(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.SetNodes([]Node{{Name: "n1", URL: "http://127.0.0.1:3", Backends: map[string][]int{"a": {1, 0}}}}); err != nil {
		t.Fatal(err)
	}
	if n, g := r.Backend("a").Placement(); n != "n1" || g != "0,1" {
		t.Errorf("a: %q %q", n, g)
	}
	if n, g := r.Backend("b").Placement(); n != "" || g != "" {
		t.Errorf("b: %q %q", n, g)
	}
	err = r.SetNodes([]Node{{Name: "n2", URL: "http://127.0.0.1:3", Backends: map[string][]int{"b": {2}, "nope": {0}}}})
	if err == nil {
		t.Fatal("an unknown backend was accepted")
	}
	if n, _ := r.Backend("b").Placement(); n != "" {
		t.Errorf("a refused SetNodes placed b on %q", n)
	}
}
