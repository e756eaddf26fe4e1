package backend

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/core/config"
	"github.com/mindrouter/mindrouter/core/pluginhost"
	"github.com/mindrouter/mindrouter/sdk"
)

// registryOf is a Registry holding bs (tests of this package that build
// their backends by hand).
func registryOf(bs ...*Backend) *Registry {
	r := &Registry{}
	sn := &regSnap{list: bs, byName: map[string]*Backend{}}
	for _, b := range bs {
		sn.byName[b.Name] = b
	}
	r.snap.Store(sn)
	return r
}

func names(bs []*Backend) []string {
	var out []string
	for _, b := range bs {
		out = append(out, b.Name)
	}
	return out
}

func bcfg(name, url string, maxConc int) config.Backend {
	return config.Backend{Name: name, Engine: "vllm", URL: url, MaxConcurrent: maxConc,
		IdleConnTimeout: config.Duration(DefaultIdleConnTimeout)}
}

// Put adds, keeps an unchanged backend as it is, and replaces a changed
// one in place: the old one is removed (unroutable) while its in-flight
// request finishes on its own slots; a snapshot taken before is unchanged.
func TestRegistry_PutAndRemove(t *testing.T) {
	r := testRegistry(t)
	a := r.Backend("a")
	setStatus(a, true, "m")
	a.SetPriority(7)
	before := r.Backends()

	c, changed, err := r.Put(bcfg("c", "http://127.0.0.1:3", 1))
	if err != nil || !changed || r.Backend("c") != c {
		t.Fatalf("put c: %v changed=%v", err, changed)
	}
	if got := names(r.Backends()); len(got) != 3 || got[2] != "c" {
		t.Fatalf("backends %v", got)
	}
	if len(before) != 2 {
		t.Fatalf("an earlier snapshot changed: %v", names(before))
	}
	if c.Routable() {
		t.Fatal("a backend never probed is routable")
	}

	same, changed, err := r.Put(a.cfg)
	if err != nil || changed || same != a {
		t.Fatalf("unchanged put: %v changed=%v same=%v", err, changed, same == a)
	}

	if !a.TryAcquire() { // a request in flight on a
		t.Fatal("no slot")
	}
	nc := a.cfg
	nc.MaxConcurrent = 5
	a2, changed, err := r.Put(nc)
	if err != nil || !changed || a2 == a || r.Backend("a") != a2 {
		t.Fatalf("replace a: %v changed=%v", err, changed)
	}
	if got := names(r.Backends()); got[0] != "a" || len(got) != 3 {
		t.Fatalf("backends after replace %v", got)
	}
	if !a.Removed() || a.Routable() {
		t.Fatal("the replaced backend still takes requests")
	}
	if !a2.Routable() || a2.Capacity() != 5 || a2.Priority() != 7 || !a2.Status().Serves("m") {
		t.Fatalf("the replacement: routable=%v cap=%d prio=%d", a2.Routable(), a2.Capacity(), a2.Priority())
	}
	a.Release() // the in-flight request finishes on the old backend's slots
	if a.InFlight() != 0 || a2.InFlight() != 0 {
		t.Fatalf("in flight: old %d new %d", a.InFlight(), a2.InFlight())
	}

	nc.URL = "http://127.0.0.1:9"
	a3, _, err := r.Put(nc)
	if err != nil || a3.Routable() || a3.Status().Serves("m") {
		t.Fatalf("a new URL kept the old discovery: %v", err)
	}

	if !r.Remove("a") || r.Remove("a") {
		t.Fatal("remove: want true then false")
	}
	if r.Backend("a") != nil || !a3.Removed() || a3.Routable() {
		t.Fatal("a removed backend is still found or routable")
	}
	if got := names(r.Backends()); len(got) != 2 || got[0] != "b" || got[1] != "c" {
		t.Fatalf("backends after remove %v", got)
	}
	if _, _, err := r.Put(config.Backend{Name: "bad", URL: "http://[::1"}); err == nil {
		t.Fatal("a bad URL was registered")
	}
}

// A duplicate name in the configuration is refused.
func TestNewRegistry_DuplicateName(t *testing.T) {
	cfg := config.Default()
	cfg.Backends = []config.Backend{bcfg("a", "http://127.0.0.1:1", 1), bcfg("a", "http://127.0.0.1:2", 1)}
	if _, err := NewRegistry(cfg); !errors.Is(err, ErrDuplicateBackend) {
		t.Fatalf("err %v", err)
	}
}

// Readers iterate snapshots while writers add, replace and remove; run
// with -race.
func TestRegistry_ConcurrentChanges(t *testing.T) {
	r := testRegistry(t)
	ad := testAdapter()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				for _, b := range r.Backends() {
					_ = b.Routable()
					if b.TryAcquire() {
						b.Release()
					}
				}
				_ = r.Backend("x")
				_ = r.Models()
			}
		}()
	}
	for i := range 300 {
		b, _, err := r.Put(bcfg("x", "http://127.0.0.1:1", 1+i%3))
		if err != nil {
			t.Fatal(err)
		}
		b.SetStatus(&Status{Healthy: true}, ad)
		if i%4 == 0 {
			r.Remove("x")
		}
	}
	close(stop)
	wg.Wait()
}

// The config's breaker section reaches every backend, those added later
// included: failures within the window open it, a failure past the
// window starts a new count, and a short cool-down lets a probe through.
func TestRegistry_BreakerSettings(t *testing.T) {
	cfg := config.Default()
	cfg.Breaker = config.Breaker{Failures: 2, Window: config.Duration(time.Second), Cooldown: config.Duration(time.Second)}
	cfg.Backends = []config.Backend{bcfg("a", "http://127.0.0.1:1", 1)}
	r, err := NewRegistry(cfg)
	if err != nil {
		t.Fatal(err)
	}
	added, _, err := r.Put(bcfg("late", "http://127.0.0.1:2", 1))
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range []*Backend{r.Backend("a"), added} {
		clk := &fakeClock{t: time.Unix(1_700_000_000, 0)}
		b.brk.now = clk.now
		b.brk.log = slog.New(slog.DiscardHandler)
		fail(b)
		clk.advance(1500 * time.Millisecond) // past the window: this failure starts over
		fail(b)
		wantState(t, b, "closed")
		fail(b) // two within the window
		wantState(t, b, "open")
		clk.advance(999 * time.Millisecond)
		if allowed(b) {
			t.Fatalf("%s: a probe before the cool-down", b.Name)
		}
		clk.advance(time.Millisecond)
		probe, ok := b.TryAttempt()
		if !ok {
			t.Fatalf("%s: no probe after the 1s cool-down", b.Name)
		}
		b.ReportSuccess(probe)
		wantState(t, b, "closed")
	}
}

// Probe makes a backend added at run time routable at once, and says
// what is wrong with one that is down.
func TestDiscoverer_ProbeAddedBackend(t *testing.T) {
	hb := startHTTPBackend(t, "127.0.0.1:0", time.Minute, 0)
	r := testRegistry(t)
	ad := pluginhost.NewNativePlugin("vllm", func() *sdk.Plugin {
		return sdk.NewAdapter(sdk.Manifest{Name: "vllm", Format: "vllm",
			Probes: []sdk.Probe{{Name: "models", Method: "GET", Path: "/v1/models"}}}, probeAdapter{})
	})
	d := newDiscoverer(r, func() []*pluginhost.Plugin { return []*pluginhost.Plugin{ad} }, 2*time.Second, slog.New(slog.DiscardHandler))
	kicks := 0
	d.AfterRound = func() { kicks++ }
	b, _, err := r.Put(bcfg("new", "http://"+hb.addr, 2))
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Probe(context.Background(), "new"); err != nil || !b.Routable() || kicks != 1 {
		t.Fatalf("probe: %v routable=%v kicks=%d", err, b.Routable(), kicks)
	}
	if _, err := r.Pick("m"); err != nil {
		t.Fatalf("pick after the probe: %v", err)
	}
	if err := d.Probe(context.Background(), "gone"); !errors.Is(err, ErrUnknownBackend) {
		t.Fatalf("probe of an unknown backend: %v", err)
	}
	if _, _, err := r.Put(bcfg("down", "http://127.0.0.1:1", 1)); err != nil {
		t.Fatal(err)
	}
	if err := d.Probe(context.Background(), "down"); err == nil {
		t.Fatal("a down backend probed fine")
	}
}
