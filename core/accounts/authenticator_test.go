package accounts

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/core/auth"
	"github.com/mindrouter/mindrouter/core/internal/testsvc"
	"github.com/mindrouter/mindrouter/core/store"
)

func TestAuthenticate_IssuedKey(t *testing.T) {
	f := newFixture(t)
	clk := newClock()
	a := New(Options{Store: f.st, Now: clk.Now})
	key, k := f.issue(t, f.user.ID, "inference")
	ctx := context.Background()
	p, err := a.Authenticate(ctx, []byte(key))
	if err != nil {
		t.Fatal(err)
	}
	want := auth.Principal{KeyID: "key:" + k.Prefix[4:], User: "ann", Group: "staff", Scopes: auth.ScopeInference,
		Weight: f.staff.Weight, UserID: f.user.ID, GroupID: f.staff.ID, KeyNum: k.ID}
	got := p
	got.Limits = auth.Limits{}
	if got != want {
		t.Fatalf("principal %+v, want %+v", got, want)
	}
	if p.Limits.RPM != f.staff.RPM || p.Limits.TokenBudget != f.staff.TokenBudget || p.Limits.PeriodAnchor.IsZero() {
		t.Fatalf("limits %+v do not come from the group", p.Limits)
	}
	for range 10 {
		if _, err := a.Authenticate(ctx, []byte(key)); err != nil {
			t.Fatal(err)
		}
	}
	if n := f.st.byHash.Load(); n != 1 {
		t.Fatalf("%d store reads for one key used 11 times within a second; want 1", n)
	}
}

func TestAuthenticate_Refused(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	past := time.Now().Add(-time.Hour)
	revoked, _ := f.issue(t, f.user.ID, "inference", func(k *store.APIKey) { k.Status = store.KeyRevoked })
	expired, _ := f.issue(t, f.user.ID, "inference", func(k *store.APIKey) { k.ExpiresAt = &past })
	idle := f.newUser(t, "idle", f.staff.ID)
	idle.Active = false
	if err := f.st.UpdateUser(ctx, &idle); err != nil {
		t.Fatal(err)
	}
	inactive, _ := f.issue(t, idle.ID, "inference")
	unknown, _, _, _ := NewKey()
	cases := []struct {
		name, key, reason string
		lookups           int64 // store reads it may cost
	}{
		{"unknown", unknown, "unknown key", 1},
		{"revoked", revoked, "revoked", 1},
		{"expired", expired, "expired", 1},
		{"user inactive", inactive, "user inactive", 1},
		{"not mr2_", "sk-" + strings.Repeat("a", 44), "not shaped", 0},
		{"too short", "mr2_short", "not shaped", 0},
		{"too long", "mr2_" + strings.Repeat("a", 300), "not shaped", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := New(Options{Store: f.st})
			before := f.st.byHash.Load()
			_, err := a.Authenticate(ctx, []byte(c.key))
			if !errors.Is(err, auth.ErrBadKey) || !strings.Contains(err.Error(), c.reason) {
				t.Fatalf("err = %v, want ErrBadKey (%s)", err, c.reason)
			}
			if strings.Contains(err.Error(), c.key) {
				t.Fatal("the error carries the key")
			}
			if n := f.st.byHash.Load() - before; n != c.lookups {
				t.Fatalf("%d store reads, want %d", n, c.lookups)
			}
		})
	}
	if _, err := New(Options{Store: f.st}).Authenticate(ctx, nil); err != auth.ErrNoKey {
		t.Fatalf("no key: %v, want ErrNoKey", err)
	}
}

// TestAuthenticate_ExpiresWhileCached: expiry is checked against the clock
// at every request, not only when the key is read.
func TestAuthenticate_ExpiresWhileCached(t *testing.T) {
	f := newFixture(t)
	clk := newClock()
	a := New(Options{Store: f.st, Now: clk.Now})
	at := clk.Now().Add(500 * time.Millisecond)
	key, _ := f.issue(t, f.user.ID, "inference", func(k *store.APIKey) { k.ExpiresAt = &at })
	if _, err := a.Authenticate(context.Background(), []byte(key)); err != nil {
		t.Fatal(err)
	}
	clk.Add(500 * time.Millisecond)
	if _, err := a.Authenticate(context.Background(), []byte(key)); !errors.Is(err, errExpired) {
		t.Fatalf("at expiry: %v, want expired", err)
	}
	if n := f.st.byHash.Load(); n != 1 {
		t.Fatalf("%d store reads; expiry should need none", n)
	}
}

func TestAuthenticate_ImportedKey(t *testing.T) {
	f := newFixture(t)
	clk := newClock()
	a := New(Options{Store: f.st, Now: clk.Now})
	ctx := context.Background()
	key, _, _, _ := NewKey()
	k := store.APIKey{UserID: f.user.ID, Name: "imported", Prefix: key[:PrefixLen], Argon2: cheapPHC(t, key), Scopes: "inference"}
	if err := f.st.CreateKey(ctx, &k); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		p, err := a.Authenticate(ctx, []byte(key))
		if err != nil {
			t.Fatal(err)
		}
		if p.KeyNum != k.ID || p.UserID != f.user.ID {
			t.Fatalf("principal %+v is not imported key %d", p, k.ID)
		}
	}
	if n := f.st.byPrefix.Load(); n != 1 {
		t.Fatalf("%d prefix lookups (each an Argon2id run) for one key used 5 times; want 1", n)
	}
	// Same prefix, different key: found by prefix, refused by Argon2id.
	forged := key[:PrefixLen] + strings.Repeat("x", len(key)-PrefixLen)
	if _, err := a.Authenticate(ctx, []byte(forged)); !errors.Is(err, errUnknown) {
		t.Fatalf("a key sharing the prefix: %v, want unknown", err)
	}
	// A malformed stored hash is skipped, not fatal.
	bad := store.APIKey{UserID: f.user.ID, Name: "broken", Prefix: key[:PrefixLen], Argon2: "$argon2id$v=19$garbage", Scopes: "inference"}
	if err := f.st.CreateKey(ctx, &bad); err != nil {
		t.Fatal(err)
	}
	clk.Add(2 * time.Second)
	if _, err := a.Authenticate(ctx, []byte(key)); err != nil {
		t.Fatalf("with a broken neighbour: %v", err)
	}
}

// TestAuthenticate_ReferenceImport: a key_hash as the reference stores it
// authenticates. The hash was made by the C reference library that the
// reference's argon2-cffi binds (libargon2 argon2id_hash_encoded with the
// reference's t=2, m=65536, p=1, over the lowercase hex SHA-256 of the
// key, salt "0123456789abcdef").
func TestAuthenticate_ReferenceImport(t *testing.T) {
	t.Parallel() // seconds of Argon2id under -race; overlap it with the rest
	f := newFixture(t)
	ctx := context.Background()
	const key = "mr2_fGx0lQ2u9Zk7VtNq3hJ8wRbY5cPaE1sDmLoXiK4nT6U"
	const ref = "$argon2id$v=19$m=65536,t=2,p=1$MDEyMzQ1Njc4OWFiY2RlZg$0sBuH/9tdT1RwBTE2ThB5AsoVTS8ikvzmIbI6nAM+0U"
	k := store.APIKey{UserID: f.user.ID, Name: "from reference", Prefix: key[:PrefixLen], Argon2: ref}
	if err := f.st.CreateKey(ctx, &k); err != nil {
		t.Fatal(err)
	}
	p, err := New(Options{Store: f.st}).Authenticate(ctx, []byte(key))
	if err != nil {
		t.Fatal(err)
	}
	// A legacy key without scopes gets what its group allows.
	if p.KeyNum != k.ID || p.Scopes != auth.ScopeInference {
		t.Fatalf("principal %+v", p)
	}
}

func TestAuthenticate_ScopesAndLimitsFromStore(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	adminGroup, err := f.st.GroupByName(ctx, "admin")
	if err != nil {
		t.Fatal(err)
	}
	rpm := 7
	boss := store.User{Username: "boss", GroupID: adminGroup.ID, Active: true, RPM: &rpm}
	if err := f.st.CreateUser(ctx, &boss); err != nil {
		t.Fatal(err)
	}
	staffKey, _ := f.issue(t, f.user.ID, "inference,admin,audit")
	bossKey, _ := f.issue(t, boss.ID, "inference,admin,audit")
	a := New(Options{Store: f.st})
	p, err := a.Authenticate(ctx, []byte(staffKey))
	if err != nil {
		t.Fatal(err)
	}
	if p.Scopes != auth.ScopeInference || p.Admin {
		t.Fatalf("staff key with admin scopes: %+v; want inference only", p)
	}
	p, err = a.Authenticate(ctx, []byte(bossKey))
	if err != nil {
		t.Fatal(err)
	}
	if !p.Admin || !p.Has(auth.ScopeAdmin|auth.ScopeAudit|auth.ScopeInference) {
		t.Fatalf("admin group key: %+v; want every scope", p)
	}
	if p.Limits.RPM != 7 || p.Limits.TokenBudget != adminGroup.TokenBudget {
		t.Fatalf("limits %+v: want the user's RPM override and the group's budget", p.Limits)
	}
}

// TestAuthenticate_NegativeCache: a repeated unknown key costs one store
// read per second, and concurrent attempts share one read.
func TestAuthenticate_NegativeCache(t *testing.T) {
	f := newFixture(t)
	clk := newClock()
	a := New(Options{Store: f.st, Now: clk.Now})
	ctx := context.Background()
	unknown, _, _, _ := NewKey()
	for range 50 {
		if _, err := a.Authenticate(ctx, []byte(unknown)); !errors.Is(err, errUnknown) {
			t.Fatal(err)
		}
	}
	if n := f.st.byHash.Load(); n != 1 {
		t.Fatalf("%d store reads for one unknown key tried 50 times; want 1", n)
	}
	clk.Add(negTTL)
	if _, err := a.Authenticate(ctx, []byte(unknown)); !errors.Is(err, errUnknown) {
		t.Fatal(err)
	}
	if n := f.st.byHash.Load(); n != 2 {
		t.Fatalf("%d store reads after negTTL; want 2", n)
	}

	// Concurrent: hold the store until every caller waits.
	f.st.gate = make(chan struct{})
	other, _, _, _ := NewKey()
	before := f.st.byHash.Load()
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			if _, err := a.Authenticate(ctx, []byte(other)); !errors.Is(err, errUnknown) {
				t.Error(err)
			}
		})
	}
	eventually(t, "the first read reaches the store", func() bool { return f.st.inFlight.Load() == 1 })
	time.Sleep(50 * time.Millisecond) // let the others join the flight
	close(f.st.gate)
	wg.Wait()
	if n := f.st.byHash.Load() - before; n != 1 {
		t.Fatalf("%d store reads for 20 concurrent attempts with one key; want 1", n)
	}
}

// TestAuthenticate_LookupsBounded: a flood of distinct unknown keys never
// has more than maxLookups store reads in flight.
func TestAuthenticate_LookupsBounded(t *testing.T) {
	f := newFixture(t)
	f.st.gate = make(chan struct{})
	a := New(Options{Store: f.st})
	ctx := context.Background()
	const n = 5 * maxLookups
	var wg sync.WaitGroup
	for range n {
		k, _, _, _ := NewKey()
		wg.Go(func() {
			if _, err := a.Authenticate(ctx, []byte(k)); !errors.Is(err, errUnknown) {
				t.Error(err)
			}
		})
	}
	eventually(t, "the store is saturated", func() bool { return f.st.inFlight.Load() == maxLookups })
	time.Sleep(50 * time.Millisecond) // would-be extra readers get their chance to show up
	if got := f.st.inFlight.Load(); got != maxLookups {
		t.Fatalf("%d reads in flight, want %d", got, maxLookups)
	}
	close(f.st.gate)
	wg.Wait()
	if m := f.st.maxInFlight.Load(); m > maxLookups {
		t.Fatalf("%d store reads in flight at once; the bound is %d", m, maxLookups)
	}
	if got := f.st.byHash.Load(); got != n {
		t.Fatalf("%d reads for %d distinct keys", got, n)
	}
}

// TestAuthenticate_CallerGivesUp: a caller whose context ends stops
// waiting for a held store read.
func TestAuthenticate_CallerGivesUp(t *testing.T) {
	f := newFixture(t)
	f.st.gate = make(chan struct{})
	defer close(f.st.gate)
	a := New(Options{Store: f.st})
	key, _ := f.issue(t, f.user.ID, "inference")
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { _, err := a.Authenticate(ctx, []byte(key)); errc <- err }()
	eventually(t, "the read reaches the store", func() bool { return f.st.inFlight.Load() == 1 })
	cancel()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) || errors.Is(err, auth.ErrBadKey) {
			t.Fatalf("err = %v, want context.Canceled and not ErrBadKey", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Authenticate kept waiting after its context ended")
	}
}

// TestAuthenticate_RevokedWithoutRedis: with no Redis a revoked key is
// refused once its entry is a second old, and not before.
func TestAuthenticate_RevokedWithoutRedis(t *testing.T) {
	f := newFixture(t)
	clk := newClock()
	a := New(Options{Store: f.st, Now: clk.Now})
	ctx := context.Background()
	key, k := f.issue(t, f.user.ID, "inference")
	if _, err := a.Authenticate(ctx, []byte(key)); err != nil {
		t.Fatal(err)
	}
	if err := f.st.RevokeKey(ctx, k.ID, time.Now()); err != nil {
		t.Fatal(err)
	}
	clk.Add(staleAfter - time.Millisecond)
	if _, err := a.Authenticate(ctx, []byte(key)); err != nil {
		t.Fatalf("within the second the entry is trusted: %v", err)
	}
	clk.Add(time.Millisecond)
	if _, err := a.Authenticate(ctx, []byte(key)); !errors.Is(err, errRevoked) {
		t.Fatalf("a second after: %v, want revoked", err)
	}
}

// TestAuthenticate_RevokedWithoutRedis_RealClock measures the same on the
// wall clock.
func TestAuthenticate_RevokedWithoutRedis_RealClock(t *testing.T) {
	f := newFixture(t)
	a := New(Options{Store: f.st})
	ctx := context.Background()
	key, k := f.issue(t, f.user.ID, "inference")
	if _, err := a.Authenticate(ctx, []byte(key)); err != nil {
		t.Fatal(err)
	}
	if err := f.st.RevokeKey(ctx, k.ID, time.Now()); err != nil {
		t.Fatal(err)
	}
	took := eventually(t, "revoked key refused", func() bool {
		_, err := a.Authenticate(ctx, []byte(key))
		return errors.Is(err, errRevoked)
	})
	t.Logf("revocation took effect after %v without Redis", took)
}

// TestAuthenticate_StoreDown: an entry younger than CacheTTL bridges a
// store outage; without one the error is not ErrBadKey (a 503, not a 401).
func TestAuthenticate_StoreDown(t *testing.T) {
	f := newFixture(t)
	clk := newClock()
	a := New(Options{Store: f.st, Now: clk.Now, CacheTTL: 10 * time.Second})
	ctx := context.Background()
	key, _ := f.issue(t, f.user.ID, "inference")
	if _, err := a.Authenticate(ctx, []byte(key)); err != nil {
		t.Fatal(err)
	}
	f.st.down.Store(true)
	clk.Add(5 * time.Second)
	if _, err := a.Authenticate(ctx, []byte(key)); err != nil {
		t.Fatalf("a 5s-old entry with the store down: %v", err)
	}
	clk.Add(5 * time.Second)
	_, err := a.Authenticate(ctx, []byte(key))
	if err == nil || errors.Is(err, auth.ErrBadKey) || !errors.Is(err, errStoreDown) {
		t.Fatalf("past CacheTTL with the store down: %v, want the store's error", err)
	}
	other, _, _, _ := NewKey()
	if _, err := a.Authenticate(ctx, []byte(other)); err == nil || errors.Is(err, auth.ErrBadKey) {
		t.Fatalf("an unseen key with the store down: %v, want the store's error", err)
	}
}

// TestAuthenticate_PrefixGate: wrong keys sharing an imported key's
// prefix run Argon2id at most maxPrefixFailures times per window; the
// right key, once cached, keeps working through it, and an uncached
// right key works again when the window ends.
func TestAuthenticate_PrefixGate(t *testing.T) {
	f := newFixture(t)
	clk := newClock()
	a := New(Options{Store: f.st, Now: clk.Now})
	ctx := context.Background()
	key, _, _, _ := NewKey()
	k := store.APIKey{UserID: f.user.ID, Name: "imported", Prefix: key[:PrefixLen], Argon2: cheapPHC(t, key), Scopes: "inference"}
	if err := f.st.CreateKey(ctx, &k); err != nil {
		t.Fatal(err)
	}
	other, _, _, _ := NewKey() // a second imported key, its own prefix
	k2 := store.APIKey{UserID: f.user.ID, Name: "imported too", Prefix: other[:PrefixLen], Argon2: cheapPHC(t, other), Scopes: "inference"}
	if err := f.st.CreateKey(ctx, &k2); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Authenticate(ctx, []byte(key)); err != nil {
		t.Fatal(err)
	}
	before := a.argonRuns.Load()
	for i := range 3 * maxPrefixFailures {
		forged := key[:PrefixLen] + fmt.Sprintf("%0*d", len(key)-PrefixLen, i)
		if _, err := a.Authenticate(ctx, []byte(forged)); !errors.Is(err, auth.ErrBadKey) {
			t.Fatalf("wrong key %d: %v, want a bad key", i, err)
		}
	}
	if n := a.argonRuns.Load() - before; n != maxPrefixFailures {
		t.Fatalf("%d wrong keys with one prefix ran Argon2id %d times, want %d", 3*maxPrefixFailures, n, maxPrefixFailures)
	}
	// The cached right key is unaffected; another prefix is unaffected.
	if _, err := a.Authenticate(ctx, []byte(key)); err != nil {
		t.Fatalf("the right key during the block: %v", err)
	}
	if _, err := a.Authenticate(ctx, []byte(other)); err != nil {
		t.Fatalf("another imported key during the block: %v", err)
	}
	// Uncached (after its entry aged out), the right key waits for the
	// window; the refusal is not cached as "unknown".
	clk.Add(defaultCacheTTL / 2)
	a.cache = newCache()
	if _, err := a.Authenticate(ctx, []byte(key)); !errors.Is(err, auth.ErrBadKey) {
		t.Fatalf("uncached right key during the block: %v, want refused", err)
	}
	clk.Add(prefixWindow)
	if _, err := a.Authenticate(ctx, []byte(key)); err != nil {
		t.Fatalf("the right key after the window: %v", err)
	}
}

// TestAuthenticate_StaleIfError: with the revocation subscription live, a
// key verified before the store went down keeps working past CacheTTL,
// for StaleIfError; a revocation published meanwhile still stops it (the
// store being down, it is then a store error, not a pass); past
// StaleIfError the store's error comes back.
func TestAuthenticate_StaleIfError(t *testing.T) {
	f := newFixture(t)
	r := testsvc.StartRedis(t)
	clk := newClock()
	a := New(Options{Store: f.st, Redis: redisClient(t, r), Now: clk.Now, CacheTTL: 60 * time.Second, StaleIfError: 5 * time.Minute})
	other := New(Options{Store: f.st, Redis: redisClient(t, r)}) // another replica, publishing
	run(t, a)
	eventually(t, "subscription live", a.live)
	ctx := context.Background()
	key, _ := f.issue(t, f.user.ID, "inference")
	key2, _ := f.issue(t, f.user.ID, "inference")
	for _, k := range []string{key, key2} {
		if _, err := a.Authenticate(ctx, []byte(k)); err != nil {
			t.Fatal(err)
		}
	}
	f.st.down.Store(true)
	// 90 s into the outage: past CacheTTL. The heartbeat keeps the
	// subscription live on the moved clock.
	clk.Add(90 * time.Second)
	eventually(t, "subscription live at the new time", a.live)
	reads := f.st.byHash.Load()
	for range 3 {
		if _, err := a.Authenticate(ctx, []byte(key)); err != nil {
			t.Fatalf("90s into a store outage, a verified key: %v", err)
		}
	}
	if n := f.st.byHash.Load() - reads; n > 1 {
		t.Errorf("%d store reads for three requests a moment apart with the store down, want at most 1", n)
	}

	// A revocation reaches this replica through Redis while the store is
	// down: the key is no longer served from the cache.
	h2 := HashKey([]byte(key2))
	other.Invalidate(ctx, h2[:])
	eventually(t, "the invalidation applied", func() bool {
		_, err := a.Authenticate(ctx, []byte(key2))
		return err != nil
	})
	if _, err := a.Authenticate(ctx, []byte(key2)); errors.Is(err, auth.ErrBadKey) || !errors.Is(err, errStoreDown) {
		t.Errorf("an invalidated key with the store down: %v, want the store's error", err)
	}

	clk.Add(5 * time.Minute)
	eventually(t, "subscription live at the new time", a.live)
	if _, err := a.Authenticate(ctx, []byte(key)); err == nil || !errors.Is(err, errStoreDown) {
		t.Fatalf("past StaleIfError with the store down: %v, want the store's error", err)
	}
	f.st.down.Store(false)
	if _, err := a.Authenticate(ctx, []byte(key)); err != nil {
		t.Fatalf("store back: %v", err)
	}
}

// TestRecheck: a stream's recheck answers as Authenticate would (a
// revoked key or disabled user is refused once the store says so) but
// counts no use of the key.
func TestRecheck(t *testing.T) {
	f := newFixture(t)
	clk := newClock()
	a := New(Options{Store: f.st, Now: clk.Now})
	ctx := context.Background()
	key, k := f.issue(t, f.user.ID, "inference")
	if _, err := a.Authenticate(ctx, []byte(key)); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := a.Recheck(ctx, []byte(key)); err != nil {
			t.Fatalf("a good key rechecked: %v", err)
		}
	}
	if hit, err := a.RecheckCached([]byte(key)); !hit || err != nil {
		t.Fatalf("a good cached key: hit %v %v", hit, err)
	}
	if err := a.FlushUses(ctx); err != nil {
		t.Fatal(err)
	}
	if got, _ := f.st.Key(ctx, k.ID); got.UsageCount != 1 {
		t.Errorf("usage_count %d after one request and three rechecks, want 1", got.UsageCount)
	}
	if err := f.st.RevokeKey(ctx, k.ID, clk.Now()); err != nil {
		t.Fatal(err)
	}
	h := HashKey([]byte(key))
	a.Invalidate(ctx, h[:])
	// Its entry dropped: only the store can answer.
	if hit, err := a.RecheckCached([]byte(key)); hit || err != nil {
		t.Errorf("an invalidated key from the cache: hit %v %v, want a miss", hit, err)
	}
	if err := a.Recheck(ctx, []byte(key)); !errors.Is(err, auth.ErrBadKey) {
		t.Errorf("a revoked key rechecked: %v, want a bad key", err)
	}
	// The store's answer is cached: the refusal is a hit now.
	if hit, err := a.RecheckCached([]byte(key)); !hit || !errors.Is(err, auth.ErrBadKey) {
		t.Errorf("a revoked key from the cache: hit %v %v, want a bad key", hit, err)
	}
	if err := a.Recheck(ctx, []byte("nonsense")); !errors.Is(err, auth.ErrBadKey) {
		t.Errorf("a malformed key rechecked: %v, want a bad key", err)
	}
	if hit, err := a.RecheckCached([]byte("nonsense")); !hit || !errors.Is(err, auth.ErrBadKey) {
		t.Errorf("a malformed key from the cache: hit %v %v, want a bad key", hit, err)
	}
}
