package score

import (
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/core/backend"
	"github.com/mindrouter/mindrouter/core/sched"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// benchBackends is n backends with every figure known and different:
// loaded or not, GPU figures, latency and speed EMAs, priorities, vLLM
// load, some slots taken; the last one is draining (fails a constraint).
func benchBackends(tb testing.TB, n int) []*backend.Backend {
	tb.Helper()
	all := backends(tb, n)
	for i, b := range all {
		m := canon.DiscoveredModel{Name: "m", Loaded: i%2 == 0, SizeBytes: 8 << 30,
			Capabilities: []string{canon.CapCompletion, canon.CapTools}}
		setModel(b, m, float64(i), float64(i%3), float64(i)/float64(n))
		b.SetGPU(&backend.GPUStats{GPUs: 1, HasUtil: true, Util: float64(i) / float64(n), HasMem: true, MemTotal: 80 << 30})
		b.ObserveTTFB(time.Duration(100+10*i) * time.Millisecond)
		b.ObserveLatency(time.Duration(1+i) * time.Second)
		b.ObserveTokens(100+i, time.Second)
		b.SetPriority(i % 3)
		for range i % 4 {
			b.TryAcquire()
		}
	}
	_ = all[n-1].SetState("draining")
	return all
}

// BenchmarkRank ranks 8 backends (one draining, one excluded) for a
// request, without and with recording the decision.
func BenchmarkRank(b *testing.B) {
	all := benchBackends(b, 8)
	s := New(DefaultWeights())
	req := &sched.Request{Model: "m", Exclude: []*backend.Backend{all[3]}}
	dst := make([]*backend.Backend, 0, len(all))
	b.Run("record=off", func(b *testing.B) {
		b.ReportAllocs()
		d := &sched.Decision{}
		for b.Loop() {
			dst, _ = s.Rank(dst[:0], req, all, d)
		}
	})
	b.Run("record=on", func(b *testing.B) {
		b.ReportAllocs()
		d := &sched.Decision{Record: true}
		for b.Loop() {
			d.Reset()
			dst, _ = s.Rank(dst[:0], req, all, d)
		}
	})
}
