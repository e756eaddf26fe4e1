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

// fail makes one attempt on b that fails (refused by an open breaker,
// it reports the zero ticket, which an open breaker ignores).
func fail(b *Backend) {
	t, _ := b.TryAttempt()
	b.ReportFailure(t)
}

// attempt claims an attempt on b and fails the test when refused.
func attempt(t *testing.T, b *Backend) Ticket {
	t.Helper()
	tk, ok := b.TryAttempt()
	if !ok {
		t.Fatalf("attempt refused (breaker %s)", b.BreakerState())
	}
	return tk
}

// allowed reports whether b's breaker lets an attempt through, claiming it.
func allowed(b *Backend) bool {
	_, ok := b.TryAttempt()
	return ok
}

func wantState(t *testing.T, b *Backend, want string) {
	t.Helper()
	if got := b.BreakerState(); got != want {
		t.Fatalf("breaker state = %q, want %q", got, want)
	}
}

func TestBreaker_OpensAfterConsecutiveFailures(t *testing.T) {
	b, _ := testBreaker()
	for range BreakerThreshold - 1 {
		b.ReportFailure(attempt(t, b))
	}
	wantState(t, b, "closed")
	b.ReportSuccess(attempt(t, b)) // resets the count: failures must be consecutive
	for range BreakerThreshold - 1 {
		fail(b)
	}
	wantState(t, b, "closed")
	fail(b)
	wantState(t, b, "open")
	if b.brk.allow() || allowed(b) {
		t.Fatal("an open breaker let a request through")
	}
}

func TestBreaker_HalfOpenLetsOneProbe(t *testing.T) {
	b, clk := testBreaker()
	for range BreakerThreshold {
		fail(b)
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
	probe := attempt(t, b)
	if allowed(b) || b.brk.allow() {
		t.Fatal("a second request went through while the probe is out")
	}
	b.ReportSuccess(probe)
	wantState(t, b, "closed")
	if !allowed(b) || !allowed(b) {
		t.Fatal("closed breaker refused requests")
	}
}

func TestBreaker_FailedProbeDoublesCooldown(t *testing.T) {
	b, clk := testBreaker()
	for range BreakerThreshold {
		fail(b)
	}
	want := BreakerCooldown
	for range 5 {
		clk.advance(want)
		probe, ok := b.TryAttempt()
		if !ok {
			t.Fatalf("no probe after a cool-down of %v", want)
		}
		b.ReportFailure(probe)
		wantState(t, b, "open")
		want = min(2*want, BreakerMaxCooldown)
		clk.advance(want - time.Millisecond)
		if allowed(b) {
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
	b.ReportSuccess(attempt(t, b))
	for range BreakerThreshold {
		fail(b)
	}
	clk.advance(BreakerCooldown)
	wantState(t, b, "half-open")
}

func TestBreaker_AbandonedProbeFreesTheSlot(t *testing.T) {
	b, clk := testBreaker()
	for range BreakerThreshold {
		fail(b)
	}
	clk.advance(BreakerCooldown)
	b.ReportAbandoned(attempt(t, b))
	wantState(t, b, "half-open")
	if !allowed(b) {
		t.Fatal("the abandoned probe's slot was not freed")
	}
	// A probe that never reports is freed after breakerProbeTimeout.
	clk.advance(breakerProbeTimeout)
	if !allowed(b) {
		t.Fatal("a lost probe blocks the breaker for ever")
	}
}

func TestBreaker_ConcurrentProbeIsSingle(t *testing.T) {
	b, clk := testBreaker()
	for range BreakerThreshold {
		fail(b)
	}
	clk.advance(BreakerCooldown)
	var wg sync.WaitGroup
	var mu sync.Mutex
	got := 0
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if allowed(b) {
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
		tk, _ := b.TryAttempt()
		b.ReportSuccess(tk)
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
		fail(b)
	}
	clk.advance(BreakerCooldown)
	for range 10 {
		_ = b.BreakerState()
		_ = b.brk.allow()
	}
	probe := attempt(t, b)
	b.ReportSuccess(probe)
	b.ReportSuccess(probe)
	if len(h.n) != 3 {
		t.Fatalf("log messages %v, want open, half-open and closed", h.n)
	}
	for msg, n := range h.n {
		if n != 1 {
			t.Fatalf("%q logged %d times", msg, n)
		}
	}
}

// Only the probe's answer moves a breaker that opened: a request admitted
// while it was closed, answering after it opened, neither closes it (a
// success: under a 50 % error rate the breaker closed again at once and
// flapped) nor re-opens it with a doubled cool-down (a failure while
// half-open), and a failure of a request admitted before an opening does
// not count against the breaker after the probe closed it.
func TestBreaker_OnlyTheProbeMovesAnOpenBreaker(t *testing.T) {
	b, clk := testBreaker()
	early := make([]Ticket, 4) // admitted while closed, answering late
	for i := range early {
		early[i] = attempt(t, b)
	}
	for range BreakerThreshold {
		fail(b)
	}
	wantState(t, b, "open")
	b.ReportSuccess(early[0])
	wantState(t, b, "open")
	clk.advance(BreakerCooldown)
	probe := attempt(t, b)
	b.ReportSuccess(early[1])
	wantState(t, b, "half-open")
	b.ReportFailure(early[2])
	wantState(t, b, "half-open")
	b.ReportAbandoned(early[3])
	if allowed(b) {
		t.Fatal("an old request's abandoned report freed the probe's place")
	}
	b.ReportSuccess(probe)
	wantState(t, b, "closed")
	// The early requests' failures, reported now, are old news.
	for range BreakerThreshold {
		b.ReportFailure(early[2])
	}
	wantState(t, b, "closed")
}

// ProbeDue: only an open breaker past its cool-down (half-open) with its
// probe not out; a claimed probe, an abandoned one and a close change it.
func TestBreaker_ProbeDue(t *testing.T) {
	b, clk := testBreaker()
	if b.ProbeDue() {
		t.Fatal("a closed breaker's probe is due")
	}
	for range BreakerThreshold {
		fail(b)
	}
	if b.ProbeDue() {
		t.Fatal("probe due before the cool-down passed")
	}
	clk.advance(BreakerCooldown)
	if !b.ProbeDue() {
		t.Fatalf("probe not due after the cool-down (breaker %s)", b.BreakerState())
	}
	probe := attempt(t, b)
	if b.ProbeDue() {
		t.Fatal("probe due while it is out")
	}
	b.ReportAbandoned(probe)
	if !b.ProbeDue() {
		t.Fatal("an abandoned probe is not due again")
	}
	b.ReportSuccess(attempt(t, b))
	if b.ProbeDue() || b.BreakerState() != "closed" {
		t.Fatalf("after the probe's success: due %v, breaker %s", b.ProbeDue(), b.BreakerState())
	}
}
