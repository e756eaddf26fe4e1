//go:build !race

package sched

import (
	"context"
	"testing"

	"github.com/mindrouter/mindrouter/sdk/jsonw"
)

// Fair's fast path (a free slot, nobody waiting for the model) allocates
// nothing and starts no timer, recording or not.
func TestFair_FastPathDoesNotAllocate(t *testing.T) {
	reg, _ := registry(t, 4, 4)
	for _, record := range []bool{false, true} {
		f := NewFair(FairOptions{Registry: reg, Record: record})
		ctx, cancel := context.WithCancel(context.Background())
		req := &Request{Model: "m", User: "u"}
		if record {
			// Candidates' storage is kept across requests.
			req.Decision = &Decision{Candidates: make([]Candidate, 0, 4)}
		}
		if n := testing.AllocsPerRun(1000, func() {
			l, err := f.Admit(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			l.Release()
		}); n != 0 {
			t.Fatalf("record=%v: Admit+Release allocates %v times", record, n)
		}
		cancel()
	}
}

// Writing a recorded decision allocates nothing once the writer's buffers
// have grown: the server writes one per request.
func TestDecision_WriteJSONDoesNotAllocate(t *testing.T) {
	d := &Decision{Candidates: []Candidate{{Backend: "a", Score: 0.5}, {Backend: "b", Failed: "healthy"}},
		Chosen: "a", Deficit: -10, Weight: 2, QueueWait: 1500, Position: 3, FairnessWait: 700,
		FleetSlot: FleetSlotClaimed, FleetWait: 400, FleetKey: 1234.5}
	var w jsonw.W
	if n := testing.AllocsPerRun(1000, func() {
		w.Reset()
		d.WriteJSON(&w)
	}); n != 0 {
		t.Fatalf("WriteJSON allocates %v times", n)
	}
}

// A release that hands the slot to a queued request, and a request
// joining the queue, allocate nothing while recording decisions either
// (FairnessWait's bookkeeping included) once the queues have grown.
func TestFair_QueuedRecordDoesNotAllocate(t *testing.T) {
	s := newSim(t, FairOptions{Record: true}, 1)
	f := s.f
	var granted *waiter
	f.onGrant = func(w *waiter) { granted = w }
	reqs := make([]*Request, 101)
	for i := range reqs {
		reqs[i] = &Request{Model: "m", User: string(rune('a' + i%7)), Weight: float64(1 + i%3), EstTokens: 100 + 37*i,
			Decision: &Decision{Candidates: make([]Candidate, 0, 1)}}
	}
	f.mu.Lock()
	held, _, _ := f.try(reqs[0])
	for _, r := range reqs[1:] {
		f.try(r)
	}
	f.mu.Unlock()
	cycle := func() {
		held.Release()
		next := granted.req
		f.putWaiter(granted)
		f.mu.Lock()
		f.try(reqs[0])
		f.mu.Unlock()
		held, reqs[0] = &next.lease, next
	}
	for range 1000 {
		cycle() // every head has been passed over and marked by now
	}
	if n := testing.AllocsPerRun(1000, cycle); n != 0 {
		t.Fatalf("release+enqueue while recording allocates %v times", n)
	}
}
