//go:build !race

package accounts

import (
	"context"
	"testing"
)

// TestAuthenticate_CacheHitAllocs: the hit path allocates nothing.
func TestAuthenticate_CacheHitAllocs(t *testing.T) {
	f := newFixture(t)
	a := New(Options{Store: f.st, Now: newClock().Now})
	key, _ := f.issue(t, f.user.ID, "inference")
	ctx := context.Background()
	if _, err := a.Authenticate(ctx, []byte(key)); err != nil {
		t.Fatal(err)
	}
	k := []byte(key)
	reads := f.st.byHash.Load()
	allocs := testing.AllocsPerRun(1000, func() {
		if _, err := a.Authenticate(ctx, k); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per cache hit, want 0", allocs)
	}
	if f.st.byHash.Load() != reads {
		t.Fatal("the runs were not cache hits")
	}
}
