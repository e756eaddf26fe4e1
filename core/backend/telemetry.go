package backend

import (
	"maps"
	"math"
	"sync/atomic"
	"time"
)

// EMAAlpha is the weight of the newest observation in a backend's latency
// and throughput averages: avg' = avg + α·(x − avg), the first observation
// taken as is. With α = 0.3 (the reference implementation's value) an
// observation ten requests old still weighs 0.3·0.7⁹ ≈ 1.2 %, and after a
// step change the average has covered 92 % of the step within 7 requests:
// quick enough to route around a slowed backend, smooth enough that one
// long generation does not swing the ranking.
const EMAAlpha = 0.3

// telemetry holds a backend's exponential moving averages. Lock-free: the
// server observes from every request goroutine and the scorer reads them.
type telemetry struct {
	ttfb    ema // seconds to the first byte of a streamed response
	latency ema // seconds to the end of a response
	tps     ema // generated tokens per second
}

// ema is an exponential moving average of positive values, updated by
// compare-and-swap. Zero bits mean "no observation yet" (every stored
// value is positive, so it cannot collide with a real average).
type ema struct{ bits atomic.Uint64 }

func (e *ema) observe(x float64) {
	if !(x > 0) || math.IsInf(x, 1) { // not positive, NaN or +Inf: no information
		return
	}
	for {
		old := e.bits.Load()
		next := x
		if old != 0 {
			avg := math.Float64frombits(old)
			next = avg + EMAAlpha*(x-avg)
		}
		if e.bits.CompareAndSwap(old, math.Float64bits(next)) {
			return
		}
	}
}

// value is the average, or 0 before the first observation.
func (e *ema) value() float64 { return math.Float64frombits(e.bits.Load()) }

// Telemetry is a snapshot of a backend's moving averages (EMAAlpha); a
// zero field means nothing was observed yet.
type Telemetry struct {
	// TTFB is the time from sending a streamed request to the first byte
	// of its response: queueing plus prompt processing, independent of
	// how long the answer is.
	TTFB time.Duration
	// Latency is the time from sending a request to the end of its
	// response (streamed or not).
	Latency time.Duration
	// TokensPerSec is the generation speed requests actually got.
	TokensPerSec float64
}

// ObserveTTFB records the time to the first byte of a streamed response
// (the server calls it when the first chunk arrives). Observing it for a
// complete response, whose first byte comes only at the end, would mix
// answer length into it: use ObserveLatency for those. Durations ≤ 0 are
// ignored. Lock-free and allocation-free.
func (b *Backend) ObserveTTFB(d time.Duration) { b.tel.ttfb.observe(d.Seconds()) }

// ObserveLatency records the time from sending a request to the end of its
// response, streamed or not, for a request that succeeded. Durations ≤ 0
// are ignored. Lock-free and allocation-free.
func (b *Backend) ObserveLatency(d time.Duration) { b.tel.latency.observe(d.Seconds()) }

// ObserveTokens records that the backend generated n tokens in d: for a
// stream, d is best measured from the first token to the last (decoding
// speed); for a complete response, the whole latency will do. Calls with
// n ≤ 0 or d ≤ 0 are ignored. Lock-free and allocation-free.
func (b *Backend) ObserveTokens(n int, d time.Duration) {
	if n <= 0 || d <= 0 {
		return
	}
	b.tel.tps.observe(float64(n) / d.Seconds())
}

// Telemetry returns the backend's current averages.
func (b *Backend) Telemetry() Telemetry {
	return Telemetry{
		TTFB:         seconds(b.tel.ttfb.value()),
		Latency:      seconds(b.tel.latency.value()),
		TokensPerSec: b.tel.tps.value(),
	}
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// MarkLoaded records that model is in the backend's GPU memory now: a
// request for it just succeeded (Ollama loads a model on its first
// request). Scoring then prefers this backend for the model at once,
// rather than after the next discovery round's /api/ps, so a burst of
// requests for a cold model does not make every backend load it. The
// next round's finding replaces the mark (Ollama evicts idle models). A
// model already marked costs one map lookup and no allocation; otherwise
// the status is copied, and a discovery round published meanwhile wins.
func (b *Backend) MarkLoaded(model string) {
	st := b.status.Load()
	name := model
	m, ok := st.Models[name]
	if !ok {
		if name, ok = st.aliases[model]; ok {
			m, ok = st.Models[name]
		}
	}
	if !ok || m.Loaded {
		return
	}
	next := *st // aliases are shared: immutable, and the names do not change
	next.Models = maps.Clone(st.Models)
	m.Loaded = true
	next.Models[name] = m
	b.status.CompareAndSwap(st, &next)
}
