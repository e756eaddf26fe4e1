package telemetry

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/mindrouter/mindrouter/core/backend"
)

// Recorder samples a registry's backends and node readings into a Store.
// Sample is called after each discovery round; the write happens on the
// recorder's own goroutine (Run), so a slow store never holds up
// discovery: a sample that finds the previous one still being written is
// dropped (and counted in the log).
type Recorder struct {
	reg       *backend.Registry
	st        Store
	replica   string
	retention time.Duration
	log       *slog.Logger
	now       func() time.Time

	samples chan sample

	mu       sync.Mutex
	lastGPU  map[string]time.Time // node → the poll time last sampled
	lastBack time.Time            // when backends were last sampled
}

type sample struct {
	gpus     []GPUSample
	backends []BackendSample
}

// RecorderOptions configure a Recorder; Registry and Store are required.
type RecorderOptions struct {
	Registry  *backend.Registry
	Store     Store
	Replica   string
	Retention time.Duration // 0: DefaultRetention
	Log       *slog.Logger
	Now       func() time.Time
}

// NewRecorder returns a Recorder; start it with Run.
func NewRecorder(o RecorderOptions) *Recorder {
	r := &Recorder{reg: o.Registry, st: o.Store, replica: o.Replica, retention: o.Retention, log: o.Log, now: o.Now,
		samples: make(chan sample, 1), lastGPU: map[string]time.Time{}}
	if r.retention <= 0 {
		r.retention = DefaultRetention
	}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	r.log = r.log.With("component", "telemetry")
	if r.now == nil {
		r.now = time.Now
	}
	return r
}

// pruneEvery is how often old samples are deleted.
const pruneEvery = time.Hour

// minBackendGap is the least time between two backend samples: a probe
// of one backend (an admin's refresh, a registration) runs the same hook
// as a discovery round and must not crowd the series.
const minBackendGap = time.Second

// Sample takes the registry's current readings (cheap: atomic loads) and
// hands them to Run. A node's reading already sampled (no poll since) is
// not taken again. Safe for concurrent use.
func (r *Recorder) Sample() {
	s := r.collect(r.now())
	if len(s.gpus) == 0 && len(s.backends) == 0 {
		return
	}
	select {
	case r.samples <- s:
	default:
		r.log.Warn("telemetry sample dropped: the previous one is still being written")
	}
}

func (r *Recorder) collect(now time.Time) sample {
	r.mu.Lock()
	defer r.mu.Unlock()
	var s sample
	for _, nr := range r.reg.NodeReadings() {
		if nr.Info == nil || now.Sub(nr.Polled) > time.Hour || !nr.Polled.After(r.lastGPU[nr.Node]) {
			continue // a failed poll has no figures; an old one is not now's; a sampled one is stored
		}
		r.lastGPU[nr.Node] = nr.Polled
		for _, g := range nr.Info.GPUs {
			if g.Error != "" && g.UtilizationGPU == nil && g.MemoryTotalBytes == nil {
				continue
			}
			gs := GPUSample{At: nr.Polled, Node: nr.Node, GPU: g.Index, Name: g.Name,
				UtilPct: intF(g.UtilizationGPU), MemUsed: u64F(g.MemoryUsedBytes), MemTotal: u64F(g.MemoryTotalBytes),
				TempC: intF(g.TemperatureGPU), PowerW: g.PowerDrawWatts}
			s.gpus = append(s.gpus, gs)
		}
	}
	if now.Sub(r.lastBack) < minBackendGap {
		return s
	}
	r.lastBack = now
	for _, b := range r.reg.Backends() {
		bs := BackendSample{At: now, Replica: r.replica, Backend: b.Name, State: b.State(), Breaker: b.BreakerState(),
			InFlight: b.InFlight(), MaxConcurrent: b.Capacity(), Waiting: b.Waiting(),
			LatencyMs: float64(b.Telemetry().Latency) / float64(time.Millisecond)}
		if st := b.Status(); st != nil {
			bs.Healthy = st.Healthy
		}
		s.backends = append(s.backends, bs)
	}
	return s
}

func intF(p *int) *float64 {
	if p == nil {
		return nil
	}
	v := float64(*p)
	return &v
}

func u64F(p *uint64) *float64 {
	if p == nil {
		return nil
	}
	v := float64(*p)
	return &v
}

// Run writes samples and prunes old ones (at start, then hourly) until ctx
// ends.
func (r *Recorder) Run(ctx context.Context) {
	t := time.NewTimer(time.Minute)
	defer t.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case s := <-r.samples:
			wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			err := r.st.Write(wctx, s.gpus, s.backends)
			cancel()
			switch {
			case err != nil && !failing && ctx.Err() == nil:
				failing = true
				r.log.Warn("telemetry samples not stored (logged once until they are again)", "error", err.Error())
			case err == nil && failing:
				failing = false
				r.log.Info("telemetry samples stored again")
			}
		case <-t.C:
			pctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
			if err := r.st.Prune(pctx, r.now().Add(-r.retention)); err != nil && ctx.Err() == nil {
				r.log.Warn("telemetry: pruning old samples failed; retried in an hour", "error", err.Error())
			}
			cancel()
			t.Reset(pruneEvery)
		}
	}
}
