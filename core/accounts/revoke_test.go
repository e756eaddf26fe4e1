package accounts

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/core/auth"
	"github.com/mindrouter/mindrouter/core/internal/testsvc"
	"github.com/mindrouter/mindrouter/core/store"
)

// replicas are two Authenticators over one store and one Redis, as two
// gateway replicas. Their clocks are frozen: an entry never ages, so only
// a message through Redis (or a resubscription) can drop it.
type replicas struct {
	f    *fixture
	r    *testsvc.Redis
	a, b *Authenticator
}

func newReplicas(t *testing.T) *replicas {
	t.Helper()
	return newReplicasOn(t, testsvc.StartRedis(t))
}

// newReplicasOn is newReplicas on r (a private Redis, for a test that
// restarts it).
func newReplicasOn(t *testing.T, r *testsvc.Redis) *replicas {
	t.Helper()
	rp := &replicas{f: newFixture(t), r: r}
	rp.a = New(Options{Store: rp.f.st, Redis: redisClient(t, rp.r), Now: newClock().Now})
	rp.b = New(Options{Store: rp.f.st, Redis: redisClient(t, rp.r), Now: newClock().Now})
	run(t, rp.a)
	run(t, rp.b)
	eventually(t, "both subscriptions live", func() bool { return rp.a.live() && rp.b.live() })
	return rp
}

// TestInvalidate_AcrossReplicas: each admin change made on replica a
// reaches replica b through Redis; the time it took is logged (the
// target is well under a second).
func TestInvalidate_AcrossReplicas(t *testing.T) {
	rp := newReplicas(t)
	f, ctx := rp.f, context.Background()
	cases := []struct {
		name string
		// change alters the store, then tells replica a; refused reports
		// whether a replica's answer shows the change.
		change  func(t *testing.T, key string, k store.APIKey, u store.User)
		refused func(p auth.Principal, err error) bool
	}{
		{
			name: "revoke key",
			change: func(t *testing.T, key string, k store.APIKey, _ store.User) {
				if err := f.st.RevokeKey(ctx, k.ID, time.Now()); err != nil {
					t.Fatal(err)
				}
				h := HashKey([]byte(key))
				rp.a.Invalidate(ctx, h[:])
			},
			refused: func(_ auth.Principal, err error) bool { return errors.Is(err, errRevoked) },
		},
		{
			name: "delete key",
			change: func(t *testing.T, key string, k store.APIKey, _ store.User) {
				if err := f.st.DeleteKey(ctx, k.ID); err != nil {
					t.Fatal(err)
				}
				h := HashKey([]byte(key))
				rp.a.Invalidate(ctx, h[:])
			},
			refused: func(_ auth.Principal, err error) bool { return errors.Is(err, errUnknown) },
		},
		{
			name: "deactivate user",
			change: func(t *testing.T, _ string, _ store.APIKey, u store.User) {
				u.Active = false
				if err := f.st.UpdateUser(ctx, &u); err != nil {
					t.Fatal(err)
				}
				rp.a.InvalidateUser(ctx, u.ID)
			},
			refused: func(_ auth.Principal, err error) bool { return errors.Is(err, errInactive) },
		},
		{
			name: "change group",
			change: func(t *testing.T, _ string, _ store.APIKey, u store.User) {
				g, err := f.st.Group(ctx, u.GroupID)
				if err != nil {
					t.Fatal(err)
				}
				g.RPM = 12345
				if err := f.st.UpdateGroup(ctx, &g); err != nil {
					t.Fatal(err)
				}
				rp.a.InvalidateAll(ctx)
			},
			refused: func(p auth.Principal, err error) bool { return err == nil && p.Limits.RPM == 12345 },
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			u := f.newUser(t, "user-"+t.Name()[len("TestInvalidate_AcrossReplicas/"):], f.staff.ID)
			key, k := f.issue(t, u.ID, "inference")
			for _, r := range []*Authenticator{rp.a, rp.b} {
				if p, err := r.Authenticate(ctx, []byte(key)); err != nil || c.refused(p, err) {
					t.Fatalf("before the change: %+v, %v", p, err)
				}
			}
			c.change(t, key, k, u)
			if p, err := rp.a.Authenticate(ctx, []byte(key)); !c.refused(p, err) {
				t.Fatalf("replica a right after the change: %+v, %v", p, err)
			}
			took := eventually(t, "replica b sees the change", func() bool {
				return c.refused(rp.b.Authenticate(ctx, []byte(key)))
			})
			t.Logf("%s reached the other replica after %v", c.name, took)
		})
	}
}

// TestSubscription_RedisRestart: after Redis restarts (losing every
// subscription) a replica resubscribes, empties its cache, and
// invalidations flow again.
func TestSubscription_RedisRestart(t *testing.T) {
	rp := newReplicasOn(t, testsvc.StartPrivateRedis(t))
	f, ctx := rp.f, context.Background()
	key, k := f.issue(t, f.user.ID, "inference")
	if _, err := rp.b.Authenticate(ctx, []byte(key)); err != nil {
		t.Fatal(err)
	}
	reads := f.st.byHash.Load()
	subs := rp.b.subscribes.Load()
	rp.r.Restart()
	took := eventually(t, "replica b resubscribed", func() bool { return rp.b.subscribes.Load() > subs && rp.b.live() })
	t.Logf("resubscribed %v after the restart", took)
	if _, err := rp.b.Authenticate(ctx, []byte(key)); err != nil {
		t.Fatal(err)
	}
	if n := f.st.byHash.Load() - reads; n != 1 {
		t.Fatalf("%d store reads after resubscribing; want 1 (the cache emptied)", n)
	}
	eventually(t, "replica a resubscribed", rp.a.live)
	if err := f.st.RevokeKey(ctx, k.ID, time.Now()); err != nil {
		t.Fatal(err)
	}
	h := HashKey([]byte(key))
	rp.a.Invalidate(ctx, h[:])
	eventually(t, "revocation after the restart reaches replica b", func() bool {
		_, err := rp.b.Authenticate(ctx, []byte(key))
		return errors.Is(err, errRevoked)
	})
}

// TestSubscription_RedisDown: with Redis gone the subscription stops
// counting as live, entries are trusted for one second only, and
// authentication neither fails nor waits on Redis.
func TestSubscription_RedisDown(t *testing.T) {
	f := newFixture(t)
	r := testsvc.StartPrivateRedis(t)
	clk := newClock()
	a := New(Options{Store: f.st, Redis: redisClient(t, r), Now: clk.Now})
	run(t, a)
	eventually(t, "subscription live", a.live)
	ctx := context.Background()
	key, k := f.issue(t, f.user.ID, "inference")
	if _, err := a.Authenticate(ctx, []byte(key)); err != nil {
		t.Fatal(err)
	}
	clk.Add(2 * staleAfter)
	eventually(t, "the next heartbeat", a.live) // liveness is reckoned on the same clock
	if _, err := a.Authenticate(ctx, []byte(key)); err != nil {
		t.Fatal(err)
	}
	if n := f.st.byHash.Load(); n != 1 {
		t.Fatalf("%d store reads while live within CacheTTL; want 1", n)
	}
	r.Stop()
	eventually(t, "subscription counted down", func() bool { return !a.live() })
	if err := f.st.RevokeKey(ctx, k.ID, time.Now()); err != nil {
		t.Fatal(err)
	}
	clk.Add(staleAfter)
	if _, err := a.Authenticate(ctx, []byte(key)); !errors.Is(err, errRevoked) {
		t.Fatalf("a second later with Redis down: %v, want revoked (read again from the store)", err)
	}

	// An invalidation published while Redis is down returns (bounded by
	// the client's timeouts), is kept, and goes out once Redis is back.
	other := HashKey([]byte("mr2_some-other-key-0123456789"))
	start := time.Now()
	a.Invalidate(ctx, other[:])
	t.Logf("Invalidate with Redis down returned after %v", time.Since(start))
	a.pubMu.Lock()
	pending := len(a.pending)
	a.pubMu.Unlock()
	if pending != 1 {
		t.Fatalf("%d invalidations kept for retry, want 1", pending)
	}
	r.Restart()
	eventually(t, "the kept invalidation published", func() bool {
		a.pubMu.Lock()
		defer a.pubMu.Unlock()
		return len(a.pending) == 0
	})
	eventually(t, "subscription live again", a.live)
}

func TestApply_Messages(t *testing.T) {
	f := newFixture(t)
	a := New(Options{Store: f.st, Now: newClock().Now})
	ctx := context.Background()
	k1, _ := f.issue(t, f.user.ID, "inference")
	other := f.newUser(t, "bob", f.staff.ID)
	k2, _ := f.issue(t, other.ID, "inference")
	h1 := HashKey([]byte(k1))
	fill := func() {
		for _, k := range []string{k1, k2} {
			if _, err := a.Authenticate(ctx, []byte(k)); err != nil {
				t.Fatal(err)
			}
		}
	}
	cases := []struct {
		msg        string
		has1, has2 bool
	}{
		{"k:" + hexOf(h1[:]), false, true},
		{"u:" + itoa(other.ID), true, false},
		{"a", false, false},
		{"k:zz", false, false},   // unreadable: everything goes
		{"u:x", false, false},    // unreadable
		{"v2:new", false, false}, // unknown kind
	}
	for _, c := range cases {
		fill()
		a.apply(c.msg)
		h2 := HashKey([]byte(k2))
		if got1, got2 := a.cache.get(&h1) != nil, a.cache.get(&h2) != nil; got1 != c.has1 || got2 != c.has2 {
			t.Errorf("after %q: cached %v %v, want %v %v", c.msg, got1, got2, c.has1, c.has2)
		}
	}
}
