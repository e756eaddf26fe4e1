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

// Recording a whole outcome (stages, backend, TTFT, tokens) does not
// allocate once its labels were seen.
func TestMetrics_ObserveOutcomeAllocs(t *testing.T) {
	reg := metricsRegistry(t)
	m := newMetrics()
	o := streamedOutcome("gpu1", "qwen3-8b")
	m.observeOutcome(o, reg)
	if n := testing.AllocsPerRun(1000, func() { m.observeOutcome(o, reg) }); n != 0 {
		t.Fatalf("observeOutcome allocates %v times per request", n)
	}
}
