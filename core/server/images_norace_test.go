//go:build !race

package server

import "testing"

// withImages asks needImages of every request call's result: a call that
// succeeded costs no allocation.
func TestNeedImages_NilAllocs(t *testing.T) {
	if n := testing.AllocsPerRun(1000, func() { _, _ = needImages(nil) }); n != 0 {
		t.Fatalf("needImages(nil) allocates %v times", n)
	}
}
