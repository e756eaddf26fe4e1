package accounts

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/core/auth"
	"github.com/mindrouter/mindrouter/core/store"
)

func TestEnsureAdmin(t *testing.T) {
	st := openStore(t) // no seeded groups: EnsureAdmin makes "admin"
	ctx := context.Background()
	const key = "mr2_0123456789abcdef" // as short as allowed
	u, err := EnsureAdmin(ctx, st, key)
	if err != nil {
		t.Fatal(err)
	}
	again, err := EnsureAdmin(ctx, st, key)
	if err != nil || again.ID != u.ID {
		t.Fatalf("second EnsureAdmin: %+v, %v; want user %d", again, err, u.ID)
	}
	if keys, _ := st.Keys(ctx, u.ID); len(keys) != 1 {
		t.Fatalf("%d keys after two runs, want 1", len(keys))
	}
	p, err := New(Options{Store: st}).Authenticate(ctx, []byte(key))
	if err != nil {
		t.Fatal(err)
	}
	if p.User != AdminUser || p.Group != AdminGroup || !p.Admin || !p.Has(auth.ScopeInference|auth.ScopeAdmin|auth.ScopeAudit) {
		t.Fatalf("bootstrap principal %+v", p)
	}

	// The environment wins over the store: a revoked bootstrap key and a
	// deactivated admin come back.
	keys, _ := st.Keys(ctx, u.ID)
	if err := st.RevokeKey(ctx, keys[0].ID, time.Now()); err != nil {
		t.Fatal(err)
	}
	u.Active = false
	if err := st.UpdateUser(ctx, &u); err != nil {
		t.Fatal(err)
	}
	if _, err := EnsureAdmin(ctx, st, key); err != nil {
		t.Fatal(err)
	}
	if _, err := New(Options{Store: st}).Authenticate(ctx, []byte(key)); err != nil {
		t.Fatalf("after EnsureAdmin on a revoked key and inactive user: %v", err)
	}
}

// TestEnsureAdmin_DemotedGroup: a bootstrap key whose group lost is_admin
// has no admin scope; the next EnsureAdmin (a restart) gives it back.
func TestEnsureAdmin_DemotedGroup(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	const key = "mr2_0123456789abcdef"
	if _, err := EnsureAdmin(ctx, st, key); err != nil {
		t.Fatal(err)
	}
	g, err := st.GroupByName(ctx, AdminGroup)
	if err != nil {
		t.Fatal(err)
	}
	g.IsAdmin = false
	if err := st.UpdateGroup(ctx, &g); err != nil {
		t.Fatal(err)
	}
	if p, err := New(Options{Store: st}).Authenticate(ctx, []byte(key)); err != nil || p.Has(auth.ScopeAdmin) {
		t.Fatalf("demoted: %+v, %v; want no admin scope", p, err)
	}
	if _, err := EnsureAdmin(ctx, st, key); err != nil {
		t.Fatal(err)
	}
	p, err := New(Options{Store: st}).Authenticate(ctx, []byte(key))
	if err != nil || !p.Admin || !p.Has(auth.ScopeInference|auth.ScopeAdmin|auth.ScopeAudit) {
		t.Fatalf("after EnsureAdmin on a demoted admin group: %+v, %v", p, err)
	}
}

func TestEnsureAdmin_BadKey(t *testing.T) {
	st := openStore(t)
	for _, k := range []string{"", "mr2_short", "sk-0123456789abcdefghij", "mr2_" + string(make([]byte, 300))} {
		if _, err := EnsureAdmin(context.Background(), st, k); err == nil {
			t.Errorf("EnsureAdmin accepted %q", k)
		}
	}
	// A key already another user's is not taken over.
	if err := st.SeedGroups(context.Background()); err != nil {
		t.Fatal(err)
	}
	f := &fixture{st: &countingStore{Store: st}}
	g, _ := st.GroupByName(context.Background(), "staff")
	other := f.newUser(t, "eve", g.ID)
	key, _ := f.issue(t, other.ID, "inference")
	if _, err := EnsureAdmin(context.Background(), st, key); err == nil {
		t.Fatal("EnsureAdmin took over another user's key")
	}
}

// TestEnsureAdmin_Concurrent: replicas starting at once, each with its own
// connection to one database, end with one group, user and key.
func TestEnsureAdmin_Concurrent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	stores := []store.Store{openStoreAt(t, path), openStoreAt(t, path)}
	const key = "mr2_concurrent-bootstrap-key-0001"
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Go(func() {
			_, err := EnsureAdmin(context.Background(), stores[i%2], key)
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	groups, _ := stores[0].Groups(ctx)
	users, _, _ := stores[0].Users(ctx, store.UserFilter{})
	keys, _ := stores[0].Keys(ctx, 0)
	if len(groups) != 1 || len(users) != 1 || len(keys) != 1 {
		t.Fatalf("%d groups, %d users, %d keys; want one each", len(groups), len(users), len(keys))
	}
	if _, err := New(Options{Store: stores[1]}).Authenticate(ctx, []byte(key)); err != nil {
		t.Fatal(err)
	}
	if _, err := stores[0].GroupByName(ctx, AdminGroup); errors.Is(err, store.ErrNotFound) {
		t.Fatal("no admin group")
	}
}
