package backend

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/core/apierr"
	"github.com/mindrouter/mindrouter/core/config"
	"github.com/mindrouter/mindrouter/core/pluginhost"
	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

func testRegistry(t *testing.T) *Registry {
	t.Helper()
	r := newTestRegistry(t, `backends:
  - {name: a, engine: vllm, url: "http://127.0.0.1:1", max_concurrent: 2}
  - {name: b, engine: vllm, url: "http://127.0.0.1:2/", max_concurrent: 4}
`)
	ad := testAdapter()
	for _, b := range r.Backends() {
		b.adapter.Store(ad)
	}
	return r
}

// newTestRegistry is the registry of a configuration's backends.
func newTestRegistry(t *testing.T, yaml string) *Registry {
	t.Helper()
	cfg, err := config.Parse([]byte(yaml), ".")
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewRegistry(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// testAdapter is an adapter plugin that does nothing (routing needs one).
func testAdapter() *pluginhost.Plugin {
	return pluginhost.NewNativePlugin("vllm", func() *sdk.Plugin {
		return sdk.NewAdapter(sdk.Manifest{Name: "vllm", Format: "vllm"}, sdk.Unimplemented{})
	})
}

func setStatus(b *Backend, healthy bool, models ...string) {
	st := &Status{Healthy: healthy, Probed: true, Models: map[string]canon.DiscoveredModel{}}
	for _, m := range models {
		st.Models[m] = canon.DiscoveredModel{Name: m, ContextLength: 4096}
	}
	b.status.Store(st)
}

func TestRegistry_Pick(t *testing.T) {
	r := testRegistry(t)
	a, b := r.Backend("a"), r.Backend("b")
	if b.URL("/v1/models") != "http://127.0.0.1:2/v1/models" {
		t.Fatalf("URL = %s", b.URL("/v1/models"))
	}
	setStatus(a, true, "m1", "m2")
	setStatus(b, true, "m2")

	if got, err := r.Pick("m1"); err != nil || got != a {
		t.Fatalf("m1 -> %v, %v", got, err)
	}
	// Least loaded by share of capacity: a holds 1 of 2, b 0 of 4.
	if err := a.Acquire(time.Second); err != nil {
		t.Fatal(err)
	}
	if got, _ := r.Pick("m2"); got != b {
		t.Fatalf("m2 -> %s, want b", got.Name)
	}
	a.Release()

	_, err := r.Pick("nope")
	var ae *apierr.Error
	if !errors.As(err, &ae) || ae.Status != 404 {
		t.Fatalf("unknown model: %v", err)
	}
	setStatus(a, false, "m1")
	_, err = r.Pick("m1")
	if !errors.As(err, &ae) || ae.Status != 503 {
		t.Fatalf("unhealthy only: %v", err)
	}
}

func TestBackend_AcquireTimesOut(t *testing.T) {
	r := testRegistry(t)
	a := r.Backend("a")
	for i := 0; i < 2; i++ {
		if err := a.Acquire(time.Second); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Acquire(20 * time.Millisecond); !errors.Is(err, ErrQueueTimeout) {
		t.Fatalf("third acquire: %v", err)
	}
	a.Release()
	if err := a.Acquire(20 * time.Millisecond); err != nil {
		t.Fatalf("after release: %v", err)
	}
	if a.InFlight() != 2 {
		t.Fatalf("in flight %d", a.InFlight())
	}
}

func TestRegistry_Models(t *testing.T) {
	r := testRegistry(t)
	a, b := r.Backend("a"), r.Backend("b")
	setStatus(a, true, "z", "m")
	setStatus(b, true, "m", "a")
	list := r.Models()
	if len(list.Models) != 3 || list.Models[0].ID != "a" || list.Models[2].ID != "z" || list.Models[1].ContextLength != 4096 {
		t.Fatalf("models = %+v", list.Models)
	}

	// b dies: its model "a" leaves the list, while Pick still says 503
	// (unavailable), not 404, thanks to the last known model list.
	setStatus(b, false, "m", "a")
	list = r.Models()
	if len(list.Models) != 2 || list.Models[0].ID != "m" || list.Models[1].ID != "z" {
		t.Fatalf("models with b down = %+v", list.Models)
	}
	var ae *apierr.Error
	if _, err := r.Pick("a"); !errors.As(err, &ae) || ae.Status != 503 || ae.Code != "backend_unavailable" {
		t.Fatalf("Pick of a dead backend's model: %v", err)
	}

	// a loses its adapter: healthy or not, nothing can be routed to it.
	a.adapter.Store(nil)
	if list = r.Models(); len(list.Models) != 0 {
		t.Fatalf("models with no adapter = %+v", list.Models)
	}
}

func TestRegistry_Serving(t *testing.T) {
	r := testRegistry(t)
	a, b := r.Backend("a"), r.Backend("b")
	if r.Serving() {
		t.Fatal("serving before discovery")
	}
	setStatus(a, true) // healthy, no models
	setStatus(b, false, "m")
	if r.Serving() {
		t.Fatal("serving with no healthy backend offering a model")
	}
	setStatus(b, true, "m")
	if !r.Serving() {
		t.Fatal("not serving with b healthy")
	}
	b.adapter.Store(nil)
	if r.Serving() {
		t.Fatal("serving with b's adapter gone")
	}
}

func TestRegistry_CheckEngines(t *testing.T) {
	cfg, err := config.Parse([]byte(`backends:
  - {name: a, engine: vllm, url: "http://127.0.0.1:1"}
  - {name: b, engine: ollama, url: "http://127.0.0.1:2"}
  - {name: c, engine: sglang, url: "http://127.0.0.1:3"}
`), ".")
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewRegistry(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.CheckEngines(map[string]bool{"vllm": true, "ollama": true, "sglang": true}); err != nil {
		t.Fatalf("all engines loaded: %v", err)
	}
	err = r.CheckEngines(map[string]bool{"vllm": true})
	if err == nil {
		t.Fatal("missing engines not reported")
	}
	msg := err.Error()
	for _, want := range []string{`backend "b"`, `engine "ollama"`, `backend "c"`, `engine "sglang"`, "adapter formats: vllm"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q lacks %q", msg, want)
		}
	}
	if strings.Contains(msg, `backend "a"`) {
		t.Errorf("error %q names backend a, whose engine is loaded", msg)
	}
	if err := r.CheckEngines(nil); err == nil || !strings.Contains(err.Error(), "adapter formats: none") {
		t.Fatalf("no adapters: %v", err)
	}
}

func TestBackend_AcquireContext(t *testing.T) {
	r := testRegistry(t)
	a := r.Backend("a")
	if !a.TryAcquire() || !a.TryAcquire() {
		t.Fatal("TryAcquire on a free backend failed")
	}
	if a.TryAcquire() {
		t.Fatal("TryAcquire beyond capacity succeeded")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.AcquireContext(ctx, time.Minute) }()
	waitFor(t, func() bool { return a.Waiting() == 1 }) // cancelled while it waits
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled wait: %v", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("cancelled wait did not return")
	}
	if a.InFlight() != 2 {
		t.Fatalf("in flight %d after a cancelled wait", a.InFlight())
	}
	if err := a.AcquireContext(context.Background(), 0); !errors.Is(err, ErrQueueTimeout) {
		t.Fatalf("no wait: %v", err)
	}
	go func() { done <- a.AcquireContext(context.Background(), time.Minute) }()
	waitFor(t, func() bool { return a.Waiting() == 1 }) // released while it waits
	a.Release()
	if err := <-done; err != nil {
		t.Fatalf("wait for a released slot: %v", err)
	}
	a.Release()
	a.Release()
	if a.InFlight() != 0 {
		t.Fatalf("in flight %d", a.InFlight())
	}
}

// TestOllamaLatestAlias: an Ollama backend's "name:latest" answers to
// "name" (Ollama's own rule), a vLLM backend's does not, a listed "name"
// is not shadowed, and /v1/models lists the model once.
func TestOllamaLatestAlias(t *testing.T) {
	r := newTestRegistry(t, `backends:
  - {name: o, engine: ollama, url: "http://127.0.0.1:1", max_concurrent: 2}
  - {name: v, engine: vllm, url: "http://127.0.0.1:2", max_concurrent: 2}
`)
	ad := testAdapter()
	o, v := r.Backend("o"), r.Backend("v")
	status := func(models ...string) *Status {
		st := &Status{Healthy: true, Probed: true, Models: map[string]canon.DiscoveredModel{}}
		for i, m := range models {
			st.Models[m] = canon.DiscoveredModel{Name: m, ContextLength: 4096 * (i + 1)}
		}
		return st
	}
	o.SetStatus(status("microsoft/phi-4:latest", "qwen3:8b", "llama3:latest", "llama3", "odd/:latest"), ad)
	v.SetStatus(status("only-vllm:latest"), ad)
	for model, want := range map[string]*Backend{
		"microsoft/phi-4":        o,
		"microsoft/phi-4:latest": o,
		"llama3":                 o, // listed itself
		"qwen3:8b":               o,
		"only-vllm:latest":       v,
	} {
		if got, err := r.Pick(model); err != nil || got != want {
			t.Errorf("%s -> %v, %v; want %s", model, got, err, want.Name)
		}
	}
	for _, model := range []string{"qwen3", "qwen3:latest", "only-vllm", "odd/", "microsoft/phi-4:8b"} {
		if got, err := r.Pick(model); err == nil {
			t.Errorf("%s -> %s, want 404", model, got.Name)
		}
	}
	ids := func() (l []string) {
		for _, m := range r.Models().Models {
			l = append(l, m.ID)
		}
		return l
	}
	if got, want := strings.Join(ids(), " "), "llama3 microsoft/phi-4:latest odd/:latest only-vllm:latest qwen3:8b"; got != want {
		t.Errorf("models %q, want %q", got, want)
	}
	// A vLLM backend serving "microsoft/phi-4": both names route there,
	// and the model is listed once, as "microsoft/phi-4", with the larger
	// context length.
	v.SetStatus(status("other", "microsoft/phi-4"), ad)
	var phi canon.Model
	for _, m := range r.Models().Models {
		if strings.HasPrefix(m.ID, "microsoft/phi-4") {
			if phi.ID != "" {
				t.Fatalf("listed twice: %s and %s", phi.ID, m.ID)
			}
			phi = m
		}
	}
	if phi.ID != "microsoft/phi-4" || phi.ContextLength != 8192 || strings.Join(phi.Backends, ",") != "o,v" {
		t.Errorf("listed as %+v", phi)
	}
	if got, _ := r.Pick("microsoft/phi-4:latest"); got != o {
		t.Errorf("the tagged name must stay on the Ollama backend, got %v", got)
	}
}

func TestBackend_Waiting(t *testing.T) {
	r := testRegistry(t)
	a := r.Backend("a") // max_concurrent 2
	for range 2 {
		if !a.TryAcquire() {
			t.Fatal("no free slot")
		}
	}
	done := make(chan error)
	go func() { done <- a.Acquire(10 * time.Second) }()
	waitFor(t, func() bool { return a.Waiting() == 1 })
	a.Release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if a.Waiting() != 0 || a.InFlight() != 2 {
		t.Fatalf("waiting %d, in flight %d", a.Waiting(), a.InFlight())
	}
	a.Release()
	a.Release()
}

// An admin's disable or drain takes a backend out of routing at once;
// enable puts it back.
func TestBackend_AdminState(t *testing.T) {
	cfg := config.Default()
	cfg.Backends = []config.Backend{{Name: "a", Engine: "vllm", URL: "http://127.0.0.1:1", MaxConcurrent: 1}}
	r, err := NewRegistry(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b := r.Backend("a")
	if b == nil || r.Backend("nope") != nil {
		t.Fatal("Backend by name")
	}
	b.status.Store(&Status{Healthy: true, Models: map[string]canon.DiscoveredModel{"m": {}}})
	b.adapter.Store(new(pluginhost.Plugin))
	for _, tc := range []struct {
		state string
		ok    bool
	}{{"enabled", true}, {"disabled", false}, {"draining", false}, {"enabled", true}} {
		if err := b.SetState(tc.state); err != nil {
			t.Fatal(err)
		}
		_, err := r.Pick("m")
		if b.State() != tc.state || b.Routable() != tc.ok || (err == nil) != tc.ok {
			t.Errorf("%s: state %s routable %v pick err %v", tc.state, b.State(), b.Routable(), err)
		}
	}
	if err := b.SetState("paused"); err == nil || b.State() != "enabled" {
		t.Errorf("unknown state accepted: %v %s", err, b.State())
	}
}

// An Ollama backend's context windows are bounded by its max_num_ctx
// (DefaultMaxNumCtx when unset), since each becomes the num_ctx of the
// model's requests; the published map is copied, not written; other
// engines keep the window discovery found.
func TestPublish_BoundsOllamaContext(t *testing.T) {
	models := func() map[string]canon.DiscoveredModel {
		return map[string]canon.DiscoveredModel{
			"big": {Name: "big", ContextLength: 131072}, "small": {Name: "small", ContextLength: 2048}, "unknown": {Name: "unknown"}}
	}
	for _, c := range []struct {
		engine     string
		maxNumCtx  int
		big, small int
	}{
		{"ollama", 0, DefaultMaxNumCtx, 2048},
		{"ollama", 65536, 65536, 2048},
		{"vllm", 0, 131072, 2048},
	} {
		b, err := newBackend(config.Backend{Name: "b", Engine: c.engine, URL: "http://127.0.0.1:1", MaxConcurrent: 1, MaxNumCtx: c.maxNumCtx}, config.Default().Timeouts)
		if err != nil {
			t.Fatal(err)
		}
		in := models()
		b.SetStatus(&Status{Models: in}, nil)
		got := b.Status().Models
		if got["big"].ContextLength != c.big || got["small"].ContextLength != c.small || got["unknown"].ContextLength != 0 {
			t.Errorf("%s max_num_ctx %d: %+v", c.engine, c.maxNumCtx, got)
		}
		if in["big"].ContextLength != 131072 {
			t.Errorf("%s: the caller's map was written", c.engine)
		}
	}
}
