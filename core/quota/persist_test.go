package quota

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/core/auth"
	"github.com/mindrouter/mindrouter/core/internal/testsvc"
	"github.com/mindrouter/mindrouter/core/internal/testutil"
	"github.com/mindrouter/mindrouter/core/store"
	"github.com/mindrouter/mindrouter/core/store/sqlstore"
)

// sqliteUser opens a real SQLite store with one user and returns its id.
func sqliteUser(t *testing.T) (*sqlstore.Store, int64) {
	t.Helper()
	ctx := context.Background()
	st, err := sqlstore.Open(ctx, "sqlite", filepath.Join(t.TempDir(), "db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	g := &store.Group{Name: "testers", BudgetPeriodDays: 30, Weight: 1}
	if err := st.CreateGroup(ctx, g); err != nil {
		t.Fatal(err)
	}
	u := &store.User{Username: "ada", GroupID: g.ID, Active: true}
	if err := st.CreateUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	return st, u.ID
}

// spend runs one request that uses n tokens.
func spend(t *testing.T, l *Limiter, p *auth.Principal, n int64) error {
	t.Helper()
	ctx := context.Background()
	tk, err := l.Admit(ctx, p)
	if err != nil {
		return err
	}
	if _, err := tk.Reserve(ctx, n, n); err != nil {
		tk.Done(0)
		return err
	}
	tk.Done(n)
	return nil
}

func TestPersist_RoundTripThroughShutdown(t *testing.T) {
	st, uid := sqliteUser(t)
	r := testsvc.StartPrivateRedis(t) // restarted
	clk := newClock()
	lim := auth.Limits{TokenBudget: 1000, BudgetPeriod: time.Hour, PeriodAnchor: clk.Now()}
	p := principal(uid, lim)

	l1 := New(Options{Redis: redisClient(t, r), Store: st, Now: clk.Now, Replica: "one"})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { l1.Run(ctx); close(done) }()
	for range 7 {
		if err := spend(t, l1, p, 100); err != nil {
			t.Fatal(err)
		}
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
	got, err := st.Usage(context.Background(), uid)
	if err != nil {
		t.Fatal(err)
	}
	if got.TokensUsed != 700 || got.LifetimeTokens != 700 || !got.PeriodStart.Equal(clk.Now()) {
		t.Fatalf("persisted at shutdown %+v; want 700 used this period", got)
	}

	// Everything in Redis is lost; a new replica starts from the store.
	r.Restart()
	l2 := New(Options{Redis: redisClient(t, r), Store: st, Now: clk.Now, Replica: "two"})
	if err := spend(t, l2, p, 301); deniedKind(t, err) != KindTokens {
		t.Fatalf("301 tokens with 300 left: %v", err)
	}
	if err := spend(t, l2, p, 300); err != nil {
		t.Fatalf("the 300 left: %v", err)
	}
	l2.tick(context.Background())
	rep, err := l2.Usage(context.Background(), uid, lim)
	if err != nil {
		t.Fatal(err)
	}
	if rep.TokensUsed != 1000 || rep.LifetimeTokens != 1000 {
		t.Fatalf("usage %+v; want 1000 used and lifetime", rep)
	}
}

func TestPersist_RedisRestartLosesAtMostSinceLastPersist(t *testing.T) {
	st, uid := sqliteUser(t)
	r := testsvc.StartPrivateRedis(t) // restarted
	clk := newClock()
	lim := auth.Limits{TokenBudget: 10_000, BudgetPeriod: time.Hour, PeriodAnchor: clk.Now()}
	p := principal(uid, lim)
	ctx := context.Background()
	a := New(Options{Redis: redisClient(t, r), Store: st, Now: clk.Now, Replica: "a"})
	b := New(Options{Redis: redisClient(t, r), Store: st, Now: clk.Now, Replica: "b"})
	for _, l := range []*Limiter{a, b} {
		if err := spend(t, l, p, 150); err != nil {
			t.Fatal(err)
		}
		l.tick(ctx)
	}
	clk.Add(time.Second)
	if err := a.persist(ctx); err != nil { // stores the fleet's 300 (read from Redis)
		t.Fatal(err)
	}
	if got, _ := st.Usage(ctx, uid); got.TokensUsed != 300 {
		t.Fatalf("persisted %d, want the fleet's 300", got.TokensUsed)
	}
	for _, l := range []*Limiter{a, b} {
		if err := spend(t, l, p, 100); err != nil { // in Redis, not yet persisted
			t.Fatal(err)
		}
		l.tick(ctx)
	}
	r.Restart()
	clk.Add(time.Second)
	for range 2 { // a failed call may open the breaker; the next tick reconciles
		for _, l := range []*Limiter{a, b} {
			l.tick(ctx)
		}
	}
	for _, l := range []*Limiter{a, b} {
		if err := spend(t, l, p, 50); err != nil {
			t.Fatal(err)
		}
		l.tick(ctx)
	}
	rep, err := a.Usage(ctx, uid, lim)
	if err != nil {
		t.Fatal(err)
	}
	// 300 persisted + 100 after the restart; the 200 used between the
	// last persist and the restart are the documented loss.
	if rep.TokensUsed != 400 || rep.LifetimeTokens != 400 {
		t.Fatalf("after the restart %+v; want 400 used and lifetime", rep)
	}
}

// eventually polls cond until it holds, failing after a generous bound.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testutil.WaitFor(t, what, 10*time.Second, cond)
}

func TestRun_ReturnsLeasesAndPersistsOnItsOwn(t *testing.T) {
	st, uid := sqliteUser(t)
	r := testsvc.StartRedis(t)
	o := Options{Store: st, Lease: 100 * time.Millisecond, PersistEvery: 200 * time.Millisecond}
	oa, ob := o, o
	oa.Redis, ob.Redis = redisClient(t, r), redisClient(t, r)
	a, b := New(oa), New(ob)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, l := range []*Limiter{a, b} {
		wg.Go(func() { l.Run(ctx) })
	}
	defer func() { cancel(); wg.Wait() }()
	p := principal(uid, auth.Limits{MaxConcurrent: 1, TokenBudget: 1000})
	if err := spend(t, a, p, 250); err != nil { // a keeps the freed slot for a lease
		t.Fatal(err)
	}
	eventually(t, "b admitted once a gave its slot back", func() bool {
		return spend(t, b, p, 0) == nil
	})
	eventually(t, "usage persisted", func() bool {
		got, err := st.Usage(context.Background(), uid)
		return err == nil && got.TokensUsed == 250 && got.LifetimeTokens == 250
	})
}

// TestPersist_RedisBackEmptyCountsOnce: when Redis comes back without the
// user's counter, the counter is rebuilt from the store and this
// replica's pending charges land on top of it: the store's figure must
// not already hold them.
func TestPersist_RedisBackEmptyCountsOnce(t *testing.T) {
	for _, tc := range []struct {
		name   string
		outage bool  // Redis is seen down (the breaker opens) before the restart
		budget int64 // 0: unlimited, so no request makes a Redis call
	}{
		{"after an outage", true, 10_000},
		{"restart not seen as an outage", false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, uid := sqliteUser(t)
			r := testsvc.StartPrivateRedis(t) // stopped and restarted
			clk := newClock()
			lim := auth.Limits{TokenBudget: tc.budget, BudgetPeriod: time.Hour, PeriodAnchor: clk.Now()}
			p := principal(uid, lim)
			ctx := context.Background()
			l := New(Options{Redis: redisClient(t, r), Store: st, Now: clk.Now, Replica: "a"})
			if err := spend(t, l, p, 100); err != nil {
				t.Fatal(err)
			}
			l.tick(ctx) // pushed: Redis has 100
			clk.Add(time.Second)
			if err := l.persist(ctx); err != nil { // and the store
				t.Fatal(err)
			}
			if tc.outage {
				r.Stop()
			}
			for range 2 { // charged here, not yet pushed
				if err := spend(t, l, p, 100); err != nil {
					t.Fatal(err)
				}
			}
			if tc.outage {
				l.tick(ctx)
				if l.fleet() {
					t.Fatal("the breaker is still closed with Redis stopped")
				}
			} else {
				r.Restart()
			}
			clk.Add(time.Second)
			if err := l.persist(ctx); err != nil {
				t.Fatal(err)
			}
			if tc.outage {
				r.Restart()
			}
			clk.Add(time.Second)
			for range 2 { // the probe (after an outage), then the push
				l.tick(ctx)
			}
			if !l.fleet() {
				t.Fatal("Redis is back but the breaker is open")
			}
			rep, err := l.Usage(ctx, uid, lim)
			if err != nil {
				t.Fatal(err)
			}
			if rep.TokensUsed != 300 || rep.LifetimeTokens != 300 {
				t.Fatalf("after Redis came back empty: %+v; want 300 used and lifetime (charged once)", rep)
			}
			if err := l.persist(ctx); err != nil {
				t.Fatal(err)
			}
			if got, _ := st.Usage(ctx, uid); got.TokensUsed != 300 || got.LifetimeTokens != 300 {
				t.Fatalf("stored %+v; want 300 used and lifetime", got)
			}
		})
	}
}

// TestPersist_ShutdownDuringOutageKeepsPending: at shutdown nothing will
// push this replica's pending charges any more, so the last save keeps
// them.
func TestPersist_ShutdownDuringOutageKeepsPending(t *testing.T) {
	st, uid := sqliteUser(t)
	r := testsvc.StartPrivateRedis(t) // stopped
	clk := newClock()
	lim := auth.Limits{TokenBudget: 10_000, BudgetPeriod: time.Hour, PeriodAnchor: clk.Now()}
	p := principal(uid, lim)
	ctx := context.Background()
	l := New(Options{Redis: redisClient(t, r), Store: st, Now: clk.Now, Replica: "a"})
	if err := spend(t, l, p, 100); err != nil {
		t.Fatal(err)
	}
	l.tick(ctx)
	r.Stop()
	if err := spend(t, l, p, 200); err != nil {
		t.Fatal(err)
	}
	clk.Add(time.Second)
	l.shutdown(ctx)
	if got, _ := st.Usage(ctx, uid); got.TokensUsed != 300 || got.LifetimeTokens != 300 {
		t.Fatalf("saved at shutdown %+v; want 300 used and lifetime", got)
	}
}

// TestPersist_RedisBackEmptyTwoReplicas: each replica's charges made
// while Redis was away land once on the counter rebuilt from the store,
// whichever replica rebuilds it.
func TestPersist_RedisBackEmptyTwoReplicas(t *testing.T) {
	st, uid := sqliteUser(t)
	r := testsvc.StartPrivateRedis(t) // stopped and restarted
	clk := newClock()
	lim := auth.Limits{TokenBudget: 10_000, BudgetPeriod: time.Hour, PeriodAnchor: clk.Now()}
	p := principal(uid, lim)
	ctx := context.Background()
	a := New(Options{Redis: redisClient(t, r), Store: st, Now: clk.Now, Replica: "a"})
	b := New(Options{Redis: redisClient(t, r), Store: st, Now: clk.Now, Replica: "b"})
	ls := []*Limiter{a, b}
	for _, l := range ls {
		if err := spend(t, l, p, 100); err != nil {
			t.Fatal(err)
		}
		l.tick(ctx)
	}
	clk.Add(time.Second)
	if err := b.persist(ctx); err != nil { // the fleet's 200
		t.Fatal(err)
	}
	r.Stop()
	for i, l := range ls {
		if err := spend(t, l, p, int64(50*(i+1))); err != nil { // a 50, b 100: pending
			t.Fatal(err)
		}
		l.tick(ctx)
		clk.Add(time.Second)
		if err := l.persist(ctx); err != nil {
			t.Fatal(err)
		}
	}
	r.Restart()
	clk.Add(time.Second)
	for range 2 {
		for _, l := range ls {
			l.tick(ctx)
		}
	}
	rep, err := a.Usage(ctx, uid, lim)
	if err != nil {
		t.Fatal(err)
	}
	if rep.TokensUsed != 350 || rep.LifetimeTokens != 350 {
		t.Fatalf("after Redis came back empty: %+v; want 350 used and lifetime", rep)
	}
}
