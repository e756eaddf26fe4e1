//go:build !race

package sched

import (
	"context"
	"testing"
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
