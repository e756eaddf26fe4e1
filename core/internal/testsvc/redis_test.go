package testsvc

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestRedis_StartRestartStop(t *testing.T) {
	r := StartPrivateRedis(t)
	if !pingRedis(r.Addr) {
		t.Fatal("no PONG after start")
	}
	r.Restart()
	if !pingRedis(r.Addr) {
		t.Fatal("no PONG after restart")
	}
	r.Stop()
	if pingRedis(r.Addr) {
		t.Fatal("PONG after stop")
	}
}

// The shared server gives each test a database of its own, empty at the
// start and emptied at the end.
func TestRedis_DatabasesAreSeparate(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := func(r *Redis) *redis.Client {
		c := redis.NewClient(&redis.Options{Addr: r.Addr, DB: r.DB})
		t.Cleanup(func() { c.Close() })
		return c
	}
	var first *Redis
	t.Run("first", func(t *testing.T) {
		first = StartRedis(t)
		if err := client(first).Set(ctx, "k", "a", 0).Err(); err != nil {
			t.Fatal(err)
		}
	})
	a, b := StartRedis(t), StartRedis(t)
	if a.Addr != b.Addr || a.Addr != first.Addr {
		t.Errorf("three calls, servers %s %s %s; want one per test binary", first.Addr, a.Addr, b.Addr)
	}
	if a.DB == b.DB || a.DB == 0 || b.DB == 0 {
		t.Fatalf("databases %d and %d; want two, neither 0", a.DB, b.DB)
	}
	ca, cb := client(a), client(b)
	if err := ca.Set(ctx, "k", "a", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if n, err := cb.Exists(ctx, "k").Result(); err != nil || n != 0 {
		t.Errorf("b sees a's key: %d %v", n, err)
	}
	if n, err := client(&Redis{Addr: first.Addr, DB: first.DB}).DBSize(ctx).Result(); err != nil || n != 0 {
		t.Errorf("the ended test's database holds %d keys (%v), want 0", n, err)
	}
}

func TestRedis_SharedRefusesStop(t *testing.T) {
	r := StartRedis(t)
	ft := &fatalRecorder{TB: t}
	r.t = ft
	func() {
		defer func() { recover() }()
		r.Stop()
	}()
	if !ft.fataled || !pingRedis(r.Addr) {
		t.Errorf("Stop on the shared server: fatal %v, alive %v; want a failed test and a live server", ft.fataled, pingRedis(r.Addr))
	}
}

// fatalRecorder records Fatal instead of ending the test (it panics, to
// stop the caller as Fatal would).
type fatalRecorder struct {
	testing.TB
	fataled bool
}

func (f *fatalRecorder) Fatal(args ...any) { f.fataled = true; panic("fatal") }
