//go:build !race

package sched

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/core/internal/testsvc"
)

// With the fleet on, a request that finds an idle slot its replica holds
// takes it without a Redis round trip and without allocating.
// So does it while recording decisions (the fleet's fields included).
func TestFleet_HeldSlotDoesNotAllocate(t *testing.T) {
	rd := testsvc.StartRedis(t)
	for _, record := range []bool{false, true} {
		t.Run(fmt.Sprint("record=", record), func(t *testing.T) { heldSlotAllocs(t, rd, record) })
	}
}

func heldSlotAllocs(t *testing.T, rd *testsvc.Redis, record bool) {
	r := startReplica(t, "A", 4, FleetOptions{Redis: redisClient(t, rd), Grace: time.Minute,
		Prefix: fmt.Sprintf("alloc%v:", record)}, FairOptions{Record: record})
	ctx := context.Background()
	req := &Request{Model: "m", User: "u"}
	if record {
		req.Decision = &Decision{Candidates: make([]Candidate, 0, 4)}
	}
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
	if record && req.Decision.FleetSlot != FleetSlotHeld {
		t.Fatalf("decision %+v, want a held fleet slot", req.Decision)
	}
}
