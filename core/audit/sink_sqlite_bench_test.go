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

// BenchmarkSQLiteSinkStreams is the embedded sink's cost per request for
// requests that outlive a sink batch (streams): their admission rows go
// in one batch, their finished rows (a 6 KB streamed response each) in a
// later one, as upserts over the started rows. rows=started reports the
// first batch's cost per row, rows=finished the second's; rows=alone is
// the finished rows with no started rows before them.
func BenchmarkSQLiteSinkStreams(b *testing.B) {
	const n = 1000
	resp := make([]byte, 0, 6<<10)
	for len(resp) < 6<<10 {
		resp = append(resp, `data: {"id":"chatcmpl-x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":" word"}}]}`+"\n\n"...)
	}
	for _, which := range []string{RowStarted, RowFinished, "alone"} {
		b.Run("rows="+which, func(b *testing.B) {
			db, err := OpenEmbedded(filepath.Join(b.TempDir(), "audit.db"))
			if err != nil {
				b.Fatal(err)
			}
			s := newSQLiteSink(db, true)
			defer s.close()
			started, finished := make([]Event, n), make([]Event, n)
			for i := range started {
				o := testOutcome(i)
				fillEvent(&started[i], o, "gw")
				started[i].State = RowStarted
				fillEvent(&finished[i], o, "gw")
				finished[i].RequestBody, finished[i].ResponseBody = string(o.Request), string(resp)
			}
			ctx := context.Background()
			var cpu time.Duration
			for i := 0; i < b.N; i += n {
				for j := range started {
					id := fmt.Sprintf("req-%d-%d", i, j)
					started[j].RequestID, finished[j].RequestID = id, id
				}
				cpu0 := cpuTime(b)
				if which != "alone" {
					if err := s.write(ctx, started, false); err != nil {
						b.Fatal(err)
					}
				}
				cpu1 := cpuTime(b)
				if err := s.write(ctx, finished, false); err != nil {
					b.Fatal(err)
				}
				if which == RowStarted {
					cpu += cpu1 - cpu0
				} else {
					cpu += cpuTime(b) - cpu1
				}
			}
			b.ReportMetric(float64(cpu)/float64(time.Microsecond)/float64(b.N), "cpu-µs/row")
		})
	}
}
