package sched

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/core/backend"
	"github.com/mindrouter/mindrouter/core/config"
	"github.com/mindrouter/mindrouter/core/internal/testsvc"
)

// probeRegistry is registry with a breaker cool-down of 1 ms (below what
// the config accepts), so that a test opens a breaker and finds its probe
// due without a fake clock.
func probeRegistry(t testing.TB, caps ...int) (*backend.Registry, []*backend.Backend) {
	t.Helper()
	y := "backends:\n"
	for i, c := range caps {
		y += fmt.Sprintf("  - {name: %c, engine: vllm, url: \"http://127.0.0.1:%d\", max_concurrent: %d}\n", 'a'+i, i+1, c)
	}
	cfg, err := config.Parse([]byte(y), ".")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Breaker.Cooldown = config.Duration(time.Millisecond)
	reg, err := backend.NewRegistry(cfg)
	if err != nil {
		t.Fatal(err)
	}
	reg.SetBreakerLogger(slog.New(slog.DiscardHandler))
	for _, b := range reg.Backends() {
		set(b, true, testAdapter, "m")
	}
	return reg, reg.Backends()
}

// openUntilProbe opens b's breaker (its threshold of failures) and waits
// for the cool-down to pass: its half-open probe is due.
func openUntilProbe(t *testing.T, b *backend.Backend) {
	t.Helper()
	for range backend.BreakerThreshold {
		tk, _ := b.TryAttempt()
		b.ReportFailure(tk)
	}
	if b.BreakerState() == "closed" {
		t.Fatal("the breaker did not open")
	}
	waitFor(t, "the breaker's probe to be due", b.ProbeDue)
}

// A backend whose breaker waits for its probe gets the next request,
// ahead of less loaded backends (issue 19: a restored backend waited 40-60
// s for a probe the placement gave it only when the others were full);
// once the probe is out it gets nothing more, and a request that tried it
// is not sent back.
func TestFair_ProbeDueBackendFirst(t *testing.T) {
	reg, bs := probeRegistry(t, 4, 4, 4)
	a, c := bs[0], bs[2]
	f := NewFair(FairOptions{Registry: reg, MaxWait: time.Minute})
	ctx := context.Background()
	if !c.TryAcquire() { // c busier than a and b: least loaded puts it last
		t.Fatal("no slot")
	}
	defer c.Release()
	openUntilProbe(t, c)
	l, err := f.Admit(ctx, &Request{Model: "m"})
	if err != nil || l.Backend() != c {
		t.Fatalf("with c's probe due: %v %v, want c", l, err)
	}
	defer l.Release()
	tk, ok := c.TryAttempt() // the request's attempt claims the probe
	if !ok {
		t.Fatal("the probe was refused")
	}
	defer c.ReportAbandoned(tk)
	l2, err := f.Admit(ctx, &Request{Model: "m"})
	if err != nil || l2.Backend() != a {
		t.Fatalf("with the probe out: %v %v, want a", l2, err)
	}
	l2.Release()
	c.ReportAbandoned(tk) // the probe is due again
	l3, err := f.Admit(ctx, &Request{Model: "m", Exclude: []*backend.Backend{c}})
	if err != nil || l3.Backend() != a {
		t.Fatalf("a retry that tried c: %v %v, want a", l3, err)
	}
	l3.Release()
}

// LeastLoaded puts a backend whose probe is due first too, but does not
// wait on it when its slots are all taken (requests hung on it).
func TestLeastLoaded_ProbeDueBackendFirst(t *testing.T) {
	reg, bs := probeRegistry(t, 2, 2)
	a, b := bs[0], bs[1]
	ll := NewLeastLoaded(reg, time.Minute)
	ctx := context.Background()
	if !b.TryAcquire() {
		t.Fatal("no slot")
	}
	openUntilProbe(t, b)
	l, err := ll.Admit(ctx, &Request{Model: "m"})
	if err != nil || l.Backend() != b {
		t.Fatalf("with b's probe due: %v %v, want b", l, err)
	}
	// b is full now: the next request goes to a at once.
	lctx, cancel := context.WithTimeout(ctx, 5*time.Second) // bounds a failure, not the pass
	defer cancel()
	l2, err := ll.Admit(lctx, &Request{Model: "m"})
	if err != nil || l2.Backend() != a {
		t.Fatalf("b full: %v %v, want a", l2, err)
	}
	l2.Release()
	l.Release()
	b.Release()
}

// In a fleet, a replica that holds none of a backend's slots claims one
// when the backend's probe is due and a request found none, although
// nothing waits (the request went to a backend whose slot it holds): the
// next request is the probe. Before, the fleet claimed slots only for
// waiters, so the probe waited until every other backend was full.
func TestFleet_ProbeDueClaimsASlot(t *testing.T) {
	rd := testsvc.StartRedis(t)
	c := redisClient(t, rd)
	reg, bs := probeRegistry(t, 4, 4)
	a, b := bs[0], bs[1]
	fl := NewFleet(FleetOptions{Redis: c, Replica: "A", Grace: time.Minute, Log: slog.New(slog.DiscardHandler)})
	f := NewFair(FairOptions{Registry: reg, Fleet: fl, MaxWait: 10 * time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); fl.Run(ctx) }()
	defer func() { cancel(); <-done }()

	// The replica comes to hold an idle slot of a (kept for the grace),
	// none of b (unhealthy meanwhile).
	set(b, false, testAdapter, "m")
	l, err := f.Admit(ctx, &Request{Model: "m", User: "u"})
	if err != nil || l.Backend() != a {
		t.Fatalf("first request: %v %v, want a", l, err)
	}
	l.Release()
	set(b, true, testAdapter, "m")
	openUntilProbe(t, b)

	// b's probe is due but no slot of b is held here: this request goes
	// to a's idle slot, and the fleet claims one of b for the next.
	l, err = f.Admit(ctx, &Request{Model: "m", User: "u"})
	if err != nil {
		t.Fatal(err)
	}
	l.Release()
	waitFor(t, "a slot of b to be claimed for its probe", func() bool { held, _ := fl.Held(b); return held >= 1 })
	l, err = f.Admit(ctx, &Request{Model: "m", User: "u"})
	if err != nil || l.Backend() != b {
		t.Fatalf("the probe: %v %v, want b", l, err)
	}
	l.Release()
}
