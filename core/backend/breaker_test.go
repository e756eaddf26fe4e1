package backend

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"
)

// fakeClock is a settable clock for the breaker's cool-downs.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func testBreaker() (*Backend, *fakeClock) {
	clk := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	b := &Backend{Name: "b1"}
	b.brk.name, b.brk.now = "b1", clk.now
	b.brk.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	return b, clk
}

func wantState(t *testing.T, b *Backend, want string) {
	t.Helper()
	if got := b.BreakerState(); got != want {
		t.Fatalf("breaker state = %q, want %q", got, want)
	}
}

func TestBreaker_OpensAfterConsecutiveFailures(t *testing.T) {
	b, _ := testBreaker()
	for i := range BreakerThreshold - 1 {
		if !b.TryAttempt() {
			t.Fatalf("attempt %d refused while closed", i)
		}
		b.ReportFailure()
	}
	wantState(t, b, "closed")
	b.ReportSuccess() // resets the count: failures must be consecutive
	for range BreakerThreshold - 1 {
		b.ReportFailure()
	}
	wantState(t, b, "closed")
	b.ReportFailure()
	wantState(t, b, "open")
	if b.brk.allow() || b.TryAttempt() {
		t.Fatal("an open breaker let a request through")
	}
}

func TestBreaker_HalfOpenLetsOneProbe(t *testing.T) {
	b, clk := testBreaker()
	for range BreakerThreshold {
		b.ReportFailure()
	}
	clk.advance(BreakerCooldown - time.Millisecond)
	if b.brk.allow() {
		t.Fatal("routable before the cool-down passed")
	}
	clk.advance(time.Millisecond)
	wantState(t, b, "half-open")
	if !b.brk.allow() {
		t.Fatal("half-open breaker not routable before its probe")
	}
	if !b.TryAttempt() {
		t.Fatal("the probe was refused")
	}
	if b.TryAttempt() || b.brk.allow() {
		t.Fatal("a second request went through while the probe is out")
	}
	b.ReportSuccess()
	wantState(t, b, "closed")
	if !b.TryAttempt() || !b.TryAttempt() {
		t.Fatal("closed breaker refused requests")
	}
}

func TestBreaker_FailedProbeDoublesCooldown(t *testing.T) {
	b, clk := testBreaker()
	for range BreakerThreshold {
		b.ReportFailure()
	}
	want := BreakerCooldown
	for range 5 {
		clk.advance(want)
		if !b.TryAttempt() {
			t.Fatalf("no probe after a cool-down of %v", want)
		}
		b.ReportFailure()
		wantState(t, b, "open")
		want = min(2*want, BreakerMaxCooldown)
		clk.advance(want - time.Millisecond)
		if b.TryAttempt() {
			t.Fatalf("probe before the doubled cool-down %v passed", want)
		}
		clk.advance(time.Millisecond)
		wantState(t, b, "half-open")
		clk.advance(-want) // back to the failure's time for the next round
	}
	if want != BreakerMaxCooldown {
		t.Fatalf("cool-down %v did not reach its ceiling", want)
	}
	// A success resets the cool-down to the base.
	clk.advance(want)
	if !b.TryAttempt() {
		t.Fatal("no probe")
	}
	b.ReportSuccess()
	for range BreakerThreshold {
		b.ReportFailure()
	}
	clk.advance(BreakerCooldown)
	wantState(t, b, "half-open")
}

func TestBreaker_AbandonedProbeFreesTheSlot(t *testing.T) {
	b, clk := testBreaker()
	for range BreakerThreshold {
		b.ReportFailure()
	}
	clk.advance(BreakerCooldown)
	if !b.TryAttempt() {
		t.Fatal("no probe")
	}
	b.ReportAbandoned()
	wantState(t, b, "half-open")
	if !b.TryAttempt() {
		t.Fatal("the abandoned probe's slot was not freed")
	}
	// A probe that never reports is freed after breakerProbeTimeout.
	clk.advance(breakerProbeTimeout)
	if !b.TryAttempt() {
		t.Fatal("a lost probe blocks the breaker for ever")
	}
}

func TestBreaker_ConcurrentProbeIsSingle(t *testing.T) {
	b, clk := testBreaker()
	for range BreakerThreshold {
		b.ReportFailure()
	}
	clk.advance(BreakerCooldown)
	var wg sync.WaitGroup
	var mu sync.Mutex
	got := 0
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if b.TryAttempt() {
				mu.Lock()
				got++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if got != 1 {
		t.Fatalf("%d probes went through a half-open breaker, want 1", got)
	}
}

func TestBreaker_ClosedPathAllocs(t *testing.T) {
	b, _ := testBreaker()
	if n := testing.AllocsPerRun(1000, func() {
		_ = b.brk.allow()
		_ = b.TryAttempt()
		b.ReportSuccess()
	}); n != 0 {
		t.Fatalf("the closed breaker allocates %v times per request", n)
	}
}

// countHandler counts log records by message.
type countHandler struct {
	mu sync.Mutex
	n  map[string]int
}

func (h *countHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *countHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	h.n[r.Message]++
	h.mu.Unlock()
	return nil
}
func (h *countHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *countHandler) WithGroup(string) slog.Handler      { return h }

// Each state change is logged once, however often the state is read.
func TestBreaker_LogsEachChangeOnce(t *testing.T) {
	b, clk := testBreaker()
	h := &countHandler{n: map[string]int{}}
	r := registryOf(b)
	r.SetBreakerLogger(slog.New(h))
	for range 3 * BreakerThreshold {
		b.ReportFailure()
	}
	clk.advance(BreakerCooldown)
	for range 10 {
		_ = b.BreakerState()
		_ = b.brk.allow()
	}
	if !b.TryAttempt() {
		t.Fatal("no probe")
	}
	b.ReportSuccess()
	b.ReportSuccess()
	if len(h.n) != 3 {
		t.Fatalf("log messages %v, want open, half-open and closed", h.n)
	}
	for msg, n := range h.n {
		if n != 1 {
			t.Fatalf("%q logged %d times", msg, n)
		}
	}
}
