package accounts

import (
	"context"
	"encoding/hex"
	"errors"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mindrouter/mindrouter/core/internal/testsvc"
	"github.com/mindrouter/mindrouter/core/internal/testutil"
	"github.com/mindrouter/mindrouter/core/store"
	"github.com/mindrouter/mindrouter/core/store/sqlstore"
)

// clock is a settable time source; it moves only when told to.
type clock struct{ ns atomic.Int64 }

func newClock() *clock {
	c := &clock{}
	c.ns.Store(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC).UnixNano())
	return c
}

func (c *clock) Now() time.Time                  { return time.Unix(0, c.ns.Load()).UTC() }
func (c *clock) Add(d time.Duration)             { c.ns.Add(int64(d)) }
func (c *clock) After(d time.Duration) time.Time { return c.Now().Add(d) }

// countingStore is the real store with its credential reads counted,
// and optionally held (gate) or failing (down).
type countingStore struct {
	store.Store
	byHash, byPrefix, touches atomic.Int64
	inFlight, maxInFlight     atomic.Int64
	gate                      chan struct{} // when set, each read waits for a value
	down                      atomic.Bool   // reads and TouchKeys fail
}

var errStoreDown = errors.New("test: store down")

func (s *countingStore) CredentialByHash(ctx context.Context, hash []byte) (store.Credential, error) {
	s.byHash.Add(1)
	n := s.inFlight.Add(1)
	defer s.inFlight.Add(-1)
	for {
		m := s.maxInFlight.Load()
		if n <= m || s.maxInFlight.CompareAndSwap(m, n) {
			break
		}
	}
	if s.gate != nil {
		select {
		case <-s.gate:
		case <-ctx.Done():
			return store.Credential{}, ctx.Err()
		}
	}
	if s.down.Load() {
		return store.Credential{}, errStoreDown
	}
	return s.Store.CredentialByHash(ctx, hash)
}

func (s *countingStore) CredentialsByPrefix(ctx context.Context, prefix string) ([]store.Credential, error) {
	s.byPrefix.Add(1)
	if s.down.Load() {
		return nil, errStoreDown
	}
	return s.Store.CredentialsByPrefix(ctx, prefix)
}

func (s *countingStore) TouchKeys(ctx context.Context, uses []store.KeyUse) error {
	s.touches.Add(1)
	if s.down.Load() {
		return errStoreDown
	}
	return s.Store.TouchKeys(ctx, uses)
}

// openStore is a migrated, seeded SQLite store in the test's directory.
func openStore(t testing.TB) *sqlstore.Store {
	t.Helper()
	return openStoreAt(t, filepath.Join(t.TempDir(), "db"))
}

func openStoreAt(t testing.TB, path string) *sqlstore.Store {
	t.Helper()
	ctx := context.Background()
	st, err := sqlstore.Open(ctx, sqlstore.SQLite, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return st
}

// fixture is a store with the default groups and one active user in
// "staff".
type fixture struct {
	st    *countingStore
	staff store.Group
	user  store.User
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	ctx := context.Background()
	st := openStore(t)
	if err := st.SeedGroups(ctx); err != nil {
		t.Fatal(err)
	}
	f := &fixture{st: &countingStore{Store: st}}
	var err error
	if f.staff, err = st.GroupByName(ctx, "staff"); err != nil {
		t.Fatal(err)
	}
	f.user = f.newUser(t, "ann", f.staff.ID)
	return f
}

func (f *fixture) newUser(t testing.TB, name string, groupID int64) store.User {
	t.Helper()
	u := store.User{Username: name, GroupID: groupID, Active: true}
	if err := f.st.CreateUser(context.Background(), &u); err != nil {
		t.Fatal(err)
	}
	return u
}

// issue stores a fresh issued key for userID; edit may change the row
// before it is stored.
func (f *fixture) issue(t testing.TB, userID int64, scopes string, edit ...func(*store.APIKey)) (string, store.APIKey) {
	t.Helper()
	key, prefix, hash, err := NewKey()
	if err != nil {
		t.Fatal(err)
	}
	k := store.APIKey{UserID: userID, Name: "test", Prefix: prefix, Hash: hash, Scopes: scopes, Status: store.KeyActive}
	for _, e := range edit {
		e(&k)
	}
	if err := f.st.CreateKey(context.Background(), &k); err != nil {
		t.Fatal(err)
	}
	return key, k
}

// redisClient is a client of r closed with the test.
func redisClient(t testing.TB, r *testsvc.Redis) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: r.Addr, DB: r.DB, DialTimeout: time.Second,
		ReadTimeout: time.Second, WriteTimeout: time.Second, MaxRetries: -1})
	t.Cleanup(func() { c.Close() })
	return c
}

// run starts a.Run until the test ends and waits for it to return.
func run(t testing.TB, a *Authenticator) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { a.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

// eventually polls cond every 5 ms until it holds or 10 s pass (a hang
// detector, not a speed bound) and returns how long it took.
func eventually(t testing.TB, what string, cond func() bool) time.Duration {
	t.Helper()
	return testutil.WaitFor(t, what, 10*time.Second, cond)
}

// live reports whether a's revocation subscription counts as live now.
func (a *Authenticator) live() bool { return a.mono(a.now()) < a.liveUntil.Load() }

func hexOf(b []byte) string { return hex.EncodeToString(b) }

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
