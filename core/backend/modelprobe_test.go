package backend

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/core/pluginhost"
	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// showBackend lists its models on GET /models and describes one on
// POST /show ({"model": name}), counting the /show requests per model.
type showBackend struct {
	mu    sync.Mutex
	sizes map[string]int64 // the listed models and their sizes
	shown map[string]int   // /show requests per model
	fail  map[string]int   // model → status /show answers (0: 200)
	bad   []string         // /show bodies that were not {"model": <listed name>}
}

func newShowBackend(t *testing.T, names ...string) (*showBackend, string) {
	sb := &showBackend{sizes: map[string]int64{}, shown: map[string]int{}, fail: map[string]int{}}
	for _, n := range names {
		sb.sizes[n] = 100
	}
	srv := httptest.NewServer(http.HandlerFunc(sb.serve))
	t.Cleanup(srv.Close)
	return sb, srv.URL
}

func (sb *showBackend) serve(w http.ResponseWriter, r *http.Request) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	switch r.URL.Path {
	case "/models":
		var list []canon.DiscoveredModel
		for n, size := range sb.sizes {
			// The list has a window for "a" (as /api/ps has the loaded
			// one); /show has every model's own.
			m := canon.DiscoveredModel{Name: n, SizeBytes: size, Capabilities: []string{"listed"}}
			if n == "a" {
				m.ContextLength = 8192
			}
			list = append(list, m)
		}
		_ = json.NewEncoder(w).Encode(list)
	case "/show":
		body, _ := io.ReadAll(r.Body)
		var req struct{ Model string }
		if err := json.Unmarshal(body, &req); err != nil || r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" {
			sb.bad = append(sb.bad, string(body))
		}
		if _, ok := sb.sizes[req.Model]; !ok {
			sb.bad = append(sb.bad, string(body))
		}
		sb.shown[req.Model]++
		if code := sb.fail[req.Model]; code != 0 {
			w.WriteHeader(code)
			return
		}
		caps := []string{canon.CapCompletion, canon.CapTools}
		if strings.Contains(req.Model, "vis") {
			caps = []string{canon.CapVision, canon.CapCompletion}
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"caps": caps, "ctx": 4096, "family": "fam"})
	default:
		w.WriteHeader(http.StatusNotFound)
	}
}

func (sb *showBackend) counts() map[string]int {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	if len(sb.bad) > 0 {
		panic(fmt.Sprintf("bad /show requests: %q", sb.bad))
	}
	return maps.Clone(sb.shown)
}

// showAdapter decodes showBackend's answers; a /show body of "junk"
// (status 418) is an adapter error.
type showAdapter struct{ sdk.Unimplemented }

func (showAdapter) DecodeProbe(c *sdk.Call, probe string, body []byte, d *canon.Discovery) error {
	switch probe {
	case "models":
		ok := true
		d.Healthy = &ok
		return json.Unmarshal(body, &d.Models)
	case "show":
		if c.Meta("status") == "418" {
			return sdk.BadInput("cannot read /show")
		}
		var v struct {
			Caps   []string
			Ctx    int
			Family string
		}
		if err := json.Unmarshal(body, &v); err != nil {
			return sdk.BadInput(err.Error())
		}
		d.Models = []canon.DiscoveredModel{{Name: c.Meta("model"), Capabilities: v.Caps, ContextLength: v.Ctx, Family: v.Family}}
		return nil
	}
	return sdk.BadInput("unknown probe " + probe)
}

func showDiscoverer(t *testing.T, url string) (*Discoverer, *Backend) {
	t.Helper()
	b := backendAt(t, url, "10s")
	ad := pluginhost.NewNativePlugin("vllm", func() *sdk.Plugin {
		return sdk.NewAdapter(sdk.Manifest{Name: "vllm", Format: "vllm", Probes: []sdk.Probe{
			{Name: "models", Method: "GET", Path: "/models"},
			{Name: "show", Method: "POST", Path: "/show", Body: `{"model":{{model}}}`, PerModel: true},
		}}, showAdapter{})
	})
	reg := registryOf(b)
	return newDiscoverer(reg, func() []*pluginhost.Plugin { return []*pluginhost.Plugin{ad} },
		5*time.Second, slog.New(slog.DiscardHandler)), b
}

func rounds(d *Discoverer, n int) {
	for range n {
		d.Round(context.Background())
	}
}

// A per-model probe runs once per model (its name JSON-quoted into the
// body), its answer is merged into the model's entry (capabilities
// and the context window replace the list's: the per-model answer is the
// model's own, the list's may be a load's, as Ollama's /api/ps) and kept:
// the model is probed again when its size changes or the answer is
// modelProbeEvery rounds old.
func TestModelProbe_OncePerModelCachedAndMerged(t *testing.T) {
	weird := `we"ird\név`
	sb, url := newShowBackend(t, "a", "vis-1", weird)
	d, b := showDiscoverer(t, url)
	rounds(d, 1)
	want := map[string]int{"a": 1, "vis-1": 1, weird: 1}
	if got := sb.counts(); !maps.Equal(got, want) {
		t.Fatalf("after one round /show counts %v, want %v", got, want)
	}
	st := b.Status()
	if !st.Healthy {
		t.Fatalf("unhealthy: %s", st.Err)
	}
	a, vis := st.Models["a"], st.Models["vis-1"]
	if !slices.Equal(a.Capabilities, []string{"completion", "tools"}) || a.ContextLength != 4096 || a.Family != "fam" {
		t.Errorf("a: %+v", a)
	}
	if !slices.Equal(vis.Capabilities, []string{"completion", "vision"}) || vis.ContextLength != 4096 {
		t.Errorf("vis-1: %+v (capabilities sorted, context from /show)", vis)
	}
	rounds(d, 5)
	if got := sb.counts(); !maps.Equal(got, want) {
		t.Fatalf("cached: /show counts %v, want %v", got, want)
	}
	if m := b.Status().Models["vis-1"]; !slices.Contains(m.Capabilities, canon.CapVision) {
		t.Fatalf("cached answer not merged: %+v", m)
	}
	sb.mu.Lock()
	sb.sizes["a"] = 200 // pulled again
	sb.mu.Unlock()
	rounds(d, 1)
	want["a"]++
	if got := sb.counts(); !maps.Equal(got, want) {
		t.Fatalf("after a changed: /show counts %v, want %v", got, want)
	}
	rounds(d, modelProbeEvery) // every answer gets old once
	if got := sb.counts(); got["vis-1"] != 2 || got[weird] != 2 || got["a"] != 3 {
		t.Fatalf("after %d more rounds: /show counts %v", modelProbeEvery, got)
	}
}

// A backend with many models is covered over several rounds, at most
// modelProbesPerRound per-model probes each.
func TestModelProbe_BoundPerRound(t *testing.T) {
	var names []string
	for i := range 40 {
		names = append(names, fmt.Sprintf("m%02d", i))
	}
	sb, url := newShowBackend(t, names...)
	d, b := showDiscoverer(t, url)
	for r, wantTotal := range []int{16, 32, 40, 40} {
		rounds(d, 1)
		total := 0
		for n, c := range sb.counts() {
			if c != 1 {
				t.Fatalf("round %d: %s probed %d times", r+1, n, c)
			}
			total += c
		}
		if total != wantTotal {
			t.Fatalf("round %d: %d models probed, want %d", r+1, total, wantTotal)
		}
	}
	for _, n := range names {
		if m := b.Status().Models[n]; !slices.Equal(m.Capabilities, []string{"completion", "tools"}) {
			t.Fatalf("%s: %+v", n, m)
		}
	}
}

// A failing per-model probe (a 5xx, an answer the adapter cannot read)
// leaves the backend healthy and the other models' answers in place; the
// model keeps the list's own entry and is retried modelProbeRetry rounds
// later.
func TestModelProbe_FailureIsolated(t *testing.T) {
	sb, url := newShowBackend(t, "a", "broken", "junk", "vis-2")
	sb.fail["broken"], sb.fail["junk"] = http.StatusInternalServerError, http.StatusTeapot
	d, b := showDiscoverer(t, url)
	rounds(d, 1)
	st := b.Status()
	if !st.Healthy || st.Failures != 0 {
		t.Fatalf("status %+v", st)
	}
	for _, n := range []string{"broken", "junk"} {
		if m := st.Models[n]; !slices.Equal(m.Capabilities, []string{"listed"}) || m.ContextLength != 0 {
			t.Errorf("%s: %+v, want the list's entry", n, m)
		}
	}
	if m := st.Models["vis-2"]; !slices.Contains(m.Capabilities, canon.CapVision) {
		t.Errorf("vis-2: %+v", m)
	}
	rounds(d, modelProbeRetry-1)
	if got := sb.counts(); got["broken"] != 1 || got["junk"] != 1 {
		t.Fatalf("retried too soon: %v", got)
	}
	sb.mu.Lock()
	delete(sb.fail, "broken")
	sb.mu.Unlock()
	rounds(d, 1)
	got := sb.counts()
	if got["broken"] != 2 || got["junk"] != 2 || got["a"] != 1 {
		t.Fatalf("retry: %v", got)
	}
	if m := b.Status().Models["broken"]; !slices.Equal(m.Capabilities, []string{"completion", "tools"}) {
		t.Fatalf("broken after retry: %+v", m)
	}
}
