//go:build !race

package quota

import (
	"testing"

	"github.com/mindrouter/mindrouter/core/auth"
)

// TestAdmitReserveDone_NoAllocation is the hot path's allocation budget:
// a user with headroom costs nothing on the heap, with or without Redis.
func TestAdmitReserveDone_NoAllocation(t *testing.T) {
	for name, l := range benchLimiters(t) {
		for _, lim := range []auth.Limits{benchLimits, {}} {
			p := principal(200, lim)
			for range 100 { // leases taken, tickets in the pool
				admitReserveDone(t, l, p)
			}
			// Within one lease the batch covers every request here; a
			// refill, once a lease, is what the benchmark amortises.
			if n := testing.AllocsPerRun(1000, func() { admitReserveDone(t, l, p) }); n != 0 {
				t.Errorf("%s, limits %+v: %.2f allocations per request", name, lim, n)
			}
		}
	}
}
