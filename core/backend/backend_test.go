package backend

import (
	"errors"
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
	cfg, err := config.Parse([]byte(`backends:
  - {name: a, engine: vllm, url: "http://127.0.0.1:1", max_concurrent: 2}
  - {name: b, engine: vllm, url: "http://127.0.0.1:2/", max_concurrent: 4}
`), ".")
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewRegistry(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ad := pluginhost.NewNativePlugin("vllm", func() *sdk.Plugin {
		return sdk.NewAdapter(sdk.Manifest{Name: "vllm", Format: "vllm"}, sdk.Unimplemented{})
	})
	for _, b := range r.Backends() {
		b.adapter.Store(ad)
	}
	return r
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
	a, b := r.byName["a"], r.byName["b"]
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
	a := r.byName["a"]
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
	setStatus(r.byName["a"], true, "z", "m")
	setStatus(r.byName["b"], false, "m", "a")
	list := r.Models()
	if len(list.Models) != 3 || list.Models[0].ID != "a" || list.Models[2].ID != "z" || list.Models[1].ContextLength != 4096 {
		t.Fatalf("models = %+v", list.Models)
	}
}
