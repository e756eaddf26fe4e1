package backend

import (
	"math"
	"sync"
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/sdk/canon"
)

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

func TestBackend_ObserveLatency(t *testing.T) {
	b := testRegistry(t).Backends()[0]
	if tel := b.Telemetry(); tel != (Telemetry{}) {
		t.Fatalf("before any observation: %+v", tel)
	}
	b.ObserveLatency(2 * time.Second) // first observation: taken as is
	if got := b.Telemetry().Latency; got != 2*time.Second {
		t.Fatalf("after one observation: %v", got)
	}
	b.ObserveLatency(4 * time.Second) // 2 + 0.3·(4−2) = 2.6
	if got := b.Telemetry().Latency.Seconds(); !near(got, 2.6) {
		t.Fatalf("after two observations: %v s, want 2.6", got)
	}
	b.ObserveLatency(0) // ignored, as is anything not positive
	b.ObserveLatency(-time.Second)
	if got := b.Telemetry().Latency.Seconds(); !near(got, 2.6) {
		t.Fatalf("non-positive durations changed the average: %v s", got)
	}
	if tel := b.Telemetry(); tel.TTFB != 0 || tel.TokensPerSec != 0 {
		t.Fatalf("latency leaked into other averages: %+v", tel)
	}
}

func TestBackend_ObserveTTFB(t *testing.T) {
	b := testRegistry(t).Backends()[0]
	want := 0.0
	for i, ms := range []float64{100, 300, 300, 50} {
		b.ObserveTTFB(time.Duration(ms * float64(time.Millisecond)))
		if i == 0 {
			want = ms / 1000
		} else {
			want += EMAAlpha * (ms/1000 - want)
		}
		if got := b.Telemetry().TTFB.Seconds(); math.Abs(got-want) > 1e-9 {
			t.Fatalf("after %d observations: %v s, want %v s", i+1, got, want)
		}
	}
	if b.Telemetry().Latency != 0 {
		t.Fatal("TTFB leaked into Latency")
	}
}

func TestBackend_ObserveTokens(t *testing.T) {
	b := testRegistry(t).Backends()[0]
	b.ObserveTokens(100, 2*time.Second) // 50 tok/s
	if got := b.Telemetry().TokensPerSec; !near(got, 50) {
		t.Fatalf("first: %v tok/s", got)
	}
	b.ObserveTokens(0, time.Second) // no tokens, no duration: no information
	b.ObserveTokens(10, 0)
	b.ObserveTokens(-5, time.Second)
	if got := b.Telemetry().TokensPerSec; !near(got, 50) {
		t.Fatalf("ignored observations changed the average: %v", got)
	}
	b.ObserveTokens(300, 2*time.Second) // 150 tok/s: 50 + 0.3·100 = 80
	if got := b.Telemetry().TokensPerSec; !near(got, 80) {
		t.Fatalf("second: %v tok/s, want 80", got)
	}
}

// The average converges on a new steady value: within 1 % after 13
// observations at α = 0.3 (0.7¹³ < 0.01).
func TestEMA_Converges(t *testing.T) {
	var e ema
	e.observe(10)
	for range 13 {
		e.observe(1)
	}
	if v := e.value(); v < 1 || v > 1+0.01*9 {
		t.Fatalf("after 13 observations of 1 from 10: %v", v)
	}
	e.observe(math.NaN())
	e.observe(math.Inf(1))
	if v := e.value(); math.IsNaN(v) || math.IsInf(v, 0) || v > 1.09 {
		t.Fatalf("NaN or Inf observed: %v", v)
	}
}

// Concurrent observers lose no update: the CAS loop retries. With every
// observation equal, the average is exactly that value; with two values
// it stays between them.
func TestEMA_Concurrent(t *testing.T) {
	b := testRegistry(t).Backends()[0]
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 1000 {
				b.ObserveLatency(time.Second)
				b.ObserveTokens(10+10*(g%2), time.Second) // 10 or 20 tok/s
			}
		}()
	}
	wg.Wait()
	tel := b.Telemetry()
	if tel.Latency != time.Second {
		t.Fatalf("latency %v, want 1s", tel.Latency)
	}
	if tel.TokensPerSec < 10 || tel.TokensPerSec > 20 {
		t.Fatalf("tokens/s %v outside [10, 20]", tel.TokensPerSec)
	}
}

func TestBackend_SetPriority(t *testing.T) {
	b := testRegistry(t).Backends()[0]
	if b.Priority() != 0 {
		t.Fatalf("default priority %d", b.Priority())
	}
	b.SetPriority(7)
	if b.Priority() != 7 {
		t.Fatalf("priority %d, want 7", b.Priority())
	}
}

func TestBackend_MarkLoaded(t *testing.T) {
	r := newTestRegistry(t, `backends:
  - {name: o, engine: ollama, url: "http://127.0.0.1:1", max_concurrent: 2}
`)
	o := r.Backends()[0]
	o.SetStatus(&Status{Healthy: true, Models: map[string]canon.DiscoveredModel{
		"llama3:latest": {Name: "llama3:latest", SizeBytes: 5 << 30},
		"qwen3":         {Name: "qwen3"},
	}}, testAdapter())
	before := o.Status()
	o.MarkLoaded("nope") // unknown: nothing to mark
	if o.Status() != before {
		t.Fatal("unknown model changed the status")
	}
	o.MarkLoaded("llama3") // the alias finds llama3:latest
	st := o.Status()
	if m, _ := st.Model("llama3"); !m.Loaded || m.SizeBytes != 5<<30 || !st.Healthy || !st.Serves("llama3") {
		t.Fatalf("after MarkLoaded: %+v", st)
	}
	if before.Models["llama3:latest"].Loaded {
		t.Fatal("the published status was changed in place")
	}
	if m, _ := st.Model("qwen3"); m.Loaded {
		t.Fatal("another model marked")
	}
	o.MarkLoaded("llama3:latest") // already: no new status
	if o.Status() != st {
		t.Fatal("marking a loaded model published a new status")
	}
}
