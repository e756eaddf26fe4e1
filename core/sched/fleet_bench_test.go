package sched

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/core/internal/testsvc"
)

// The fleet's acquire path, one replica on a real Redis: Admit+Release
// of an uncontended request when this replica holds an idle slot (no
// Redis round trip), and when it holds none (a claim: one round trip,
// plus the loop's wake-ups).
func BenchmarkFleet_Acquire(b *testing.B) {
	rd := testsvc.StartRedis(b)
	ctx := context.Background()
	b.Run("held_slot", func(b *testing.B) {
		r := startReplica(b, "bh", 16, FleetOptions{Redis: redisClient(b, rd), Grace: time.Minute, Prefix: "bh:"}, FairOptions{})
		req := &Request{Model: "m", User: "u"}
		l, err := r.f.Admit(ctx, req) // the first claims the slot
		if err != nil {
			b.Fatal(err)
		}
		l.Release()
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			l, err := r.f.Admit(ctx, req)
			if err != nil {
				b.Fatal(err)
			}
			l.Release()
		}
		b.StopTimer()
		if st := r.fl.Stats(); st.Claims != 1 {
			b.Fatalf("%d claims, want the first only", st.Claims)
		}
	})
	b.Run("redis_round_trip", func(b *testing.B) {
		r := startReplica(b, "br", 16, FleetOptions{Redis: redisClient(b, rd), Grace: time.Minute, Prefix: "br:"}, FairOptions{})
		req := &Request{Model: "m", User: "u"}
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			l, err := r.f.Admit(ctx, req)
			if err != nil {
				b.Fatal(err)
			}
			l.Release()
			b.StopTimer()
			giveBack(b, r)
			b.StartTimer()
		}
		b.StopTimer()
		if st := r.fl.Stats(); st.Claims < int64(b.N) {
			b.Fatalf("%d claims for %d requests", st.Claims, b.N)
		}
	})
}

// giveBack has r's loop return its idle slots now, and waits for it.
func giveBack(b *testing.B, r *replica) {
	r.fl.mu.Lock()
	for _, s := range r.fl.slots {
		s.lastPut = time.Time{}
		r.fl.markLocked(s)
	}
	r.fl.mu.Unlock()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if held, _ := r.fl.Held(r.b); held == 0 {
			return
		}
		if time.Now().After(deadline) {
			b.Fatal("idle slots not given back")
		}
		runtime.Gosched()
	}
}
