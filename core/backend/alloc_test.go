//go:build !race

package backend

import (
	"context"
	"testing"
	"time"
)

func TestBackend_FastPathsDoNotAllocate(t *testing.T) {
	r := testRegistry(t)
	a := r.byName["a"]
	setStatus(a, true, "m")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if n := testing.AllocsPerRun(100, func() {
		_ = a.AcquireContext(ctx, time.Second)
		a.Release()
	}); n != 0 {
		t.Errorf("AcquireContext with a free slot allocates %v", n)
	}
	if n := testing.AllocsPerRun(100, func() { r.Serving() }); n != 0 {
		t.Errorf("Serving allocates %v", n)
	}
}
