package sched

import (
	"context"
	"math"
	"sync"
	"testing"
	"time"
)

// stepClock is a Clock tests move by hand; safe for concurrent use.
type stepClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *stepClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *stepClock) add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// TestFair_Snapshot: who waits (user, group, how long) per model, and
// each group's recent service against the entitlement its active users'
// weights give it.
func TestFair_Snapshot(t *testing.T) {
	reg, _ := registry(t, 1)
	clk := &stepClock{now: time.Unix(1_000_000, 0)}
	f := NewFair(FairOptions{Registry: reg, MaxWait: time.Minute, BurstCredit: -1, Clock: clk})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	held, err := f.Admit(ctx, &Request{Model: "m", User: "ann", Group: "g1", EstTokens: 600})
	if err != nil {
		t.Fatal(err)
	}
	out := make(chan admitResult, 2)
	admitAsync(ctx, f, 0, &Request{Model: "m", User: "bob", Group: "g2", Weight: 3, EstTokens: 50}, out)
	waitFor(t, "bob queued", func() bool { return f.Waiting() == 1 })
	clk.add(time.Second)
	admitAsync(ctx, f, 1, &Request{Model: "m", User: "cat", Group: "g1", EstTokens: 50}, out)
	waitFor(t, "cat queued", func() bool { return f.Waiting() == 2 })
	clk.add(2 * time.Second)

	s := f.Snapshot()
	if len(s.Models) != 1 || s.Models[0].Model != "m" || s.Models[0].Waiting != 2 || s.Models[0].Users != 2 {
		t.Fatalf("models %+v", s.Models)
	}
	rs := s.Models[0].Requests
	if len(rs) != 2 || rs[0].User != "bob" || rs[0].Group != "g2" || rs[0].Waited != 3*time.Second || rs[0].Weight != 3 ||
		rs[1].User != "cat" || rs[1].Waited != 2*time.Second || s.Models[0].OldestWait != 3*time.Second {
		t.Fatalf("waiting requests %+v, want bob (3 s) then cat (2 s)", rs)
	}
	if len(s.Groups) != 2 {
		t.Fatalf("groups %+v", s.Groups)
	}
	g1, g2 := s.Groups[0], s.Groups[1]
	// g1: ann (served) and cat (waiting), weight 1 each; g2: bob, weight 3.
	if g1.Group != "g1" || g1.Users != 2 || g1.Weight != 2 || g1.Waiting != 1 || g2.Users != 1 || g2.Weight != 3 {
		t.Fatalf("groups %+v", s.Groups)
	}
	if !near(g1.Entitlement, 0.4) || !near(g2.Entitlement, 0.6) {
		t.Errorf("entitlements %v, %v; want 0.4, 0.6", g1.Entitlement, g2.Entitlement)
	}
	if !near(g1.Served, 600*math.Exp(-3.0/60)) || g2.Served != 0 || g1.Share != 1 || g2.Share != 0 {
		t.Errorf("service g1 %v (share %v), g2 %v (share %v); want only g1's 600 tokens, decayed 3 s", g1.Served, g1.Share, g2.Served, g2.Share)
	}
	if len(s.Backends) != 1 || s.Backends[0].InFlight != 1 || s.Backends[0].MaxConcurrent != 1 {
		t.Errorf("backends %+v", s.Backends)
	}

	// Each release serves a waiter: its group's service grows.
	held.Release()
	r := <-out
	r.l.Release()
	r2 := <-out
	r2.l.Release()
	s = f.Snapshot()
	if len(s.Models) != 0 || s.Groups[1].Served == 0 || s.Groups[0].Served <= 600*math.Exp(-3.0/60) {
		t.Errorf("after serving both: models %+v, groups %+v", s.Models, s.Groups)
	}
	// Past the window, users drop out of the entitlement.
	clk.add(2 * ServiceWindow)
	if s = f.Snapshot(); len(s.Groups) != 0 && (s.Groups[0].Users != 0 || s.Groups[0].Entitlement != 0) {
		t.Errorf("after the window: groups %+v", s.Groups)
	}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
