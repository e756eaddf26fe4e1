package quota

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/core/auth"
)

func TestWindow_CountsEvery60sWindowConservatively(t *testing.T) {
	var w window
	base := int64(1_000_000) * minuteNs
	w.add(base)
	w.add(base + int64(30*time.Second))
	if got := w.count(base + int64(59*time.Second)); got != 2 {
		t.Fatalf("count at +59s = %d, want 2", got)
	}
	// A request exactly 60 s old is still inside [now-60s, now].
	if got := w.count(base + minuteNs); got != 2 {
		t.Fatalf("count at +60s = %d, want 2", got)
	}
	if got := w.count(base + minuteNs + bucketNs); got != 1 {
		t.Fatalf("count at +60.1s = %d, want 1", got)
	}
	if d := w.untilFree(base + minuteNs + bucketNs); d <= 0 || d > 30*time.Second {
		t.Fatalf("untilFree = %v, want (0, 30s]", d)
	}
	if got := w.count(base + 10*minuteNs); got != 0 {
		t.Fatalf("count after 10 minutes = %d, want 0", got)
	}
}

func TestLimiter_LocalRPMSliding(t *testing.T) {
	clk := newClock()
	l := New(Options{Now: clk.Now})
	p := principal(1, auth.Limits{RPM: 5})
	ctx := context.Background()
	for i := range 5 {
		tk, err := l.Admit(ctx, p)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if st := tk.Status(); st.LimitRequests != 5 || st.RemainingRequests != 4-i {
			t.Fatalf("request %d status %+v", i, st)
		}
		tk.Done(0)
		clk.Add(10 * time.Second)
	}
	_, err := l.Admit(ctx, p)
	if deniedKind(t, err) != KindRequests {
		t.Fatalf("6th request in a minute: %v", err)
	}
	var d *Denied
	errors.As(err, &d)
	// The first request (50 s ago) leaves the window in about 10 s.
	if d.RetryAfter < 10*time.Second || d.RetryAfter > 11*time.Second || d.Status.RemainingRequests != 0 {
		t.Fatalf("denial %+v", d)
	}
	clk.Add(10*time.Second + bucketNsDuration)
	tk, err := l.Admit(ctx, p)
	if err != nil {
		t.Fatalf("after the first left the window: %v", err)
	}
	tk.Done(0)
}

const bucketNsDuration = time.Duration(bucketNs)

func TestLimiter_LocalConcurrencyAndDoubleDone(t *testing.T) {
	l := New(Options{})
	p := principal(2, auth.Limits{MaxConcurrent: 2})
	ctx := context.Background()
	a, err := l.Admit(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	b, err := l.Admit(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	_, err = l.Admit(ctx, p)
	if deniedKind(t, err) != KindConcurrency {
		t.Fatalf("third in flight: %v", err)
	}
	var d *Denied
	errors.As(err, &d)
	if d.RetryAfter < time.Second {
		t.Fatalf("concurrency Retry-After %v, want ≥ 1s", d.RetryAfter)
	}
	a.Done(0)
	a.Done(0) // a no-op: must not free b's slot too
	c, err := l.Admit(ctx, p)
	if err != nil {
		t.Fatalf("after one finished: %v", err)
	}
	if _, err := l.Admit(ctx, p); deniedKind(t, err) != KindConcurrency {
		t.Fatalf("a second Done freed a slot: %v", err)
	}
	b.Done(0)
	c.Done(0)
	if _, err := a.Reserve(ctx, 1, 1); !errors.Is(err, ErrTicketDone) {
		t.Fatalf("Reserve after Done: %v", err)
	}
}

func TestLimiter_LocalTokensReserveSettleRefund(t *testing.T) {
	clk := newClock()
	l := New(Options{Now: clk.Now})
	lim := auth.Limits{TokenBudget: 1000, BudgetPeriod: time.Hour, PeriodAnchor: clk.Now()}
	p := principal(3, lim)
	ctx := context.Background()

	a, _ := l.Admit(ctx, p)
	g, err := a.Reserve(ctx, 101, 600)
	if err != nil || g != 600 {
		t.Fatalf("first reservation = %d, %v; want 600", g, err)
	}
	b, _ := l.Admit(ctx, p)
	// 400 left, one other reservation in flight: b's fair share is 200.
	g, err = b.Reserve(ctx, 101, 600)
	if err != nil || g != 200 {
		t.Fatalf("second reservation = %d, %v; want 200", g, err)
	}
	c, _ := l.Admit(ctx, p)
	if _, err := c.Reserve(ctx, 201, 600); deniedKind(t, err) != KindTokens {
		t.Fatalf("reservation beyond the budget: %v", err)
	}
	c.Done(0)
	a.Done(150) // refunds 450
	b.Done(250) // 50 more than granted: charged
	r, err := l.Usage(ctx, 3, lim)
	if err != nil {
		t.Fatal(err)
	}
	if r.TokensUsed != 400 || r.LifetimeTokens != 400 || r.TokensReserved != 0 || r.InFlight != 0 {
		t.Fatalf("usage %+v", r)
	}
	d, _ := l.Admit(ctx, p)
	if g, err := d.Reserve(ctx, 10, 700); err != nil || g != 600 {
		t.Fatalf("after refunds = %d, %v; want 600", g, err)
	}
	if st := d.Status(); st.LimitTokens != 1000 || st.RemainingTokens != 0 || st.ResetTokens != time.Hour {
		t.Fatalf("status %+v", st)
	}
	d.Done(600)
	_, err = l.Admit(ctx, p)
	if deniedKind(t, err) != KindTokens {
		t.Fatalf("spent budget admitted: %v", err)
	}
	var den *Denied
	errors.As(err, &den)
	if den.RetryAfter != time.Hour {
		t.Fatalf("Retry-After %v, want the period's end (1h)", den.RetryAfter)
	}
}

func TestLimiter_PeriodRolloverLocal(t *testing.T) {
	testRollover(t, func(clk *clock) *Limiter { return New(Options{Now: clk.Now}) })
}

func testRollover(t *testing.T, newL func(*clock) *Limiter) {
	clk := newClock()
	l := newL(clk)
	lim := auth.Limits{TokenBudget: 1000, BudgetPeriod: time.Hour, PeriodAnchor: clk.Now().Add(-30 * time.Minute)}
	p := principal(4, lim)
	ctx := context.Background()
	spend := func(n int64) error { return spend(t, l, p, n) }
	if err := spend(1000); err != nil {
		t.Fatal(err)
	}
	if err := spend(1); deniedKind(t, err) != KindTokens {
		t.Fatalf("over budget: %v", err)
	}
	clk.Add(30 * time.Minute) // the next period starts
	if err := spend(300); err != nil {
		t.Fatalf("new period: %v", err)
	}
	l.tick(ctx)
	r, err := l.Usage(ctx, 4, lim)
	if err != nil {
		t.Fatal(err)
	}
	if r.TokensUsed != 300 || r.LifetimeTokens != 1300 || !r.PeriodStart.Equal(clk.Now()) {
		t.Fatalf("usage after rollover %+v", r)
	}
}

func TestLimiter_ResetLocal(t *testing.T) {
	testReset(t, func(clk *clock) *Limiter { return New(Options{Now: clk.Now, Store: newMemStore()}) })
}

func testReset(t *testing.T, newL func(*clock) *Limiter) {
	clk := newClock()
	l := newL(clk)
	lim := auth.Limits{TokenBudget: 500}
	p := principal(5, lim)
	ctx := context.Background()
	tk, _ := l.Admit(ctx, p)
	if _, err := tk.Reserve(ctx, 500, 500); err != nil {
		t.Fatal(err)
	}
	tk.Done(500)
	l.tick(ctx)
	if _, err := l.Admit(ctx, p); deniedKind(t, err) != KindTokens {
		t.Fatalf("spent: %v", err)
	}
	if err := l.Reset(ctx, 5, lim); err != nil {
		t.Fatal(err)
	}
	tk, err := l.Admit(ctx, p)
	if err != nil {
		t.Fatalf("after reset: %v", err)
	}
	if g, err := tk.Reserve(ctx, 1, 400); err != nil || g != 400 {
		t.Fatalf("after reset: %d, %v", g, err)
	}
	tk.Done(400)
	l.tick(ctx)
	r, err := l.Usage(ctx, 5, lim)
	if err != nil {
		t.Fatal(err)
	}
	if r.TokensUsed != 400 || r.LifetimeTokens != 900 {
		t.Fatalf("usage after reset %+v; want used 400, lifetime 900", r)
	}
}

func TestLimiter_UnlimitedCountsNeverDenies(t *testing.T) {
	st := newMemStore()
	l := New(Options{Store: st})
	p := principal(6, auth.Limits{})
	ctx := context.Background()
	var ts []*Ticket
	for range 100 {
		tk, err := l.Admit(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if g, err := tk.Reserve(ctx, 10, 1<<40); err != nil || g != 1<<40 {
			t.Fatalf("unlimited reservation %d, %v", g, err)
		}
		ts = append(ts, tk)
	}
	for _, tk := range ts {
		tk.Done(7)
	}
	if err := l.persist(ctx); err != nil {
		t.Fatal(err)
	}
	if row := st.rows[6]; row.TokensUsed != 700 || row.LifetimeTokens != 700 {
		t.Fatalf("persisted %+v", row)
	}
}

func TestLimiter_StoreLoadAndPersist(t *testing.T) {
	clk := newClock()
	st := newMemStore()
	lim := auth.Limits{TokenBudget: 1000, BudgetPeriod: time.Hour, PeriodAnchor: clk.Now()}
	st.rows[7] = storeRow(7, clk.Now(), 900, 5000)
	l := New(Options{Now: clk.Now, Store: st})
	ctx := context.Background()
	tk, err := l.Admit(ctx, principal(7, lim))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tk.Reserve(ctx, 101, 200); deniedKind(t, err) != KindTokens {
		t.Fatalf("the stored 900 were not loaded: %v", err)
	}
	if g, _ := tk.Reserve(ctx, 50, 100); g != 100 {
		t.Fatalf("granted %d of the 100 left", g)
	}
	tk.Done(100)
	st.fail = errStoreDown
	if err := l.persist(ctx); err == nil {
		t.Fatal("persist with the store down succeeded")
	}
	st.fail = nil
	if err := l.persist(ctx); err != nil {
		t.Fatal(err)
	}
	if row := st.rows[7]; row.TokensUsed != 1000 || row.LifetimeTokens != 5100 || !row.PeriodStart.Equal(clk.Now()) {
		t.Fatalf("persisted %+v", row)
	}
}

func TestLimiter_LateDoneAfterRolloverStaysInNewPeriod(t *testing.T) {
	clk := newClock()
	l := New(Options{Now: clk.Now})
	lim := auth.Limits{TokenBudget: 1000, BudgetPeriod: time.Hour, PeriodAnchor: clk.Now().Add(-59 * time.Minute)}
	p := principal(8, lim)
	ctx := context.Background()
	long, err := l.Admit(ctx, p) // a stream that crosses the period's end
	if err != nil {
		t.Fatal(err)
	}
	if _, err := long.Reserve(ctx, 100, 500); err != nil {
		t.Fatal(err)
	}
	clk.Add(2 * time.Minute)
	if err := spend(t, l, p, 700); err != nil {
		t.Fatalf("new period: %v", err)
	}
	long.Done(400) // charged to the period it ends in
	r, err := l.Usage(ctx, 8, lim)
	if err != nil {
		t.Fatal(err)
	}
	if r.TokensUsed != 1100 || r.LifetimeTokens != 1100 || !r.PeriodStart.Equal(clk.Now().Add(-time.Minute)) || r.TokensReserved != 0 {
		t.Fatalf("usage %+v; want the new period with 1100 used", r)
	}
}
