package accounts

import (
	"context"
	"testing"
	"time"
)

func TestFlushUses(t *testing.T) {
	f := newFixture(t)
	clk := newClock()
	a := New(Options{Store: f.st, Now: clk.Now})
	ctx := context.Background()
	key, k := f.issue(t, f.user.ID, "inference")
	for range 5 {
		if _, err := a.Authenticate(ctx, []byte(key)); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.FlushUses(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := f.st.Key(ctx, k.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.UsageCount != 5 || got.LastUsedAt == nil || !got.LastUsedAt.Equal(clk.Now()) {
		t.Fatalf("usage_count %d, last_used_at %v; want 5, %v", got.UsageCount, got.LastUsedAt, clk.Now())
	}
	// Nothing new: no write. Then a failed write keeps its counts.
	touches := f.st.touches.Load()
	if err := a.FlushUses(ctx); err != nil || f.st.touches.Load() != touches {
		t.Fatalf("a flush with nothing counted wrote to the store (err %v)", err)
	}
	clk.Add(3 * time.Second)
	for range 2 {
		if _, err := a.Authenticate(ctx, []byte(key)); err != nil {
			t.Fatal(err)
		}
	}
	f.st.down.Store(true)
	if err := a.FlushUses(ctx); err == nil {
		t.Fatal("a failed flush reported success")
	}
	f.st.down.Store(false)
	if _, err := a.Authenticate(ctx, []byte(key)); err != nil {
		t.Fatal(err)
	}
	if err := a.FlushUses(ctx); err != nil {
		t.Fatal(err)
	}
	if got, _ := f.st.Key(ctx, k.ID); got.UsageCount != 8 || !got.LastUsedAt.Equal(clk.Now()) {
		t.Fatalf("after a failed flush: usage_count %d, last_used_at %v; want 8, %v", got.UsageCount, got.LastUsedAt, clk.Now())
	}
}

// TestRun_FlushesOnExit: uses counted just before shutdown reach the
// store when Run returns.
func TestRun_FlushesOnExit(t *testing.T) {
	f := newFixture(t)
	a := New(Options{Store: f.st})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { a.Run(ctx); close(done) }()
	key, k := f.issue(t, f.user.ID, "inference")
	for range 3 {
		if _, err := a.Authenticate(context.Background(), []byte(key)); err != nil {
			t.Fatal(err)
		}
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
	if got, _ := f.st.Key(context.Background(), k.ID); got.UsageCount != 3 {
		t.Fatalf("usage_count %d after Run returned, want 3", got.UsageCount)
	}
}

// TestSweep: entries past CacheTTL and counters nothing can use go, so
// memory follows the keys in use.
func TestSweep(t *testing.T) {
	f := newFixture(t)
	clk := newClock()
	a := New(Options{Store: f.st, Now: clk.Now, CacheTTL: 10 * time.Second})
	ctx := context.Background()
	key, _ := f.issue(t, f.user.ID, "inference")
	if _, err := a.Authenticate(ctx, []byte(key)); err != nil {
		t.Fatal(err)
	}
	if err := a.FlushUses(ctx); err != nil {
		t.Fatal(err)
	}
	a.sweep()
	if a.cache.len() != 1 || len(a.uses) != 1 {
		t.Fatal("a fresh entry was swept")
	}
	clk.Add(10 * time.Second)
	a.sweep()
	if a.cache.len() != 0 {
		t.Fatal("an entry past CacheTTL was kept")
	}
	if len(a.uses) != 1 {
		t.Fatal("a counter was dropped while an entry could still use it")
	}
	clk.Add(11 * time.Second)
	a.sweep()
	if len(a.uses) != 0 {
		t.Fatal("an idle counter was kept")
	}
}
