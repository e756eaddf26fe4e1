package storetest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/core/store"
)

// testSessions: the console's session records (store.Sessions, migration
// 0006), for stores that keep them.
func testSessions(t *testing.T, open func(t *testing.T) store.Store) {
	s := migrated(t, open)
	ss, ok := s.(store.Sessions)
	if !ok {
		t.Fatal("the store does not implement store.Sessions (the console keeps sessions there without Redis)")
	}
	ctx := context.Background()
	now := time.Now().Truncate(time.Millisecond)
	a, b := sha256.Sum256([]byte("a")), sha256.Sum256([]byte("b"))
	if _, err := ss.Session(ctx, a[:], now); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("unknown session: %v, want ErrNotFound", err)
	}
	if err := ss.PutSession(ctx, a[:], []byte(`{"v":1}`), now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := ss.PutSession(ctx, a[:], []byte(`{"v":2}`), now.Add(2*time.Hour)); err != nil { // replaced
		t.Fatal(err)
	}
	if got, err := ss.Session(ctx, a[:], now.Add(90*time.Minute)); err != nil || !bytes.Equal(got, []byte(`{"v":2}`)) {
		t.Fatalf("Session = %s, %v; want the replaced record", got, err)
	}
	if _, err := ss.Session(ctx, a[:], now.Add(2*time.Hour)); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("at its expiry: %v, want ErrNotFound", err)
	}
	if err := ss.PutSession(ctx, b[:], []byte(`{}`), now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	n, err := ss.PruneSessions(ctx, now.Add(30*time.Minute))
	if err != nil || n != 1 {
		t.Fatalf("PruneSessions = %d, %v; want 1 (b)", n, err)
	}
	if err := ss.DeleteSession(ctx, a[:]); err != nil {
		t.Fatal(err)
	}
	if _, err := ss.Session(ctx, a[:], now); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("after DeleteSession: %v", err)
	}
	if err := ss.DeleteSession(ctx, a[:]); err != nil {
		t.Fatalf("deleting a missing session: %v", err)
	}
}
