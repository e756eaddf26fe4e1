package backend

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/core/apierr"
	"github.com/mindrouter/mindrouter/core/pluginhost"
	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// probeAdapter is a vllm-format adapter with one probe, GET /v1/models,
// that reports model "m" and health from the probe's HTTP status.
type probeAdapter struct{ sdk.Unimplemented }

func (probeAdapter) DecodeProbe(c *sdk.Call, _ string, _ []byte, d *canon.Discovery) error {
	ok := c.Meta("status") == "200"
	d.Healthy = &ok
	if ok {
		d.Models = []canon.DiscoveredModel{{Name: "m", ContextLength: 8192}}
	}
	return nil
}

func testDiscoverer(t *testing.T, b *Backend) *Discoverer {
	t.Helper()
	ad := pluginhost.NewNativePlugin("vllm", func() *sdk.Plugin {
		return sdk.NewAdapter(sdk.Manifest{Name: "vllm", Format: "vllm",
			Probes: []sdk.Probe{{Name: "models", Method: "GET", Path: "/v1/models"}}}, probeAdapter{})
	})
	reg := registryOf(b)
	return newDiscoverer(reg, func() []*pluginhost.Plugin { return []*pluginhost.Plugin{ad} },
		2*time.Second, slog.New(slog.DiscardHandler))
}

func checkHealthy(t *testing.T, b *Backend, when string) {
	t.Helper()
	st := b.Status()
	if !st.Healthy || st.Failures != 0 || !st.Serves("m") {
		t.Fatalf("%s: status %+v", when, st)
	}
}

// A probe that lands on a stale pooled connection (the backend restarted,
// or closed the idle connection) is retried on a fresh connection and
// never marks the backend unhealthy.
func TestDiscovery_StaleConnectionIsNotAFailure(t *testing.T) {
	t.Run("restart", func(t *testing.T) {
		hb := startHTTPBackend(t, "127.0.0.1:0", time.Minute, 30*time.Millisecond)
		b := backendAt(t, "http://"+hb.addr, "10s")
		d := testDiscoverer(t, b)
		d.Round(context.Background())
		checkHealthy(t, b, "first round")
		// Pool more dead connections than fasthttp's default attempts (5).
		fill(t, b, 8, false)
		_ = hb.srv.Close()
		hb2 := startHTTPBackend(t, hb.addr, time.Minute, 0)
		d.Round(context.Background())
		checkHealthy(t, b, "round after restart")
		if hb2.requests.Load() != 1 {
			t.Fatalf("restarted backend saw %d probes", hb2.requests.Load())
		}
	})
	t.Run("idle close", func(t *testing.T) {
		hb := startHTTPBackend(t, "127.0.0.1:0", 50*time.Millisecond, 0)
		b := backendAt(t, "http://"+hb.addr, "10s")
		d := testDiscoverer(t, b)
		for i := 0; i < 3; i++ {
			if i > 0 {
				waitFor(t, func() bool { return hb.closed.Load() == int64(i) })
			}
			d.Round(context.Background())
			checkHealthy(t, b, "round")
		}
	})
}

// A backend that is really down still fails its probe (once: a refused
// dial is not retried), keeps its last known models (503, not 404) and
// leaves /v1/models; it comes back on the next good round.
func TestDiscovery_DownBackend(t *testing.T) {
	hb := startHTTPBackend(t, "127.0.0.1:0", time.Minute, 0)
	b := backendAt(t, "http://"+hb.addr, "10s")
	d := testDiscoverer(t, b)
	d.Round(context.Background())
	checkHealthy(t, b, "first round")
	_ = hb.srv.Close()
	d.Round(context.Background())
	st := b.Status()
	if st.Healthy || st.Failures != 1 || !st.Serves("m") || st.Err == "" {
		t.Fatalf("down: status %+v", st)
	}
	var ae *apierr.Error
	if _, err := d.reg.Pick("m"); !errors.As(err, &ae) || ae.Status != 503 {
		t.Fatalf("Pick while down: %v", err)
	}
	if l := d.reg.Models(); len(l.Models) != 0 || d.reg.Serving() {
		t.Fatalf("down backend listed: %+v serving=%v", l.Models, d.reg.Serving())
	}
	startHTTPBackend(t, hb.addr, time.Minute, 0)
	d.Round(context.Background())
	checkHealthy(t, b, "back up")
	if l := d.reg.Models(); len(l.Models) != 1 || l.Models[0].ContextLength != 8192 || !d.reg.Serving() {
		t.Fatalf("models back up: %+v", l.Models)
	}
}
