package quota

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mindrouter/mindrouter/core/auth"
	"github.com/mindrouter/mindrouter/core/internal/testsvc"
	"github.com/mindrouter/mindrouter/core/store"
)

// clock is a fake clock shared by the replicas of a test.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock {
	return &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// redisClient connects to r with short timeouts, as the gateway does.
func redisClient(t testing.TB, r *testsvc.Redis) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: r.Addr, DB: r.DB, DialTimeout: 200 * time.Millisecond,
		ReadTimeout: 200 * time.Millisecond, WriteTimeout: 200 * time.Millisecond, MaxRetries: 1,
		DialerRetries: 1})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// memStore is the part of store.Store the limiter uses, in memory.
type memStore struct {
	store.Store // nil: any other method panics
	mu          sync.Mutex
	rows        map[int64]store.Usage
	saves       int
	fail        error
}

func newMemStore() *memStore { return &memStore{rows: map[int64]store.Usage{}} }

func (m *memStore) Usage(_ context.Context, id int64) (store.Usage, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return store.Usage{}, m.fail
	}
	return m.rows[id], nil
}

func (m *memStore) SaveUsage(_ context.Context, rows []store.Usage) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return m.fail
	}
	m.saves++
	for _, r := range rows {
		old := m.rows[r.UserID]
		r.LifetimeTokens = max(r.LifetimeTokens, old.LifetimeTokens)
		m.rows[r.UserID] = r
	}
	return nil
}

var errStoreDown = errors.New("store down")

func principal(uid int64, lim auth.Limits) *auth.Principal {
	return &auth.Principal{UserID: uid, User: "u", Scopes: auth.ScopeInference, Limits: lim}
}

// deniedKind returns the kind of a *Denied, or "" for nil, failing on any
// other error.
func deniedKind(t testing.TB, err error) string {
	t.Helper()
	if err == nil {
		return ""
	}
	var d *Denied
	if !errors.As(err, &d) {
		t.Fatalf("error %v (%T) is not a *Denied", err, err)
	}
	return d.Kind
}

// timed fails the test when f takes longer than bound (a hang detector).
func timed(t testing.TB, what string, bound time.Duration, f func()) {
	t.Helper()
	start := time.Now()
	f()
	if d := time.Since(start); d > bound {
		t.Fatalf("%s took %v (bound %v)", what, d, bound)
	}
}

func storeRow(uid int64, periodStart time.Time, used, life int64) store.Usage {
	return store.Usage{UserID: uid, PeriodStart: periodStart, TokensUsed: used, LifetimeTokens: life}
}
