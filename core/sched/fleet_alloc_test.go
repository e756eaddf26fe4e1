//go:build !race

package sched

import (
	"context"
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/core/internal/testsvc"
)

// With the fleet on, a request that finds an idle slot its replica holds
// takes it without a Redis round trip and without allocating.
func TestFleet_HeldSlotDoesNotAllocate(t *testing.T) {
	rd := testsvc.StartRedis(t)
	r := startReplica(t, "A", 4, FleetOptions{Redis: redisClient(t, rd.Addr), Grace: time.Minute}, FairOptions{})
	ctx := context.Background()
	req := &Request{Model: "m", User: "u"}
	admit := func() {
		l, err := r.f.Admit(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		l.Release()
	}
	admit() // claims the slot
	if n := testing.AllocsPerRun(1000, admit); n != 0 {
		t.Fatalf("Admit+Release with a held slot allocates %v times", n)
	}
	if st := r.fl.Stats(); st.Claims != 1 {
		t.Fatalf("%d claims, want 1: the held slot should have served every request", st.Claims)
	}
}
