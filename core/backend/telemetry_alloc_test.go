//go:build !race

package backend

import (
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/sdk/canon"
)

// Observing and reading the averages, which the server and the scorer do
// for every request, allocates nothing.
func TestTelemetry_DoesNotAllocate(t *testing.T) {
	b := testRegistry(t).Backends()[0]
	b.SetStatus(&Status{Healthy: true, Models: map[string]canon.DiscoveredModel{"m": {Name: "m", Loaded: true}}}, nil)
	if n := testing.AllocsPerRun(1000, func() {
		b.ObserveTTFB(30 * time.Millisecond)
		b.ObserveLatency(time.Second)
		b.ObserveTokens(100, time.Second)
		_ = b.Telemetry()
		_ = b.GPU()
		b.MarkLoaded("m") // already loaded
	}); n != 0 {
		t.Fatalf("telemetry allocates %v times", n)
	}
}
