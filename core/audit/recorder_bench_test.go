package audit

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/core/internal/testsvc"
	"github.com/mindrouter/mindrouter/core/outcome"
)

// BenchmarkObserve is the hot-path cost of recording one request:
// Observe alone (content off, as by default). The queue is emptied
// outside the timer, so the figure leaves out the spool goroutine, which
// runs on another core in a gateway. With a scheduler decision, copying
// its JSON is one allocation.
func BenchmarkObserve(b *testing.B) {
	for _, bc := range []struct {
		name     string
		decision []byte
	}{{"decision=none", nil}, {"decision=json", []byte(`{"chosen":"gpu1-vllm","scores":[0.7,0.2]}`)}} {
		b.Run(bc.name, func(b *testing.B) {
			r, err := New(Options{Dir: b.TempDir(), EmbeddedPath: filepath.Join(b.TempDir(), "audit.db"),
				MaxQueue: 1 << 16, Log: quietLog()})
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close(context.Background())
			o := testOutcome(1)
			o.Decision = bc.decision
			b.ReportAllocs()
			for i := range b.N {
				if i%(1<<15) == 0 {
					b.StopTimer()
					r.mu.Lock()
					clear(r.queue)
					r.queue = r.queue[:0]
					r.mu.Unlock()
					b.StartTimer()
				}
				r.Observe(o)
			}
			b.StopTimer()
			if r.Dropped() > 0 {
				b.Fatalf("%d dropped", r.Dropped())
			}
		})
	}
}

// BenchmarkIngest is end-to-end throughput into ClickHouse: Observe,
// spool, batches of 10,000 rows, until every row is acknowledged.
func BenchmarkIngest(b *testing.B) {
	chs := testsvc.StartClickHouse(b)
	r, err := New(Options{Dir: b.TempDir(), ClickHouse: chOptions(chs), MaxQueue: 1 << 22, Log: testLog(b)})
	if err != nil {
		b.Fatal(err)
	}
	start(b, r)
	// The migration runs before the first write: not part of the figure.
	warm := testOutcome(1)
	warm.RequestID = "warm-up"
	r.Observe(warm)
	waitWritten(b, r, 1)
	outs := make([]*outcome.Outcome, 1000)
	for i := range outs {
		outs[i] = testOutcome(i)
	}
	ids := make([]string, b.N)
	for i := range ids {
		ids[i] = fmt.Sprintf("bench-%09d", i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	t0 := time.Now()
	for i := range b.N {
		o := outs[i%len(outs)]
		o.RequestID = ids[i]
		r.Observe(o)
	}
	waitWritten(b, r, uint64(b.N)+1)
	b.ReportMetric(float64(b.N)/time.Since(t0).Seconds(), "rows/s")
	if r.Dropped() > 0 {
		b.Fatalf("%d events dropped", r.Dropped())
	}
}

func waitWritten(b *testing.B, r *Recorder, n uint64) {
	deadline := time.Now().Add(5 * time.Minute)
	for r.Written() < n {
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d written after 5 minutes", r.Written(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
