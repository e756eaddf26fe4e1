package accounts

import (
	"context"
	"testing"

	"github.com/mindrouter/mindrouter/core/internal/testsvc"
)

// benchAuthenticator is an Authenticator with a live revocation
// subscription (so entries are trusted for CacheTTL) and one cached key.
func benchAuthenticator(b *testing.B) (*Authenticator, []byte) {
	b.Helper()
	f := newFixture(b)
	a := New(Options{Store: f.st, Redis: redisClient(b, testsvc.StartRedis(b))})
	run(b, a)
	eventually(b, "subscription live", a.live)
	key, _ := f.issue(b, f.user.ID, "inference")
	if _, err := a.Authenticate(context.Background(), []byte(key)); err != nil {
		b.Fatal(err)
	}
	return a, []byte(key)
}

// BenchmarkAuthenticate_CacheHit is the per-request cost of a known key:
// SHA-256, a shard read lock, the clock, two atomics.
func BenchmarkAuthenticate_CacheHit(b *testing.B) {
	a, key := benchAuthenticator(b)
	ctx := context.Background()
	b.ReportAllocs()
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := a.Authenticate(ctx, key); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := a.Authenticate(ctx, key); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}
