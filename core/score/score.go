package score

import (
	"cmp"
	"math"
	"slices"
	"sync"

	"github.com/mindrouter/mindrouter/core/backend"
	"github.com/mindrouter/mindrouter/core/sched"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// The hard constraints a backend may fail, as recorded in
// sched.Candidate.Failed (see the package doc).
const (
	FailModel      = "model"
	FailDisabled   = "disabled"
	FailDraining   = "draining"
	FailUnhealthy  = "unhealthy"
	FailNoAdapter  = "no_adapter"
	FailEmbedding  = "embedding"
	FailCompletion = "completion"
	FailVision     = "vision"
	FailTools      = "tools"
	FailStructured = "structured_output"
	FailMemory     = "memory"
	FailBreaker    = "breaker_open"
)

// Marks in sched.Candidate.Parts that are not score contributions.
const (
	MarkAtCapacity = "at_capacity"
	MarkExcluded   = "excluded"
	MarkProbe      = "probe"
)

// MaxPriority is the admin priority that earns the whole priority part;
// higher priorities count as this, negative ones as 0.
const MaxPriority = 10

// Needs is what a request needs from the model beyond its name
// (sched.Request.Needs). The zero value needs nothing (no modality check).
type Needs = sched.Needs

// Scorer ranks backends by hard constraints, then by a weighted score. It
// is immutable and safe for concurrent use.
type Scorer struct {
	w [nParts]float64
}

var _ sched.Placer = (*Scorer)(nil)

// New returns a Scorer with the weights w (which should pass Validate;
// negative or non-finite weights count as 0).
func New(w Weights) *Scorer {
	s := &Scorer{w: w.array()}
	for i, v := range s.w {
		if !(v > 0) || math.IsInf(v, 1) {
			s.w[i] = 0
		}
	}
	return s
}

// Weights returns the scorer's weights.
func (s *Scorer) Weights() Weights {
	w := s.w
	return Weights{w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]}
}

// Rank implements sched.Placer, with the request's Needs.
func (s *Scorer) Rank(dst []*backend.Backend, req *sched.Request, all []*backend.Backend, d *sched.Decision) ([]*backend.Backend, bool) {
	return s.RankFor(dst, req, req.Needs, all, d)
}

// entry is one candidate being scored.
type entry struct {
	b        *backend.Backend
	idx      int // position in all: the last tie-break
	excluded bool
	probe    bool // its breaker waits for its half-open probe: placed first
	full     bool
	share    float64 // in-flight share of capacity
	ttfb     float64 // seconds; 0: unknown
	latency  float64 // seconds; 0: unknown
	tps      float64 // tokens/s; 0: unknown
	part     [nParts]float64
	known    uint8 // bit k: part k was measured (always for the others than maybeUnknown)
	score    float64
}

// maybeUnknown are the parts whose figures may be missing.
const maybeUnknown = 1<<partGPU | 1<<partLatency | 1<<partThroughput | 1<<partKV | 1<<partWaiting

// scratch is one Rank call's working storage, pooled: a candidate list
// on the stack would be zeroed on every call, and would cap how many
// backends rank without allocating.
type scratch struct {
	es    []entry
	order []int32 // indices into es, best first
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// RankFor is Rank for a request with the given needs.
func (s *Scorer) RankFor(dst []*backend.Backend, req *sched.Request, needs Needs, all []*backend.Backend, d *sched.Decision) (ranked []*backend.Backend, known bool) {
	sc := scratchPool.Get().(*scratch)
	defer scratchPool.Put(sc)
	es := sc.es[:0]
	allTTFB := true // every candidate with a latency figure has a TTFB
	for i, b := range all {
		st := b.Status()
		m, ok := st.Model(req.Model)
		if !ok {
			continue
		}
		known = true
		if failed(b, st, &m, needs) != "" {
			continue
		}
		es = append(es, entry{b: b, idx: i, excluded: isExcluded(req.Exclude, b), probe: b.ProbeDue()})
		e := &es[len(es)-1]
		s.measure(e, st, &m)
		if e.latency > 0 && e.ttfb == 0 {
			allTTFB = false
		}
	}
	sc.es = es
	s.normalise(es, allTTFB)
	order := sc.order[:0]
	for i := range es {
		order = append(order, int32(i))
	}
	sc.order = order
	sortOrder(order, es)
	for _, i := range order {
		dst = append(dst, es[i].b)
	}
	if d != nil && d.Record {
		s.record(d, es, order, req, needs, all)
	}
	clear(es) // drop the backend pointers held by the pool
	return dst, known
}

// sortOrder sorts order (indices into es) best first: by insertion for
// the usual handful of backends, else by slices.SortFunc.
func sortOrder(order []int32, es []entry) {
	if len(order) > 12 {
		slices.SortFunc(order, func(i, j int32) int { return compare(&es[i], &es[j]) })
		return
	}
	for i := 1; i < len(order); i++ {
		for j := i; j > 0 && compare(&es[order[j]], &es[order[j-1]]) < 0; j-- {
			order[j], order[j-1] = order[j-1], order[j]
		}
	}
}

// failed returns the first hard constraint b fails for model m, or "".
func failed(b *backend.Backend, st *backend.Status, m *canon.DiscoveredModel, needs Needs) string {
	if state := b.State(); state != "enabled" {
		return state // FailDisabled or FailDraining
	}
	if !st.Healthy {
		return FailUnhealthy
	}
	if b.Adapter() == nil {
		return FailNoAdapter
	}
	if !b.BreakerAllows() {
		// Open, or half-open with its one probe out: a request placed here
		// would be refused by the attempt (and, through the fast path,
		// sent back to the backend that is failing it).
		return FailBreaker
	}
	if f := capabilityFailure(m.Capabilities, needs); f != "" {
		return f
	}
	if !m.Loaded && m.SizeBytes > 0 {
		if g := b.GPU(); g != nil && g.HasMem && uint64(m.SizeBytes) > g.MemTotal {
			return FailMemory
		}
	}
	return ""
}

// capabilityFailure checks needs against a model's capabilities; a model
// with none reported passes (unknown is not "cannot").
func capabilityFailure(caps []string, needs Needs) string {
	if len(caps) == 0 {
		return ""
	}
	has := func(c string) bool { return slices.Contains(caps, c) }
	switch {
	case needs.Embed && !has(canon.CapEmbedding):
		return FailEmbedding
	case needs.Generate && has(canon.CapEmbedding) && !has(canon.CapCompletion):
		return FailCompletion
	case needs.Vision && !has(canon.CapVision):
		return FailVision
	case needs.Tools && !has(canon.CapTools):
		return FailTools
	case needs.Structured && !has(canon.CapStructured) && !has(canon.CapCompletion):
		return FailStructured
	}
	return ""
}

func isExcluded(list []*backend.Backend, b *backend.Backend) bool {
	for _, x := range list {
		if x == b {
			return true
		}
	}
	return false
}

// measure fills in e's parts that need no other candidate; latency and
// throughput stay raw in e until normalise compares them.
func (s *Scorer) measure(e *entry, st *backend.Status, m *canon.DiscoveredModel) {
	b := e.b
	capacity := float64(max(b.Capacity(), 1))
	inflight := b.InFlight()
	e.share = float64(inflight) / capacity
	e.full = inflight >= int64(b.Capacity())
	if m.Loaded {
		e.part[partLoaded] = 1
	}
	if g := b.GPU(); g != nil && g.HasUtil {
		e.part[partGPU] = 1 - clamp01(g.Util)
		e.known |= 1 << partGPU
	}
	e.part[partQueue] = 1 / (1 + float64(inflight+b.Waiting())/capacity)
	tel := b.Telemetry()
	e.ttfb, e.latency, e.tps = tel.TTFB.Seconds(), tel.Latency.Seconds(), tel.TokensPerSec
	e.part[partPriority] = float64(min(max(b.Priority(), 0), MaxPriority)) / MaxPriority
	if st.HasLoad {
		e.part[partKV] = 1 - clamp01(st.KVCache)
		e.part[partWaiting] = 1 / (1 + max(st.Waiting, 0))
		e.known |= 1<<partKV | 1<<partWaiting
	}
}

func clamp01(x float64) float64 { return min(max(x, 0), 1) }

// normalise turns latency and throughput into parts relative to the best
// candidate, gives unknown parts the known ones' mean (½ when none is
// known), and sums the weighted parts into each score.
func (s *Scorer) normalise(es []entry, allTTFB bool) {
	bestLat, bestTPS := math.Inf(1), 0.0
	for i := range es {
		e := &es[i]
		lat := e.latency
		if allTTFB {
			lat = e.ttfb
		}
		if lat > 0 {
			e.part[partLatency] = lat // raw until bestLat is known
			e.known |= 1 << partLatency
			bestLat = min(bestLat, lat)
		}
		if e.tps > 0 {
			e.part[partThroughput] = e.tps
			e.known |= 1 << partThroughput
			bestTPS = max(bestTPS, e.tps)
		}
	}
	var sum, n [nParts]float64
	for i := range es {
		e := &es[i]
		if e.known&(1<<partLatency) != 0 {
			e.part[partLatency] = bestLat / e.part[partLatency]
		}
		if e.known&(1<<partThroughput) != 0 {
			e.part[partThroughput] /= bestTPS
		}
		for k := range nParts {
			if e.known&(1<<k) != 0 {
				sum[k] += e.part[k]
				n[k]++
			}
		}
	}
	var neutral [nParts]float64
	for k := range nParts {
		neutral[k] = 0.5
		if n[k] > 0 {
			neutral[k] = sum[k] / n[k]
		}
	}
	for i := range es {
		e := &es[i]
		missing := maybeUnknown &^ e.known
		e.score = 0
		for k := range nParts {
			if missing&(1<<k) != 0 {
				e.part[k] = neutral[k]
			}
			e.score += s.w[k] * e.part[k]
		}
	}
}

// compare orders entries best first: not excluded, waiting for its
// breaker's probe, higher score, lower in-flight share, earlier in the
// backend list.
func compare(x, y *entry) int {
	if x.excluded != y.excluded {
		if x.excluded {
			return 1
		}
		return -1
	}
	if x.probe != y.probe {
		if x.probe {
			return -1
		}
		return 1
	}
	if c := cmp.Compare(y.score, x.score); c != 0 {
		return c
	}
	if c := cmp.Compare(x.share, y.share); c != 0 {
		return c
	}
	return x.idx - y.idx
}

// record appends the ranked entries, then the backends that failed a
// constraint, to d.Candidates, reusing the storage (Parts included)
// that d.Reset kept.
func (s *Scorer) record(d *sched.Decision, es []entry, order []int32, req *sched.Request, needs Needs, all []*backend.Backend) {
	for _, i := range order {
		e := &es[i]
		c := nextCandidate(d, e.b.Name)
		c.Score = e.score
		for k, v := range e.part {
			if s.w[k] != 0 {
				c.Parts = append(c.Parts, sched.Part{Name: partNames[k], Value: s.w[k] * v})
			}
		}
		if e.full {
			c.Parts = append(c.Parts, sched.Part{Name: MarkAtCapacity, Value: 1})
		}
		if e.excluded {
			c.Parts = append(c.Parts, sched.Part{Name: MarkExcluded, Value: 1})
		}
		if e.probe {
			c.Parts = append(c.Parts, sched.Part{Name: MarkProbe, Value: 1})
		}
	}
	for _, b := range all {
		st := b.Status()
		m, ok := st.Model(req.Model)
		f := FailModel
		if ok {
			f = failed(b, st, &m, needs)
		}
		if f != "" {
			nextCandidate(d, b.Name).Failed = f
		}
	}
}

// nextCandidate appends an empty candidate for backend name to d and
// returns it, with empty Parts (keeping the storage of d's old ones).
func nextCandidate(d *sched.Decision, name string) *sched.Candidate {
	n := len(d.Candidates)
	if n < cap(d.Candidates) {
		d.Candidates = d.Candidates[:n+1]
	} else {
		d.Candidates = append(d.Candidates, sched.Candidate{})
	}
	c := &d.Candidates[n]
	parts := c.Parts[:0]
	if parts == nil {
		parts = make(sched.Parts, 0, nParts+3)
	}
	*c = sched.Candidate{Backend: name, Parts: parts}
	return c
}
