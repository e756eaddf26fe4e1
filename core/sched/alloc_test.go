//go:build !race

package sched

import (
	"context"
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/core/backend"
)

// The fast path (a free slot) allocates nothing and starts no timer.
func TestLeastLoaded_FastPathDoesNotAllocate(t *testing.T) {
	reg, bs := registry(t, 4, 4)
	s := NewLeastLoaded(reg, time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req := &Request{Model: "m", Exclude: []*backend.Backend{bs[0]}}
	if n := testing.AllocsPerRun(1000, func() {
		l, err := s.Admit(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		l.Release()
	}); n != 0 {
		t.Fatalf("Admit+Release allocates %v times", n)
	}
}
