//go:build !race

package server

import (
	"testing"
	"time"
)

func TestMetrics_ObserveAllocs(t *testing.T) {
	m := newMetrics()
	m.observe("chat", 200, time.Millisecond) // first sight of the key allocates
	if n := testing.AllocsPerRun(1000, func() { m.observe("chat", 200, time.Millisecond) }); n != 0 {
		t.Fatalf("observe allocates %v times per request", n)
	}
}
