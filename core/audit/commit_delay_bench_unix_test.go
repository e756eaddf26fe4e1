//go:build unix

package audit

import (
	"context"
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// BenchmarkSerialEvents is the recorder's own cost at a serial client's
// rate: one event every 400 µs (a request at concurrency 1 through the
// gateway), spooled and written to the embedded sink. It reports the
// process's CPU time per event (the spool and sink goroutines, plus the
// pacing loop's, which is the same for every delay) and group commits
// (fsyncs) per event, for CommitDelay off and at 1 and 2 ms. CPU time,
// unlike wall time, holds still on a loaded machine.
func BenchmarkSerialEvents(b *testing.B) {
	for _, bc := range []struct {
		name  string
		delay time.Duration
	}{{"delay=off", -1}, {"delay=1ms", time.Millisecond}, {"delay=2ms", 2 * time.Millisecond}} {
		b.Run(bc.name, func(b *testing.B) {
			r, err := New(Options{Dir: b.TempDir(), EmbeddedPath: filepath.Join(b.TempDir(), "audit.db"),
				CommitDelay: bc.delay, Log: testLog(b)})
			if err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			ran := make(chan struct{})
			go func() { _ = r.Run(ctx); close(ran) }()
			waitRunning(b, r)
			o := testOutcome(1)
			ids := make([]string, b.N)
			for i := range ids {
				ids[i] = fmt.Sprintf("serial-%09d", i)
			}
			cpu0 := cpuTime(b)
			b.ResetTimer()
			next := time.Now()
			for i := range b.N {
				o.RequestID = ids[i]
				r.Observe(o)
				next = next.Add(400 * time.Microsecond)
				time.Sleep(time.Until(next))
			}
			cctx, ccancel := context.WithTimeout(context.Background(), time.Minute)
			defer ccancel()
			if err := r.Close(cctx); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			<-ran
			if r.Written() != uint64(b.N) {
				b.Fatalf("%d of %d written", r.Written(), b.N)
			}
			b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(time.Microsecond)/float64(b.N), "cpu-µs/event")
			b.ReportMetric(float64(r.sp.commits.Load())/float64(b.N), "fsyncs/event")
		})
	}
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
