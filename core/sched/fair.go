package sched

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mindrouter/mindrouter/core/apierr"
	"github.com/mindrouter/mindrouter/core/backend"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// BackendLister gives the backends a Fair schedules over;
// *backend.Registry is one.
type BackendLister interface {
	Backends() []*backend.Backend
}

// Clock tells a Fair the time. Queue waits, burst refills and the
// starvation bound are measured with it; the capacity wait's timer is
// always real time (a simulation drives Fair without Admit's blocking).
type Clock interface {
	Now() time.Time
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

// Defaults of FairOptions.
const (
	DefaultFairMaxWait         = 150 * time.Second
	DefaultFairQuantum         = 1000 // estimated tokens per round per unit weight
	DefaultFairBurstCredit     = 4 * DefaultFairQuantum
	DefaultFairBurstRefill     = 10 * time.Second
	DefaultFairStarvationAfter = 30 * time.Second
)

// FairOptions configures a Fair. Zero fields take the defaults above.
type FairOptions struct {
	// Registry lists the backends (the gateway passes its
	// *backend.Registry).
	Registry BackendLister
	// Placer ranks the backends for a request; nil: least in-flight share
	// first, backends not in Request.Exclude before those in it (the
	// choice LeastLoaded makes).
	Placer Placer
	// MaxWait bounds the capacity wait (timeouts.queue_wait); 0: 150 s;
	// negative: no wait (503 backend_busy at once when every slot is
	// taken).
	MaxWait time.Duration
	// Quantum is the credit, in estimated tokens, that each waiting user
	// receives per round per unit of weight. A request's cost is its
	// EstTokens, or one Quantum when unknown (0), so requests without an
	// estimate are counted as one request's worth each. Smaller quanta
	// interleave users more finely; shares do not depend on it.
	Quantum float64
	// BurstCredit is the most credit, in estimated tokens per unit of
	// weight, that a user banks while idle; it refills linearly over
	// BurstRefill of idleness. With it, a user who returns after a pause
	// goes ahead of users who have been waiting all along, for up to
	// BurstCredit·weight tokens. Negative: no burst credit.
	BurstCredit float64
	BurstRefill time.Duration
	// StarvationAfter is the anti-starvation bound: a request that has
	// waited this long outranks every fair-share key (oldest first).
	StarvationAfter time.Duration
	// Clock: nil is the real time.
	Clock Clock
	// Record fills Request.Decision, when the server sets it.
	Record bool
	// Fleet, when set, shares the backends' slots and the users' service
	// with the other replicas through Redis (see the package doc); its
	// Run must run. nil: this replica schedules alone.
	Fleet *Fleet
}

// Fair is the fair-share Admitter: weighted deficit round robin over
// users, per model, with burst credits and a starvation bound. See the
// package doc for the algorithm and its invariants. Safe for concurrent
// use.
type Fair struct {
	reg     BackendLister
	placer  Placer
	clock   Clock
	maxWait time.Duration
	quantum float64
	burst   float64
	refill  time.Duration
	starve  time.Duration
	record  bool
	fleet   *Fleet // nil: alone

	waitPool sync.Pool // *waiter

	mu       sync.Mutex
	queues   map[string]*modelQueue // every model admitted so far
	active   []*modelQueue          // the models with waiters
	seq      uint64                 // arrival counter
	served   uint64                 // dispatch counter (round-robin order of flows)
	nwaiting int
	queued   atomic.Int64       // nwaiting, for released's lock-free look
	grants   uint64             // waiters granted a slot (tests count wake-ups)
	rank     []*backend.Backend // Rank's scratch for admissions
	rank2    []*backend.Backend // Rank's scratch for dispatch checks
	scratch  Decision           // the Decision Rank fills when not recording
	aside    []*flow            // markPassedLocked's scratch
	service  serviceLog         // recent service per group (fair_snapshot.go)
	// probeWant: backends whose breaker's probe is due and for which a
	// request found no fleet slot here, with that request's fleet key
	// (fleetBid bids one slot for them; wantProbeLocked).
	probeWant map[*backend.Backend]float64
	onGrant   func(w *waiter) // the simulation hears of each grant
}

var _ Admitter = (*Fair)(nil)

// NewFair returns a Fair over o.Registry's backends.
func NewFair(o FairOptions) *Fair {
	f := &Fair{
		reg:     o.Registry,
		placer:  o.Placer,
		clock:   o.Clock,
		maxWait: o.MaxWait,
		quantum: o.Quantum,
		burst:   o.BurstCredit,
		refill:  o.BurstRefill,
		starve:  o.StarvationAfter,
		record:  o.Record,
		fleet:   o.Fleet,
		queues:  map[string]*modelQueue{},
	}
	if f.fleet != nil {
		f.fleet.fair = f
	}
	if f.placer == nil {
		f.placer = LeastLoadedPlacer{}
	}
	if f.clock == nil {
		f.clock = realClock{}
	}
	if f.maxWait == 0 {
		f.maxWait = DefaultFairMaxWait
	}
	if f.quantum <= 0 {
		f.quantum = DefaultFairQuantum
	}
	if f.burst == 0 {
		f.burst = DefaultFairBurstCredit
	} else if f.burst < 0 {
		f.burst = 0
	}
	if f.refill <= 0 {
		f.refill = DefaultFairBurstRefill
	}
	if f.starve <= 0 {
		f.starve = DefaultFairStarvationAfter
	}
	f.waitPool.New = func() any { return &waiter{ch: make(chan struct{}, 1)} }
	return f
}

// Admit implements Admitter.
func (f *Fair) Admit(ctx context.Context, req *Request) (Lease, error) {
	if req.lease.held.Load() {
		return nil, ErrLeaseHeld
	}
	if err := ctx.Err(); err != nil {
		return nil, ctxError(req.Model, err)
	}
	f.mu.Lock()
	l, w, err := f.try(req)
	f.mu.Unlock()
	if w == nil {
		return l, err
	}
	timer := time.NewTimer(f.maxWait)
	cancelled := false
	select {
	case <-w.ch:
	case <-timer.C:
	case <-ctx.Done():
		cancelled = true
	}
	timer.Stop()
	f.mu.Lock()
	granted := w.granted != nil
	if !granted {
		f.leaveLocked(w)
	}
	f.mu.Unlock()
	f.putWaiter(w)
	switch {
	case granted && !cancelled:
		return &req.lease, nil
	case granted:
		// The slot came as the client left: pass it on.
		req.lease.Release()
		return nil, ctxError(req.Model, ctx.Err())
	case cancelled:
		return nil, ctxError(req.Model, ctx.Err())
	default:
		return nil, busy(req.Model, backend.ErrQueueTimeout)
	}
}

// Kick hands free slots to waiters on every backend: for capacity that
// appears other than by a release (a backend became routable again).
func (f *Fair) Kick() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, b := range f.reg.Backends() {
		f.dispatchLocked(b)
	}
}

// Waiting is the number of queued requests.
func (f *Fair) Waiting() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.nwaiting
}

// released implements releaser: the slot held on b goes straight to the
// waiter that pickLocked chooses, so no request that did not wait (a
// fast path for another model) can take it in between; with nobody
// waiting it is returned to b.
func (f *Fair) released(b *backend.Backend) {
	if f.fleet != nil {
		// The fleet decides whether the slot stays here (put); the best
		// local waiter takes it if so.
		f.mu.Lock()
		b.Release()
		f.fleet.put(b)
		f.dispatchLocked(b)
		f.mu.Unlock()
		return
	}
	if f.queued.Load() == 0 {
		b.Release()
		// A request queued since the look above dispatches on its own
		// candidates after queueing and finds this slot; one queued
		// before this second look is served here.
		if f.queued.Load() == 0 {
			return
		}
		f.mu.Lock()
		f.dispatchLocked(b)
		f.mu.Unlock()
		return
	}
	f.mu.Lock()
	if w, promoted := f.pickLocked(b); w != nil {
		f.grantLocked(w, b, promoted)
	} else {
		b.Release()
	}
	f.dispatchLocked(b)
	f.mu.Unlock()
}

// try admits req at once (a Lease), queues it (a waiter), or fails.
// Called with f.mu held.
func (f *Fair) try(req *Request) (Lease, *waiter, error) {
	all := f.reg.Backends()
	d := f.decision(req)
	ranked, known := f.placer.Rank(f.rank[:0], req, all, d)
	f.rank = ranked[:0]
	if len(ranked) == 0 {
		if known {
			if ex, ok := f.placer.(NeedsExplainer); ok {
				if s := ex.Unmet(req, all); s != "" {
					return nil, nil, apierr.New(canon.ErrInvalidRequest, "model_capability",
						fmt.Sprintf("the model %q does not support %s", req.Model, s))
				}
			}
			e := apierr.New(canon.ErrOverloaded, "backend_unavailable",
				fmt.Sprintf("no healthy backend is serving model %q right now", req.Model))
			e.RetryAfter = RetryAfterUnavailable
			return nil, nil, e
		}
		return nil, nil, apierr.New(canon.ErrNotFound, "model_not_found",
			fmt.Sprintf("the model %q does not exist or is not served by any backend", req.Model))
	}
	// Only models some backend knows get state (no growth from bad names).
	mq := f.queue(req.Model)
	fl := mq.flow(req.User)
	if mq.n == 0 {
		// Nobody waits for this model: any free slot is fair game, except
		// on a backend this request already tried while another ranked
		// one is untried: a retry waits in the queue for that one rather
		// than go back to the backend that just failed it.
		avoid := len(req.Exclude) > 0 && untried(req, ranked)
		for _, b := range ranked {
			if avoid && excluded(req.Exclude, b) {
				continue
			}
			if b.TryAcquire() {
				if f.fleet != nil {
					if !f.fleet.take(b) {
						b.Release() // no fleet slot held here: the request queues and the fleet claims
						if b.ProbeDue() {
							// The probe is due there but this replica holds
							// none of its slots, and with nobody waiting the
							// fleet would claim none: ask for one, so the next
							// request is the probe; this one goes on.
							f.wantProbeLocked(b, req)
						}
						continue
					}
					if d.Record {
						d.FleetSlot = f.fleet.source()
						d.FleetKey = f.fleet.key(req.User, weightOf(req))
					}
					f.fleet.charge(req.User, f.costOf(req))
				}
				fl.idleSince = f.clock.Now() // active: no burst credit accrues
				f.noteServedLocked(req, f.costOf(req))
				if d.Record {
					d.Chosen = b.Name
					d.Deficit, d.Weight = fl.d0, weightOf(req)
				}
				return req.lease.grantFor(b, f), nil, nil
			}
		}
	}
	if f.maxWait < 0 {
		return nil, nil, busy(req.Model, backend.ErrQueueTimeout)
	}
	w := f.waitPool.Get().(*waiter)
	f.enqueueLocked(w, req, fl)
	// A slot may have been freed after the tries above by a release that
	// saw no waiter yet; and a waiter of higher rank may deserve it.
	for _, b := range ranked {
		f.dispatchLocked(b)
	}
	if w.granted != nil {
		f.putWaiter(w)
		return &req.lease, nil, nil
	}
	return nil, w, nil
}

// untried reports whether some backend in ranked is not in req.Exclude.
func untried(req *Request, ranked []*backend.Backend) bool {
	for _, b := range ranked {
		if !excluded(req.Exclude, b) {
			return true
		}
	}
	return false
}

// decision is where Rank records: req.Decision when recording, else a
// scratch Decision with Record off.
func (f *Fair) decision(req *Request) *Decision {
	if f.record && req.Decision != nil {
		req.Decision.Record = true
		req.Decision.Reset()
		return req.Decision
	}
	f.scratch.Record = false
	f.scratch.Reset()
	return &f.scratch
}

func weightOf(req *Request) float64 {
	if req.Weight > 0 {
		return req.Weight
	}
	return 1
}

func (f *Fair) queue(model string) *modelQueue {
	mq := f.queues[model]
	if mq == nil {
		mq = &modelQueue{model: model, flows: map[string]*flow{}, active: -1}
		f.queues[model] = mq
	}
	return mq
}

func (q *modelQueue) flow(user string) *flow {
	fl := q.flows[user]
	if fl == nil {
		fl = &flow{user: user, mq: q, weight: 1, idx: -1, pidx: -1}
		q.flows[user] = fl
	}
	return fl
}

// costOf is a request's cost in estimated tokens.
func (f *Fair) costOf(req *Request) float64 {
	if req.EstTokens > 0 {
		return float64(req.EstTokens)
	}
	return f.quantum
}

// enqueueLocked queues w for req on flow fl.
func (f *Fair) enqueueLocked(w *waiter, req *Request, fl *flow) {
	now := f.clock.Now()
	mq := fl.mq
	f.seq++
	*w = waiter{req: req, flow: fl, enq: now, seq: f.seq, cost: f.costOf(req), pos: mq.n, ch: w.ch}
	weight := weightOf(req)
	switch {
	case fl.fifo.n == 0:
		// The user starts waiting: credit left from before (a positive
		// deficit) is not carried — DRR's rule — but a debt is, and
		// idleness refills the burst credit.
		fl.weight = weight
		fl.d0 = min(fl.d0, 0) + f.burstFor(fl, now)
		fl.r0 = mq.round
		fl.waitFrom = now
		fl.fifo.push(w)
		f.headArrivesLocked(fl)
		f.setKey(fl)
		mq.pushFlow(fl)
		mq.since.push(fl)
	case weight != fl.weight:
		fl.d0, fl.r0 = fl.deficit(f.quantum), mq.round
		fl.weight = weight
		fl.fifo.push(w)
		f.setKey(fl)
		mq.fix(fl.idx)
	default:
		fl.fifo.push(w)
	}
	mq.n++
	f.nwaiting++
	f.queued.Add(1)
	if mq.active < 0 {
		mq.active = len(f.active)
		f.active = append(f.active, mq)
	}
}

// burstFor is the burst credit fl's user has earned by idleness until now.
func (f *Fair) burstFor(fl *flow, now time.Time) float64 {
	limit := f.burst * fl.weight
	if fl.idleSince.IsZero() {
		return limit
	}
	idle := now.Sub(fl.idleSince)
	if idle >= f.refill {
		return limit
	}
	return limit * float64(idle) / float64(f.refill)
}

// eligible is the first round in which fl's deficit covers its head's
// cost: r0 + ⌈(cost − d0) / (Quantum·weight)⌉, at least r0.
func (f *Fair) eligible(fl *flow) float64 {
	need := fl.fifo.head.cost - fl.d0
	if need <= 0 {
		return fl.r0
	}
	return fl.r0 + math.Ceil(need/(f.quantum*fl.weight))
}

// setKey snapshots fl's heap key from its state and head.
func (f *Fair) setKey(fl *flow) {
	fl.eligible = f.eligible(fl)
	fl.keyServed = fl.lastServed
	fl.keySeq = fl.fifo.head.seq
}

// leaveLocked removes a waiter that was not granted (timeout, cancel).
func (f *Fair) leaveLocked(w *waiter) {
	fl := w.flow
	if fl.fifo.n == 1 {
		// Freeze the credit earned while waiting, as a dispatch does.
		fl.d0, fl.r0 = fl.deficit(f.quantum), fl.mq.round
	}
	f.unlinkLocked(w)
}

// unlinkLocked takes w out of its flow, re-keying or retiring the flow.
func (f *Fair) unlinkLocked(w *waiter) {
	fl := w.flow
	mq := fl.mq
	f.headLeavesLocked(fl, w)
	fl.fifo.remove(w)
	mq.n--
	f.nwaiting--
	f.queued.Add(-1)
	if fl.fifo.n == 0 {
		mq.removeFlow(fl.idx)
		mq.since.remove(fl)
		fl.idleSince = f.clock.Now()
	} else {
		f.headArrivesLocked(fl)
		f.setKey(fl)
		mq.fix(fl.idx)
	}
	if mq.n == 0 {
		last := f.active[len(f.active)-1]
		f.active[mq.active] = last
		last.active = mq.active
		f.active[len(f.active)-1] = nil
		f.active = f.active[:len(f.active)-1]
		mq.active = -1
	}
}

// dispatchLocked hands b's free slots to the best waiters it may serve.
func (f *Fair) dispatchLocked(b *backend.Backend) {
	for f.nwaiting > 0 {
		w, promoted := f.pickLocked(b)
		if w == nil || !b.TryAcquire() {
			return
		}
		if f.fleet != nil && !f.fleet.take(b) {
			b.Release()
			if w.fleetFrom.IsZero() {
				w.fleetFrom = f.clock.Now()
			}
			f.fleet.want(b) // the fleet claims a slot and dispatches again
			return
		}
		f.grantLocked(w, b, promoted)
	}
}

// pickLocked chooses the waiter that b's free slot goes to. In each model
// b serves, the candidate is the head of the flow that has gone longest
// unserved if that is StarvationAfter or more (promoted), else the head
// of the flow with the lowest key. Across models: promoted first (longest
// unserved), then fewer rounds to wait, round-robin order, arrival.
func (f *Fair) pickLocked(b *backend.Backend) (best *waiter, promoted bool) {
	if !b.Routable() {
		return nil, false
	}
	st := b.Status()
	now := f.clock.Now()
	for _, mq := range f.active {
		if !st.Serves(mq.model) {
			continue
		}
		fl, starving := mq.heap[0], false
		if s := mq.since.head; now.Sub(s.waitFrom) >= f.starve {
			fl, starving = s, true
		}
		w := fl.fifo.head
		if !f.accepts(w.req, b) {
			if w = f.behindRetry(w, b); w == nil {
				continue
			}
		}
		if best != nil {
			bf := best.flow
			switch {
			case starving != promoted:
				if !starving {
					continue
				}
			case starving:
				if !fl.waitFrom.Before(bf.waitFrom) {
					continue
				}
			case !crossLess(fl, bf):
				continue
			}
		}
		best, promoted = w, starving
	}
	return best, promoted
}

// retryScan bounds how far behind a user's retry (a head that refuses a
// backend it tried) behindRetry looks for a request of the same user.
const retryScan = 8

// behindRetry is, when head is a retry that refuses b because it tried b
// while another candidate exists, the first of its user's next few
// waiters that b may serve: the retry waits for another backend, and a
// free slot of b must not idle behind it (work conservation). nil
// otherwise.
func (f *Fair) behindRetry(head *waiter, b *backend.Backend) *waiter {
	if len(head.req.Exclude) == 0 || !excluded(head.req.Exclude, b) {
		return nil
	}
	w := head.next
	for i := 0; w != nil && i < retryScan; i, w = i+1, w.next {
		if f.accepts(w.req, b) {
			return w
		}
	}
	return nil
}

// crossLess orders the best flows of two models by the rounds each has
// yet to wait in its own model, then as flowLess.
func crossLess(a, b *flow) bool {
	ra, rb := max(a.eligible-a.mq.round, 0), max(b.eligible-b.mq.round, 0)
	if ra != rb {
		return ra < rb
	}
	if a.keyServed != b.keyServed {
		return a.keyServed < b.keyServed
	}
	return a.keySeq < b.keySeq
}

// accepts reports whether b may serve req: the Placer ranks it, and it is
// not excluded unless every ranked backend is.
func (f *Fair) accepts(req *Request, b *backend.Backend) bool {
	f.scratch.Record = false
	f.scratch.Reset()
	ranked, _ := f.placer.Rank(f.rank2[:0], req, f.reg.Backends(), &f.scratch)
	f.rank2 = ranked[:0]
	found, other := false, false
	for _, x := range ranked {
		if x == b {
			found = true
		} else if !excluded(req.Exclude, x) {
			other = true
		}
	}
	return found && (!excluded(req.Exclude, b) || !other)
}

// grantLocked gives w a slot already held on b (taken, or handed over by
// a release) and charges its flow.
func (f *Fair) grantLocked(w *waiter, b *backend.Backend, promoted bool) {
	fl := w.flow
	mq := fl.mq
	now := f.clock.Now()
	if !promoted && fl.eligible > mq.round {
		mq.round = fl.eligible // no flow could go in an earlier round: it ends
	}
	before := fl.deficit(f.quantum)
	// A promoted request may go before its credit covers it: the debt is
	// at most its cost. Credit carried past a dispatch is capped, so that
	// a flow that met no contention for a while does not hoard it.
	// (Repeated promotions under overload cannot stack debts: the floor
	// is one request's cost.)
	fl.d0 = min(max(before-w.cost, -w.cost), max(f.burst, f.quantum)*fl.weight)
	fl.r0 = mq.round
	f.served++
	fl.lastServed = f.served
	if fl.fifo.n > 1 {
		fl.waitFrom = now
		mq.since.remove(fl)
		mq.since.push(fl)
	}
	f.unlinkLocked(w)
	req := w.req
	if f.record {
		f.markPassedLocked(w, b, now)
		if d := req.Decision; d != nil {
			d.Record = true
			d.Reset()
			f.placer.Rank(f.rank2[:0], req, f.reg.Backends(), d)
			d.Chosen = b.Name
			d.Deficit, d.Weight = before, fl.weight
			d.QueueWait = now.Sub(w.enq).Microseconds()
			d.Position = w.pos
			if !w.passed.IsZero() {
				d.FairnessWait = now.Sub(w.passed).Microseconds()
			}
			if f.fleet != nil {
				f.recordFleet(d, w, now)
			}
		}
	}
	if f.fleet != nil {
		f.fleet.charge(req.User, w.cost)
	}
	f.noteServedLocked(req, w.cost)
	w.granted = b
	req.lease.grantFor(b, f)
	f.grants++
	if f.onGrant != nil {
		f.onGrant(w)
	}
	select {
	case w.ch <- struct{}{}:
	default:
	}
}

func (f *Fair) putWaiter(w *waiter) {
	select {
	case <-w.ch:
	default:
	}
	*w = waiter{ch: w.ch}
	f.waitPool.Put(w)
}

// ctxError is the error for a ctx that ended before a slot was found:
// busy for a deadline, request_cancelled for a cancellation.
func ctxError(model string, err error) *apierr.Error {
	if errors.Is(err, context.DeadlineExceeded) {
		return busy(model, err)
	}
	return apierr.Wrap(canon.ErrOverloaded, "request_cancelled",
		"the request was cancelled while waiting for a backend", err)
}

// dispatchBackend hands b's free slots to waiters: the fleet calls it
// after claiming slots for b.
func (f *Fair) dispatchBackend(b *backend.Backend) {
	f.mu.Lock()
	f.dispatchLocked(b)
	f.mu.Unlock()
}

// fleetBid is what this replica bids for b's slots: how many of its
// waiters b may serve (at most max_concurrent; 0 when none or when b may
// not serve the best of them now, or 1 for its breaker's probe:
// probeBidLocked) and the fleet-wide fair-share key of
// the waiter a slot of b would go to — minus its wait in seconds (below
// every key) when it is promoted by the starvation bound.
func (f *Fair) fleetBid(b *backend.Backend) (n int, key float64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.nwaiting == 0 {
		return f.probeBidLocked(b)
	}
	w, promoted := f.pickLocked(b)
	if w == nil {
		return f.probeBidLocked(b)
	}
	st := b.Status()
	for _, mq := range f.active {
		if st.Serves(mq.model) {
			n += mq.n
		}
	}
	n = min(n, b.Capacity())
	if promoted {
		return n, -1 - f.clock.Now().Sub(w.flow.waitFrom).Seconds()
	}
	return n, f.fleet.key(w.req.User, w.flow.weight)
}

// wantProbeLocked asks the fleet for one slot of b, whose breaker's probe
// is due, for the next request that may go there (f.mu held): without a
// waiter the fleet claims nothing, and the probe would wait until every
// other backend is full (the breaker's doc in core/backend).
func (f *Fair) wantProbeLocked(b *backend.Backend, req *Request) {
	if f.probeWant == nil {
		f.probeWant = map[*backend.Backend]float64{}
	}
	f.probeWant[b] = f.fleet.key(req.User, weightOf(req))
	f.fleet.want(b)
}

// probeBidLocked is fleetBid's bid for b without a waiter it may serve:
// one slot, at the key of the request that found none, while b's probe is
// due and a request asked for it (wantProbeLocked); else none.
func (f *Fair) probeBidLocked(b *backend.Backend) (int, float64) {
	key, ok := f.probeWant[b]
	if !ok {
		return 0, 0
	}
	if !b.ProbeDue() || !b.Routable() {
		delete(f.probeWant, b)
		return 0, 0
	}
	return 1, key
}
