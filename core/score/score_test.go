package score

import (
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/core/backend"
	"github.com/mindrouter/mindrouter/core/config"
	"github.com/mindrouter/mindrouter/core/pluginhost"
	"github.com/mindrouter/mindrouter/core/sched"
	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

var testAdapter = pluginhost.NewNativePlugin("vllm", func() *sdk.Plugin {
	return sdk.NewAdapter(sdk.Manifest{Name: "vllm", Format: "vllm"}, sdk.Unimplemented{})
})

// backends builds n backends named a, b, c… (max_concurrent 4), healthy,
// with an adapter, serving model "m" (not loaded, no capabilities known).
func backends(t testing.TB, n int) []*backend.Backend {
	t.Helper()
	y := "backends:\n"
	for i := range n {
		y += fmt.Sprintf("  - {name: %c, engine: vllm, url: \"http://127.0.0.1:%d\", max_concurrent: 4}\n", 'a'+i, i+1)
	}
	cfg, err := config.Parse([]byte(y), ".")
	if err != nil {
		t.Fatal(err)
	}
	reg, err := backend.NewRegistry(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range reg.Backends() {
		setModel(b, canon.DiscoveredModel{Name: "m"})
	}
	return reg.Backends()
}

// setModel publishes a healthy status with model m (and a load report when
// load is given: running, waiting, kv-cache usage).
func setModel(b *backend.Backend, m canon.DiscoveredModel, load ...float64) {
	st := &backend.Status{Healthy: true, Probed: true, Models: map[string]canon.DiscoveredModel{m.Name: m}}
	if len(load) == 3 {
		st.HasLoad, st.Running, st.Waiting, st.KVCache = true, load[0], load[1], load[2]
	}
	b.SetStatus(st, testAdapter)
}

func names(bs []*backend.Backend) string {
	var s []string
	for _, b := range bs {
		s = append(s, b.Name)
	}
	return strings.Join(s, ",")
}

// only weighs one part, the others zero.
func only(part int) *Scorer {
	var w [nParts]float64
	w[part] = 1
	return New(Weights{w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]})
}

func rank(t *testing.T, s *Scorer, req *sched.Request, needs Needs, all []*backend.Backend) (string, *sched.Decision) {
	t.Helper()
	d := &sched.Decision{Record: true}
	got, known := s.RankFor(nil, req, needs, all, d)
	if !known {
		t.Fatalf("model %q unknown", req.Model)
	}
	if len(d.Candidates) != len(all) {
		t.Fatalf("recorded %d candidates for %d backends", len(d.Candidates), len(all))
	}
	return names(got), d
}

func candidate(t *testing.T, d *sched.Decision, name string) sched.Candidate {
	t.Helper()
	for _, c := range d.Candidates {
		if c.Backend == name {
			return c
		}
	}
	t.Fatalf("no candidate %s in %+v", name, d.Candidates)
	return sched.Candidate{}
}

func acquire(t *testing.T, b *backend.Backend, n int) {
	t.Helper()
	for range n {
		if !b.TryAcquire() {
			t.Fatalf("%s: no free slot", b.Name)
		}
		t.Cleanup(b.Release)
	}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// Each hard constraint removes the backend it fails from the ranking and
// is recorded as that backend's Failed; the others still rank.
func TestScorer_Constraints(t *testing.T) {
	caps := func(c ...string) canon.DiscoveredModel { return canon.DiscoveredModel{Name: "m", Capabilities: c} }
	for _, tc := range []struct {
		name  string
		setup func(b *backend.Backend) // applied to backend b
		needs Needs
		want  string
	}{
		{"model", func(b *backend.Backend) { setModel(b, canon.DiscoveredModel{Name: "other"}) }, Needs{}, FailModel},
		{"disabled", func(b *backend.Backend) { _ = b.SetState("disabled") }, Needs{}, FailDisabled},
		{"draining", func(b *backend.Backend) { _ = b.SetState("draining") }, Needs{}, FailDraining},
		{"unhealthy", func(b *backend.Backend) {
			b.SetStatus(&backend.Status{Models: map[string]canon.DiscoveredModel{"m": {Name: "m"}}}, testAdapter)
		}, Needs{}, FailUnhealthy},
		{"no adapter", func(b *backend.Backend) {
			b.SetStatus(&backend.Status{Healthy: true, Models: map[string]canon.DiscoveredModel{"m": {Name: "m"}}}, nil)
		}, Needs{}, FailNoAdapter},
		{"breaker open", func(b *backend.Backend) {
			for range backend.BreakerThreshold {
				tk, _ := b.TryAttempt()
				b.ReportFailure(tk)
			}
		}, Needs{}, FailBreaker},
		{"embedding", func(b *backend.Backend) { setModel(b, caps(canon.CapCompletion)) }, Needs{Embed: true}, FailEmbedding},
		{"completion", func(b *backend.Backend) { setModel(b, caps(canon.CapEmbedding)) }, Needs{Generate: true}, FailCompletion},
		{"vision", func(b *backend.Backend) { setModel(b, caps(canon.CapCompletion, canon.CapTools)) }, Needs{Vision: true}, FailVision},
		{"tools", func(b *backend.Backend) { setModel(b, caps(canon.CapCompletion, canon.CapVision)) }, Needs{Tools: true}, FailTools},
		{"structured", func(b *backend.Backend) { setModel(b, caps(canon.CapEmbedding)) }, Needs{Structured: true}, FailStructured},
		{"memory", func(b *backend.Backend) {
			setModel(b, canon.DiscoveredModel{Name: "m", SizeBytes: 50 << 30})
			b.SetGPU(&backend.GPUStats{GPUs: 1, HasMem: true, MemTotal: 40 << 30, MemFree: 40 << 30})
		}, Needs{}, FailMemory},
	} {
		t.Run(tc.name, func(t *testing.T) {
			all := backends(t, 3)
			tc.setup(all[1])
			got, d := rank(t, New(DefaultWeights()), &sched.Request{Model: "m"}, tc.needs, all)
			if got != "a,c" {
				t.Fatalf("ranked %q, want a,c", got)
			}
			if c := candidate(t, d, "b"); c.Failed != tc.want || c.Score != 0 || len(c.Parts) != 0 {
				t.Fatalf("b recorded as %+v, want failed %q", c, tc.want)
			}
			// The failed one is recorded after the ranked ones.
			if last := d.Candidates[2]; last.Backend != "b" {
				t.Fatalf("recorded order %+v", d.Candidates)
			}
			// Rank, the scheduler's entry, reads the needs from the request.
			if got, _ := New(DefaultWeights()).Rank(nil, &sched.Request{Model: "m", Needs: tc.needs}, all, &sched.Decision{}); names(got) != "a,c" {
				t.Fatalf("Rank with the request's needs ranked %q, want a,c", names(got))
			}
		})
	}
}

// What discovery does not know does not exclude: a model without
// reported capabilities serves any need; memory is checked only when both
// the model's size and the GPUs' memory are known, and never for a model
// already loaded; a model that fits passes.
func TestScorer_ConstraintsPassWhenUnknownOrMet(t *testing.T) {
	all := backends(t, 5)
	everything := Needs{Vision: true, Tools: true, Structured: true, Generate: true}
	setModel(all[0], canon.DiscoveredModel{Name: "m"}) // capabilities unknown
	setModel(all[1], canon.DiscoveredModel{Name: "m", SizeBytes: 50 << 30,
		Capabilities: []string{canon.CapCompletion, canon.CapVision, canon.CapTools}})
	all[1].SetGPU(&backend.GPUStats{GPUs: 1, HasUtil: true, Util: 0.5}) // memory unknown
	setModel(all[2], canon.DiscoveredModel{Name: "m", SizeBytes: 50 << 30, Loaded: true})
	all[2].SetGPU(&backend.GPUStats{GPUs: 1, HasMem: true, MemTotal: 40 << 30}) // loaded: already fits
	setModel(all[3], canon.DiscoveredModel{Name: "m", SizeBytes: 30 << 30})
	all[3].SetGPU(&backend.GPUStats{GPUs: 1, HasMem: true, MemTotal: 40 << 30, MemFree: 1 << 30}) // fits in total
	setModel(all[4], canon.DiscoveredModel{Name: "m", Capabilities: []string{canon.CapEmbedding}})
	got, d := rank(t, New(Weights{}), &sched.Request{Model: "m"}, Needs{Embed: true}, all)
	if got != "a,c,d,e" { // b's capabilities lack embedding
		t.Fatalf("embed: %q", got)
	}
	if c := candidate(t, d, "b"); c.Failed != FailEmbedding {
		t.Fatalf("b: %+v", c)
	}
	got, _ = rank(t, New(Weights{}), &sched.Request{Model: "m"}, everything, all)
	if got != "a,b,c,d" { // e is embedding-only
		t.Fatalf("generate with every need: %q", got)
	}
}

// known is false only when no backend has the model at all; a model
// whose every backend fails a constraint is known (503, not 404), and
// Ollama's "name" finds "name:latest".
func TestScorer_Known(t *testing.T) {
	all := backends(t, 2)
	s := New(DefaultWeights())
	if got, known := s.Rank(nil, &sched.Request{Model: "nope"}, all, nil); known || len(got) != 0 {
		t.Fatalf("unknown model: %v known=%v", names(got), known)
	}
	for _, b := range all {
		_ = b.SetState("disabled")
	}
	if got, known := s.Rank(nil, &sched.Request{Model: "m"}, all, nil); !known || len(got) != 0 {
		t.Fatalf("all disabled: %v known=%v", names(got), known)
	}
	cfg, err := config.Parse([]byte("backends:\n  - {name: o, engine: ollama, url: \"http://127.0.0.1:9\", max_concurrent: 1}\n"), ".")
	if err != nil {
		t.Fatal(err)
	}
	reg, err := backend.NewRegistry(cfg)
	if err != nil {
		t.Fatal(err)
	}
	o := reg.Backends()[0]
	setModel(o, canon.DiscoveredModel{Name: "llama3:latest", Loaded: true})
	d := &sched.Decision{Record: true}
	got, known := New(DefaultWeights()).Rank(nil, &sched.Request{Model: "llama3"}, []*backend.Backend{o}, d)
	if !known || names(got) != "o" || part(d.Candidates[0], "loaded") != DefaultWeights().Loaded {
		t.Fatalf("alias: %v known=%v %+v", names(got), known, d.Candidates)
	}
}

// A backend at max_concurrent is still ranked, marked at_capacity.
func TestScorer_FullBackendStillRanked(t *testing.T) {
	all := backends(t, 2)
	acquire(t, all[0], 4)
	got, d := rank(t, New(DefaultWeights()), &sched.Request{Model: "m"}, Needs{}, all)
	if got != "b,a" {
		t.Fatalf("ranked %q", got)
	}
	if c := candidate(t, d, "a"); part(c, MarkAtCapacity) != 1 {
		t.Fatalf("a not marked full: %+v", c)
	}
	if c := candidate(t, d, "b"); part(c, MarkAtCapacity) != 0 {
		t.Fatalf("b marked full: %+v", c)
	}
}

func gpuUtil(u float64) *backend.GPUStats { return &backend.GPUStats{GPUs: 1, HasUtil: true, Util: u} }

// Each soft score alone orders the backends by its own figure and records
// its normalised value times the weight; weighed zero it changes nothing
// (the order falls back to in-flight share, then the backends' order).
func TestScorer_Parts(t *testing.T) {
	loaded := canon.DiscoveredModel{Name: "m", Loaded: true}
	for _, tc := range []struct {
		name  string
		part  int
		setup func(t *testing.T, a, b, c *backend.Backend)
		want  string
		parts [3]float64 // a, b, c
	}{
		{"loaded", partLoaded, func(t *testing.T, a, b, c *backend.Backend) { setModel(c, loaded) }, "c,a,b", [3]float64{0, 0, 1}},
		{"gpu_util", partGPU, func(t *testing.T, a, b, c *backend.Backend) {
			a.SetGPU(gpuUtil(0.9))
			b.SetGPU(gpuUtil(0.5))
			c.SetGPU(gpuUtil(0.1))
		}, "c,b,a", [3]float64{0.1, 0.5, 0.9}},
		{"queue_depth", partQueue, func(t *testing.T, a, b, c *backend.Backend) {
			acquire(t, a, 4) // full: ½
			acquire(t, b, 1)
		}, "c,b,a", [3]float64{0.5, 0.8, 1}},
		{"latency", partLatency, func(t *testing.T, a, b, c *backend.Backend) {
			a.ObserveTTFB(3 * time.Second)
			b.ObserveTTFB(2 * time.Second)
			c.ObserveTTFB(time.Second)
		}, "c,b,a", [3]float64{1.0 / 3, 0.5, 1}},
		{"throughput", partThroughput, func(t *testing.T, a, b, c *backend.Backend) {
			a.ObserveTokens(10, time.Second)
			b.ObserveTokens(20, time.Second)
			c.ObserveTokens(40, time.Second)
		}, "c,b,a", [3]float64{0.25, 0.5, 1}},
		{"priority", partPriority, func(t *testing.T, a, b, c *backend.Backend) {
			a.SetPriority(-3)
			b.SetPriority(5)
			c.SetPriority(MaxPriority + 10)
		}, "c,b,a", [3]float64{0, 0.5, 1}},
		{"kv_cache", partKV, func(t *testing.T, a, b, c *backend.Backend) {
			setModel(a, canon.DiscoveredModel{Name: "m"}, 1, 0, 0.9)
			setModel(b, canon.DiscoveredModel{Name: "m"}, 1, 0, 0.5)
			setModel(c, canon.DiscoveredModel{Name: "m"}, 1, 0, 0.1)
		}, "c,b,a", [3]float64{0.1, 0.5, 0.9}},
		{"waiting", partWaiting, func(t *testing.T, a, b, c *backend.Backend) {
			setModel(a, canon.DiscoveredModel{Name: "m"}, 1, 3, 0.2)
			setModel(b, canon.DiscoveredModel{Name: "m"}, 1, 1, 0.2)
			setModel(c, canon.DiscoveredModel{Name: "m"}, 1, 0, 0.2)
		}, "c,b,a", [3]float64{0.25, 0.5, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			all := backends(t, 3)
			tc.setup(t, all[0], all[1], all[2])
			s := only(tc.part)
			s.w[tc.part] = 2
			got, d := rank(t, s, &sched.Request{Model: "m"}, Needs{}, all)
			if got != tc.want {
				t.Fatalf("ranked %q, want %q", got, tc.want)
			}
			for i, want := range tc.parts {
				c := candidate(t, d, all[i].Name)
				if p := part(c, partNames[tc.part]); !near(p, 2*want) || !near(c.Score, p) || len(c.Parts) != 1+len(marks(c)) {
					t.Errorf("%s: parts %v score %v, want %s = %v", c.Backend, c.Parts, c.Score, partNames[tc.part], 2*want)
				}
			}
			// Weighed zero, the part does not reorder: only in-flight
			// share (the queue case's own signal) and list order do.
			want := "a,b,c"
			if tc.part == partQueue {
				want = "c,b,a"
			}
			if got, _ := rank(t, New(Weights{}), &sched.Request{Model: "m"}, Needs{}, all); got != want {
				t.Fatalf("weight zero: ranked %q, want %q", got, want)
			}
		})
	}
}

func marks(c sched.Candidate) []string {
	var m []string
	for _, k := range []string{MarkAtCapacity, MarkExcluded, MarkProbe} {
		if _, ok := c.Parts.Get(k); ok {
			m = append(m, k)
		}
	}
	return m
}

// A figure nobody measured is neutral: the mean of the candidates that
// have it, or ½ when none has.
func TestScorer_UnknownIsNeutral(t *testing.T) {
	all := backends(t, 3)
	all[0].SetGPU(gpuUtil(0.8)) // 0.2
	all[2].SetGPU(gpuUtil(0.2)) // 0.8; b unknown: 0.5
	all[0].ObserveTokens(10, time.Second)
	all[2].ObserveTokens(30, time.Second) // a 1/3, c 1; b unknown: 2/3
	s := New(Weights{GPUUtil: 1, Throughput: 1, KVCache: 1, Latency: 1})
	_, d := rank(t, s, &sched.Request{Model: "m"}, Needs{}, all)
	b := candidate(t, d, "b")
	if !near(part(b, "gpu_util"), 0.5) || !near(part(b, "throughput"), 2.0/3) {
		t.Errorf("b's unknown figures: %v", b.Parts)
	}
	for _, c := range d.Candidates { // nobody knows kv_cache or latency
		if !near(part(c, "kv_cache"), 0.5) || !near(part(c, "latency"), 0.5) {
			t.Errorf("%s: %v", c.Backend, c.Parts)
		}
	}
	// A single known figure makes the others equal to it: no preference.
	all = backends(t, 2)
	all[1].SetGPU(gpuUtil(0.9))
	got, d := rank(t, only(partGPU), &sched.Request{Model: "m"}, Needs{}, all)
	if got != "a,b" || candidate(t, d, "a").Score != candidate(t, d, "b").Score {
		t.Fatalf("one known figure: %q %+v", got, d.Candidates)
	}
}

// Latency compares like with like: time to first byte when every
// candidate with a latency has one, whole-response latency otherwise.
func TestScorer_LatencyFigure(t *testing.T) {
	all := backends(t, 2)
	all[0].ObserveTTFB(time.Second)
	all[0].ObserveLatency(10 * time.Second)
	all[1].ObserveTTFB(2 * time.Second)
	all[1].ObserveLatency(5 * time.Second)
	if got, _ := rank(t, only(partLatency), &sched.Request{Model: "m"}, Needs{}, all); got != "a,b" {
		t.Fatalf("both with TTFB: %q", got)
	}
	all = backends(t, 2)
	all[0].ObserveTTFB(time.Second)
	all[0].ObserveLatency(10 * time.Second)
	all[1].ObserveLatency(5 * time.Second) // complete responses only
	if got, _ := rank(t, only(partLatency), &sched.Request{Model: "m"}, Needs{}, all); got != "b,a" {
		t.Fatalf("one without TTFB: %q", got)
	}
}

// Backends already tried come last whatever their score, in score order
// among themselves.
func TestScorer_Exclude(t *testing.T) {
	all := backends(t, 4)
	for i, b := range all {
		b.SetPriority(10 - i) // a best … d worst
	}
	req := &sched.Request{Model: "m", Exclude: []*backend.Backend{all[0], all[2]}}
	got, d := rank(t, New(DefaultWeights()), req, Needs{}, all)
	if got != "b,d,a,c" {
		t.Fatalf("ranked %q", got)
	}
	if part(candidate(t, d, "a"), MarkExcluded) != 1 || part(candidate(t, d, "b"), MarkExcluded) != 0 {
		t.Fatalf("marks: %+v", d.Candidates)
	}
	// Only excluded candidates left: they are still offered.
	req.Exclude = all
	if got, _ := rank(t, New(DefaultWeights()), req, Needs{}, all); got != "a,b,c,d" {
		t.Fatalf("all excluded: %q", got)
	}
}

// Equal scores are ordered by in-flight share, then by the backends'
// order; the same state always gives the same ranking.
func TestScorer_Deterministic(t *testing.T) {
	all := backends(t, 5)
	s := New(Weights{Priority: 1}) // queue depth off: share is only a tie-break
	acquire(t, all[0], 2)
	acquire(t, all[3], 1)
	for range 50 {
		got, _ := rank(t, s, &sched.Request{Model: "m"}, Needs{}, all)
		if got != "b,c,e,d,a" {
			t.Fatalf("ranked %q", got)
		}
	}
	all[4].SetPriority(1) // a higher score beats a lower share
	if got, _ := rank(t, s, &sched.Request{Model: "m"}, Needs{}, all); got != "e,b,c,d,a" {
		t.Fatalf("ranked %q", got)
	}
}

// Rank appends to dst; the recorded candidates' parts add up to their
// scores, best first; d's storage (Parts included) is reused after
// Reset; without Record nothing is recorded.
func TestScorer_Decision(t *testing.T) {
	all := backends(t, 3)
	setModel(all[1], canon.DiscoveredModel{Name: "m", Loaded: true}, 2, 1, 0.4)
	all[1].SetGPU(gpuUtil(0.3))
	all[1].ObserveTTFB(time.Second)
	all[1].ObserveTokens(50, time.Second)
	_ = all[2].SetState("draining")
	s := New(DefaultWeights())
	d := &sched.Decision{Record: true}
	dst := []*backend.Backend{all[2]}
	got, _ := s.Rank(dst, &sched.Request{Model: "m"}, all, d)
	if names(got) != "c,b,a" {
		t.Fatalf("dst %q", names(got))
	}
	if len(d.Candidates) != 3 || d.Candidates[0].Backend != "b" || d.Candidates[1].Backend != "a" ||
		d.Candidates[2].Backend != "c" || d.Candidates[2].Failed != FailDraining {
		t.Fatalf("candidates %+v", d.Candidates)
	}
	for _, c := range d.Candidates[:2] {
		sum := 0.0
		for _, p := range c.Parts {
			if p.Name != MarkAtCapacity && p.Name != MarkExcluded {
				sum += p.Value
			}
		}
		if !near(sum, c.Score) || len(c.Parts) != nParts || c.Score <= 0 || c.Score > 100 {
			t.Errorf("%s: score %v, parts %v", c.Backend, c.Score, c.Parts)
		}
	}
	if d.Candidates[0].Score <= d.Candidates[1].Score {
		t.Errorf("not best first: %+v", d.Candidates)
	}
	bParts := d.Candidates[0].Parts
	d.Reset()
	if _, _ = s.Rank(nil, &sched.Request{Model: "m"}, all, d); len(d.Candidates) != 3 {
		t.Fatalf("after Reset: %+v", d.Candidates)
	}
	if &d.Candidates[0].Parts[0] != &bParts[0] {
		t.Error("Parts storage not reused after Reset")
	}
	off := &sched.Decision{}
	if _, _ = s.Rank(nil, &sched.Request{Model: "m"}, all, off); len(off.Candidates) != 0 {
		t.Fatalf("recorded without Record: %+v", off.Candidates)
	}
	if got, _ := s.Rank(nil, &sched.Request{Model: "m"}, all, nil); names(got) != "b,a" {
		t.Fatalf("nil decision: %q", names(got))
	}
}

// Many candidates (sorted by slices.SortFunc, not by insertion) rank the
// same way.
func TestScorer_ManyBackends(t *testing.T) {
	all := backends(t, 20)
	for i, b := range all {
		b.SetPriority(i % MaxPriority)
	}
	got, _ := New(Weights{Priority: 1}).Rank(nil, &sched.Request{Model: "m"}, all, nil)
	if len(got) != len(all) {
		t.Fatalf("%d ranked of %d", len(got), len(all))
	}
	for i := 1; i < len(got); i++ {
		p, q := got[i-1].Priority(), got[i].Priority()
		if p < q || p == q && got[i-1].Name > got[i].Name {
			t.Fatalf("out of order at %d: %s", i, names(got))
		}
	}
}

// One Scorer ranks from many goroutines at once while the figures change
// (the race detector checks the pooled scratch and the backends' reads);
// every ranking holds each candidate once.
func TestScorer_Concurrent(t *testing.T) {
	all := benchBackends(t, 8)
	s := New(DefaultWeights())
	stop := make(chan struct{})
	var writers, readers sync.WaitGroup
	writers.Add(1)
	go func() {
		defer writers.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			b := all[i%len(all)]
			b.ObserveTTFB(time.Duration(1+i%50) * time.Millisecond)
			b.SetGPU(gpuUtil(float64(i%100) / 100))
			if b.TryAcquire() {
				b.Release()
			}
		}
	}()
	for range 4 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			d := &sched.Decision{Record: true}
			var dst []*backend.Backend
			for range 500 {
				d.Reset()
				dst, _ = s.Rank(dst[:0], &sched.Request{Model: "m"}, all, d)
				seen := map[*backend.Backend]bool{}
				for _, b := range dst {
					seen[b] = true
				}
				if len(dst) != len(all)-1 || len(seen) != len(dst) || len(d.Candidates) != len(all) {
					t.Errorf("ranked %s, %d candidates", names(dst), len(d.Candidates))
					return
				}
			}
		}()
	}
	readers.Wait()
	close(stop)
	writers.Wait()
}

// A backend whose breaker waits for its half-open probe ranks first,
// whatever its score (marked "probe"), among the backends the request has
// not tried; once the probe is out it is not ranked at all. Left to the
// score, a restored backend got its probe only when its peers were full
// (issue 19: 40-60 s in the fault matrix).
func TestScorer_ProbeDueFirst(t *testing.T) {
	y := "backends:\n"
	for i := range 3 {
		y += fmt.Sprintf("  - {name: %c, engine: vllm, url: \"http://127.0.0.1:%d\", max_concurrent: 4}\n", 'a'+i, i+1)
	}
	cfg, err := config.Parse([]byte(y), ".")
	if err != nil {
		t.Fatal(err)
	}
	// Below what the config accepts, and long enough that the first rank
	// below runs inside it even on a loaded CI machine (1 ms was not: CI
	// saw the probe already due).
	const cooldown = 300 * time.Millisecond
	cfg.Breaker.Cooldown = config.Duration(cooldown)
	reg, err := backend.NewRegistry(cfg)
	if err != nil {
		t.Fatal(err)
	}
	all := reg.Backends()
	for i, b := range all {
		setModel(b, canon.DiscoveredModel{Name: "m"})
		b.SetPriority(10 - 4*i) // a best, c worst
	}
	c := all[2]
	for range backend.BreakerThreshold {
		tk, _ := c.TryAttempt()
		c.ReportFailure(tk)
	}
	s := New(DefaultWeights())
	if got, _ := rank(t, s, &sched.Request{Model: "m"}, Needs{}, all); got != "a,b" {
		t.Fatalf("breaker open: ranked %q", got)
	}
	time.Sleep(cooldown + 20*time.Millisecond) // past the cool-down (any longer wait does as well)
	if !c.ProbeDue() {
		t.Fatalf("c's probe not due (breaker %s)", c.BreakerState())
	}
	got, d := rank(t, s, &sched.Request{Model: "m"}, Needs{}, all)
	if got != "c,a,b" {
		t.Fatalf("probe due: ranked %q, want c,a,b", got)
	}
	if part(candidate(t, d, "c"), MarkProbe) != 1 || part(candidate(t, d, "a"), MarkProbe) != 0 {
		t.Fatalf("marks: %+v", d.Candidates)
	}
	if got, _ := rank(t, s, &sched.Request{Model: "m", Exclude: []*backend.Backend{c}}, Needs{}, all); got != "a,b,c" {
		t.Fatalf("a request that tried c: ranked %q, want a,b,c", got)
	}
	tk, ok := c.TryAttempt()
	if !ok {
		t.Fatal("the probe was refused")
	}
	if got, _ := rank(t, s, &sched.Request{Model: "m"}, Needs{}, all); got != "a,b" {
		t.Fatalf("the probe out: ranked %q, want a,b", got)
	}
	c.ReportSuccess(tk)
	if got, _ := rank(t, s, &sched.Request{Model: "m"}, Needs{}, all); got != "a,b,c" {
		t.Fatalf("closed again: ranked %q, want a,b,c", got)
	}
}

// part is c's part called name (0 when it has none).
func part(c sched.Candidate, name string) float64 {
	v, _ := c.Parts.Get(name)
	return v
}
