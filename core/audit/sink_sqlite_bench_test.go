//go:build unix

package audit

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkSQLiteSink is the embedded sink's cost per row: batches of
// rows (as the sink goroutine writes them: a second's worth at a serial
// client's rate, and a small one) in one transaction each.
func BenchmarkSQLiteSink(b *testing.B) {
	for _, n := range []int{1000, 7} {
		b.Run(fmt.Sprintf("batch=%d", n), func(b *testing.B) {
			db, err := OpenEmbedded(filepath.Join(b.TempDir(), "audit.db"))
			if err != nil {
				b.Fatal(err)
			}
			s := newSQLiteSink(db, true)
			defer s.close()
			evs := make([]Event, n)
			for i := range evs {
				fillEvent(&evs[i], testOutcome(i), "gw")
				evs[i].RequestBody, evs[i].ResponseBody = string(testOutcome(i).Request), string(testOutcome(i).Response)
			}
			ctx := context.Background()
			b.ReportAllocs()
			cpu0 := cpuTime(b)
			b.ResetTimer()
			for i := 0; i < b.N; i += n {
				for j := range evs {
					evs[j].RequestID = fmt.Sprintf("req-%d-%d", i, j)
				}
				if err := s.write(ctx, evs, false); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(time.Microsecond)/float64(b.N), "cpu-µs/row")
		})
	}
}
