// Package sched is the seam between the request path and the scheduling
// policy: it decides which backend serves a request and when.
//
// # Contract
//
// The server describes a request (Request) and asks an Admitter to admit
// it. Admit either returns a Lease, which holds one concurrency slot
// (max_concurrent) on the backend that will serve the request, or an
// error, in which case it holds nothing. The server sends the request to
// Lease.Backend() and calls Lease.Release() once it is done with the
// backend: after the complete response, or when a stream ends, fails or
// its client leaves. Release is idempotent, so an early explicit Release
// and a deferred one may both run.
//
// Admit may wait for a slot. It waits no longer than the Admitter's
// queue wait and no longer than ctx lives: a cancelled ctx (the client
// went away) ends the wait at once with an error wrapping ctx.Err().
//
// Errors are *apierr.Error, ready for the client:
//
//   - 404 model_not_found: no backend knows the model;
//   - 503 backend_unavailable (Retry-After): the model is known but no
//     backend serving it is healthy with an adapter loaded;
//   - 400 model_capability (Fair, when its Placer is a NeedsExplainer):
//     the model is known but no backend serving it offers what
//     Request.Needs asks (image input, tools, …): retrying cannot help;
//   - 503 backend_busy (Retry-After): no slot freed up within the queue
//     wait (or ctx's deadline passed while waiting);
//   - 503 request_cancelled: ctx was cancelled before a slot was found.
//
// A request that fails on one backend and may be retried lists the
// backends it has tried in Request.Exclude; the Admitter then never gives
// it an excluded backend while another candidate exists, even a full one
// (Fair queues the retry for that one rather than take a tried backend's
// free slot; LeastLoaded waits on the least loaded untried one), and
// falls back to an excluded one only when no other can serve.
//
// # The lease lives in the Request
//
// To keep admission free of allocations, the Lease that Admit returns is
// stored inside the Request: req must stay where it is (not copied, not
// reused for another client request) until its lease is released, and a
// Request holds at most one lease at a time. Admitting a Request that
// still holds a lease is an error. To retry elsewhere: Release, append
// Lease.Backend() to Exclude, and Admit the same req again; the Lease
// returned is the same value, now naming the new backend, so a deferred
// Release covers whichever admission is current.
//
// When the server sets Request.Decision and the Admitter records
// decisions (FairOptions.Record), Admit fills it with what it decided
// (candidates as the Placer saw them, the backend chosen, the user's
// deficit and weight, the queue wait and position, the fairness wait and,
// with a Fleet, where the slot came from) for the audit; the server owns
// it and may reuse it (Decision.Reset keeps its storage).
//
// Fairness wait. A waiting request is passed over when a slot that could
// have served it (on a backend its Placer ranks for it) goes to a request
// for the same model that arrived after it. Its FairnessWait is the part
// of its queue wait after the first time that happened: the wait that
// sharing imposed, as opposed to waiting for capacity (a request that
// only ever waited behind earlier ones, its own user's included, has 0).
// Only a user's oldest waiting request (its head) can be passed over: the
// ones behind it wait for it first, and their fairness wait starts, if at
// all, once they are the head. Grants to other models on a shared backend
// and, with a Fleet, slots that went to other replicas do not count.
// Bookkeeping runs only while recording: each head is marked once, and a
// grant costs O(log n) in the heads waiting per head it marks
// (fair_passed.go).
//
// # Admitters
//
// LeastLoaded sends each request to the least loaded backend and waits
// first come, first served on its slots. Fair shares the slots between
// users by weight.
//
// # Fair: the algorithm
//
// Fair is weighted deficit round robin (DRR) over users, one DRR per
// model. A request's cost is Request.EstTokens, or one Quantum when
// unknown. Per model it keeps a round counter R and, per user, a flow:
// the user's waiting requests for that model (first in, first out), its
// weight w (Request.Weight; 0 = 1; the latest request's) and its deficit
// D, the credit, in tokens, it may still spend. While the flow has
// waiters it earns Quantum·w per round; credit is added lazily (D is
// stored as d0 at round r0, D(R) = d0 + (R − r0)·Quantum·w), so no flow
// is visited to be credited.
//
// A flow's key is (E, last dispatch, arrival of its head), where E =
// r0 + ⌈(cost(head) − d0) / (Quantum·w)⌉, at least r0, is the first round
// in which its deficit covers its head request. The flows of a model with
// waiters are in a heap by key. When a slot frees on backend b:
//
//  1. For each model with waiters that b serves, the candidate is the head
//     of the flow that has gone longest unserved, if that is
//     StarvationAfter or more (promoted); else the head of the flow with
//     the lowest key. A candidate whose Placer ranking does not include b,
//     or that excluded b while another ranked backend is not excluded,
//     is passed over for this slot.
//  2. Promoted candidates win (longest unserved first); otherwise the
//     lowest (max(E − R, 0), last dispatch, arrival) across models.
//  3. The winner takes the slot. Unless promoted, R := max(R, E): every
//     flow of that model could go no earlier, so the round ends (DRR's
//     round, computed in closed form). Its deficit becomes
//     clamp(D(R) − cost, −cost, max(BurstCredit, Quantum)·w) and its flow
//     is re-keyed.
//
// Ties in E fall to the flow served longest ago: DRR's round-robin
// order. A flow that empties keeps a debt (D < 0) but drops positive
// credit, DRR's rule; when it next has a waiter it starts with that debt
// plus its burst credit, BurstCredit·w scaled by the time it was idle
// (full after BurstRefill; full for a user never seen). A request that
// finds a free slot and nobody waiting for its model takes the slot at
// once (the fast path: one mutex, no timer, no allocation) and is not
// charged: only contention is accounted, and a user who sends while the
// model is uncontended does not bank burst credit.
//
// Waiting: the waiter sleeps on its own channel; a release returns the
// slot and, if anyone waits, hands it under the mutex to the one waiter
// step 1–3 chooses (the lease is granted before the wake-up; exactly one
// waiter wakes per freed slot; nothing polls). A waiter leaves the queue
// at once when ctx is done (request_cancelled; a deadline is
// backend_busy), or after MaxWait (backend_busy, Retry-After); a slot
// handed over as its client left goes on to the next waiter. Kick
// dispatches on every backend, for capacity that appears without a
// release (a backend back up). The heap makes a dispatch O(log n) in the
// flows waiting; 10,000 queued requests cost about 1 µs an
// enqueue+dispatch (BenchmarkFair_EnqueueDispatch).
//
// # Fair: invariants
//
//   - Work conserving: no slot stays free while a request it may serve
//     waits (except a retry that excluded it, above: a slot such a retry
//     refuses goes to its user's next waiter it may serve, among the
//     next few, rather than idle behind it).
//   - Deficits are bounded: −cost ≤ D ≤ max(BurstCredit, Quantum)·w after
//     a dispatch, so no user banks credit while uncontended, and a debt
//     (only from a promoted dispatch) is never more than one request's
//     cost.
//   - Weighted shares: users who keep requests waiting for a model
//     receive tokens in proportion to their weights; over any interval
//     each one's service differs from its share by a bounded amount
//     (about Quantum·w, one request's cost and its burst credit), not
//     one that grows with time (TestSimWeightedShares:
//     3:2:1 gives 50.00/33.34/16.67 %; TestSimEqualWeightsJain: Jain's
//     index 1.0000 over ten users whose request sizes differ 19×).
//   - Starvation bound: a user with waiting requests for a model is served
//     at least once every StarvationAfter plus one slot turnover per flow
//     promoted before it, whatever the weights, while a backend that may
//     serve it is routable (TestSimNoStarvation). A request's own wait is
//     that times its place in its user's queue.
//   - Light users: a user who was idle gets the next freed slot (E = R,
//     and ties go to the flow served longest ago) ahead of flows that have
//     been waiting, as long as its burst credit covers its request
//     (TestSimLightUserWaitsOneTurnover: zero requests dispatched between
//     a light request's arrival and its own, under a flood of 400).
//   - Models are independent: deficits and rounds are per model, so a
//     user's backlog for model A neither blocks nor costs its requests for
//     model B. (Hence a user's weight holds per model, not summed over the
//     models sharing an Ollama backend.)
//
// # Fair: what the reference implementation did, and the fixes
//
// The reference divided (deficit + burst) by the weight with deficits
// that are only ever subtracted (≤ 0 in practice), so a heavy-user
// "penalty" factor below 1 raised heavy users' priority and, for equal
// positive deficits, a higher weight lowered it; it never replenished
// deficits per round (only a periodic shift), kept its state per worker
// process, woke waiters by 0.1 s polling and never recorded a decision.
// Here the weight multiplies the credit earned per round and never
// divides a debt; priority is the round in which a user can pay, lower
// first, with no multiplicative penalty (heavy use is charged exactly,
// by cost); rounds replenish every waiting user; freed slots are handed
// over by the release; decisions are recorded; the shares are asserted.
//
// # Fleet: sharing between replicas
//
// One replica alone keeps all of the above in memory and needs no Redis.
// Replicas of one gateway share two things through Redis when a Fair has
// a Fleet (FairOptions.Fleet; the gateway's scheduler.fleet, on when
// redis.addr is set): each backend's max_concurrent, and users' service,
// so that weights hold fleet-wide.
//
// Slots. Each backend has a pool in Redis, a sorted set of slot leases
// (member "replica:seq", score its expiry). A Fair hands a request to
// backend b only with an idle slot of b its replica holds: its capacity
// on b is the slots it holds. Taking and returning one is memory only
// (Fleet.take, Fleet.put under the Fair's mutex). When requests wait and
// no held slot is idle, Fair tells the Fleet's loop, which claims slots
// with one Lua script (claimScript) outside the Fair's mutex, then
// dispatches them to the waiters. A claim drops expired leases, takes
// back what the replica offers, and grants n = min(wanted, free −
// better), where better counts the other replicas' bids with a strictly
// lower key: a replica short of slots leaves a bid (the key of the
// waiter a slot of b would go to next) and publishes its demand on a
// pub/sub channel. Idle slots are kept for a short grace (SlotLease/20,
// 100 ms to 1 s), so a replica's next request needs no round trip, and
// go back at once when another replica's demand notice arrives. A slot
// freed while another replica bids is not reused locally without a
// claim: it stays only if no lower bid waits, else it is released and
// announced. Any slot a claim leaves free while others bid (set aside
// for a lower bid) is announced too, so the better bidder claims it at
// once rather than at its safety tick.
//
// Heartbeats. Every Heartbeat (SlotLease/4, at most 1 s) a replica beats
// a heartbeat on each backend whose slots it holds and renews those
// leases, in one script per backend (renewScript); every claim beats the
// claimer's too. Both scripts first take back the slots of any replica
// whose last beat there is older than DeadAfter (2.5 heartbeats, 2.5 s
// by default): a replica that dies (SIGKILL, a crash, a lost host) stops
// beating, and its slots come back after about two heartbeats instead
// of at the end of their leases (10 s: that halved capacity after a
// replica was killed), claimed by the waiting replicas at their next
// claim (their safety tick, 500 ms, at the latest; nothing announces a
// death); its bid lapses after 2 s. A missing beat is taken for a death
// only while beats kept coming from the others: after a silence of more
// than 1.5 heartbeats on a backend (Redis stalled or restarted, or every
// replica was), nobody is judged until beats have run for DeadAfter
// again, so a stall of Redis itself frees nobody's slots. The lease
// itself (SlotLease) is what bounds a replica that can reach nobody, as
// before. Waiting is event-
// driven: Fair's demand, release and demand notices from the channel,
// and that slow safety timer; nothing polls Redis in a loop.
//
// Keys. Each user's service is an exponentially decayed count of the
// estimated tokens dispatched for it, contended or not (half-life 60 s:
// unlike the DRR's deficits, uncontended use weighs on the user's key
// for a minute or so), kept in a Redis
// hash; each replica pushes what it served and re-reads the counters of
// its recent users every 100 ms in one round trip. A bid's key is the
// user's service divided by its weight (lower first); a waiter promoted
// by the starvation bound bids minus its wait in seconds, below every
// key, from its replica's next claim (within the 500 ms safety tick:
// fleet-wide, a waiter is served within StarvationAfter plus that tick
// plus one slot turnover; TestFleet_NoStarvationAcrossReplicas). So, between replicas, a freed slot goes to the user furthest
// below its weighted share (least attained weighted service), and a
// light user on one replica gets the next slot ahead of a heavy user's
// backlog on another; within a replica the DRR above orders its users.
//
// Cost. An uncontended request with an idle held slot costs the fast path
// plus about 60 ns, no round trip and no allocation; without one it
// costs one claim (about 0.2 ms on loopback Redis, loop wake-ups
// included: BenchmarkFleet_Acquire). Under cross-replica contention each
// handover of a freed slot costs one claim.
//
// Consistency and error bounds. Every change to a pool is one atomic
// script, so while Redis is up and replicas renew in time, the live
// leases of a backend never exceed max_concurrent (the caller's value:
// replicas must agree on it) and no replica serves beyond its leases:
// the cap is exact. A replica killed gives nothing away early: its
// connections to the backends close with it, so its slots are free when
// the others take them back. The cap can be exceeded only (1) by a
// replica stalled (SIGSTOP, a frozen VM) longer than DeadAfter while the
// others beat, or longer than SlotLease, whose requests still run
// (renewal then finds the leases lost and it does not reuse them: at
// most its slots in use, for those requests' time), (2) after a Redis restart until each replica's
// next renewal re-leases its slots in use while room remains (at most
// the slots in use fleet-wide not yet re-leased), (3) while Redis is
// down, below. Shares: a slot goes to the lowest bid at the moment of
// the claim; a replica's own users' service is exact, other replicas'
// users' is up to 100 ms (one flush) old, and a bid up to one claim old.
// So under saturation each backlogged user's weighted service S/w stays
// within about one request's cost plus one flush interval's fleet-wide
// service per replica of the others', a bound that does not grow with
// time: shares converge to the weights (3:1 across two replicas measured
// 0.747–0.750 in TestFleet_WeightedSharesAcrossReplicas, with 10 ms
// requests and with 2 ms ones, as short as a handover; 0.752 end to end
// in the gateway's TestFleet_TwoReplicasShareCapAndWeights). Scripts
// take the caller's clock, as core/quota's: a skew of δ between replicas
// moves lease expiries by δ.
//
// Redis down. The first failed call trips a breaker (logged once, and
// once when it closes): each replica then schedules alone with
// max(1, max_concurrent / live replicas) slots per backend, where live is
// the number of replicas whose fleet-wide heartbeat (a sorted set
// beaten every Heartbeat, each entry current for SlotLease) was current
// at this replica's last beat (a replica that
// never reached Redis counts itself alone); the sum stays
// within max_concurrent when that count is right (with the "at least 1"
// rounding, up to one slot per replica more). No request waits on Redis
// meanwhile: waiters get the share at once. A probe each second ends the
// outage: the slots in use are leased again and sharing resumes.
package sched

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/mindrouter/mindrouter/core/apierr"
	"github.com/mindrouter/mindrouter/core/backend"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// Request is what admission needs to know about a request.
type Request struct {
	Model     string
	User      string // principal's user id ("" for the admin key today)
	Group     string
	Weight    float64 // scheduler weight (0 = 1)
	EstTokens int     // estimated prompt+completion tokens (0 = unknown)
	// Needs is what the request needs from the model beyond its name:
	// a Placer's hard constraints (the zero value needs nothing).
	Needs Needs
	// Exclude lists backends already tried by this request (retries go
	// elsewhere when possible).
	Exclude []*backend.Backend
	// Decision, when the server sets it and the Admitter records
	// decisions (FairOptions.Record), is filled with what was decided for
	// this request (see Decision); nil: nothing is recorded.
	Decision *Decision

	lease lease // storage of the Lease Admit returns; see the package doc
}

// Needs is what a request needs from its model, as far as the server
// knows before admission; discovery's capabilities must offer it.
type Needs struct {
	Generate   bool // chat or text completion: not an embedding-only model
	Embed      bool // an embeddings request
	Vision     bool // image input
	Tools      bool // tool definitions
	Structured bool // JSON object or JSON schema output
}

// Lease is one admitted request's hold on a backend slot.
type Lease interface {
	// Backend is the backend the request must go to.
	Backend() *backend.Backend
	// Release returns the slot. It is idempotent.
	Release()
}

// Admitter decides which backend serves a request and when.
type Admitter interface {
	// Admit returns a Lease on a backend for req, waiting for a slot if
	// need be, or an *apierr.Error (holding nothing).
	Admit(ctx context.Context, req *Request) (Lease, error)
}

// Retry-After, in seconds, of the 503 errors of Admit.
const (
	RetryAfterUnavailable = 5 // no healthy backend: wait for discovery
	RetryAfterBusy        = 2 // every slot taken
)

// ErrLeaseHeld is returned by Admit for a Request whose previous lease was
// not released: a bug in the caller.
var ErrLeaseHeld = errors.New("sched: request already holds a lease; release it before admitting again")

// lease is the Lease stored in a Request.
type lease struct {
	b    atomic.Pointer[backend.Backend]
	held atomic.Bool
	// owner, when set, returns the slot on release instead of the lease
	// (Fair hands it straight to its next waiter). Written before held is
	// set, read after held is cleared.
	owner releaser
}

// releaser is an Admitter that takes back the slots of its leases.
type releaser interface {
	// released returns the slot held on b, or hands it to a waiter.
	released(b *backend.Backend)
}

func (l *lease) grant(b *backend.Backend) Lease { return l.grantFor(b, nil) }

func (l *lease) grantFor(b *backend.Backend, owner releaser) Lease {
	l.owner = owner
	l.b.Store(b)
	l.held.Store(true)
	return l
}

// Backend implements Lease.
func (l *lease) Backend() *backend.Backend { return l.b.Load() }

// Release implements Lease.
func (l *lease) Release() {
	if l.held.CompareAndSwap(true, false) {
		b := l.b.Load()
		if l.owner != nil {
			l.owner.released(b)
			return
		}
		b.Release()
	}
}

// LeastLoaded admits a request to the backend with the lowest in-flight
// share of its capacity among those that are healthy, have an adapter
// loaded and serve the model (preferring backends not in Exclude). When
// that backend has a free slot the request takes it at once (no timer, no
// allocation); otherwise every candidate is full and the request waits
// for a slot on it, up to the queue wait or until ctx is done.
type LeastLoaded struct {
	reg     *backend.Registry
	maxWait time.Duration
}

var _ Admitter = (*LeastLoaded)(nil)

// NewLeastLoaded returns a LeastLoaded over reg's backends that waits at
// most maxWait for a slot (timeouts.queue_wait).
func NewLeastLoaded(reg *backend.Registry, maxWait time.Duration) *LeastLoaded {
	return &LeastLoaded{reg: reg, maxWait: maxWait}
}

// pickTries bounds how often Admit picks again when the chosen backend's
// last free slot was taken between the pick and the acquire.
const pickTries = 3

// Admit implements Admitter.
func (l *LeastLoaded) Admit(ctx context.Context, req *Request) (Lease, error) {
	if req.lease.held.Load() {
		return nil, ErrLeaseHeld
	}
	if err := ctx.Err(); err != nil {
		return nil, l.ctxError(req.Model, err)
	}
	var b *backend.Backend
	for range pickTries {
		var known bool
		b, known = l.pick(req)
		if b == nil {
			if known {
				e := apierr.New(canon.ErrOverloaded, "backend_unavailable",
					fmt.Sprintf("no healthy backend is serving model %q right now", req.Model))
				e.RetryAfter = RetryAfterUnavailable
				return nil, e
			}
			return nil, apierr.New(canon.ErrNotFound, "model_not_found",
				fmt.Sprintf("the model %q does not exist or is not served by any backend", req.Model))
		}
		if b.TryAcquire() {
			return req.lease.grant(b), nil
		}
	}
	// The least loaded candidate is full, so every candidate is: wait on it.
	switch err := b.AcquireContext(ctx, l.maxWait); {
	case err == nil:
		return req.lease.grant(b), nil
	case errors.Is(err, backend.ErrQueueTimeout):
		return nil, busy(req.Model, err)
	default:
		return nil, l.ctxError(req.Model, err)
	}
}

// pick returns the least loaded routable backend serving req.Model,
// preferring backends not in req.Exclude and, among them, one whose
// breaker waits for its probe, or nil; known reports whether any backend
// (routable or not) knows the model.
func (l *LeastLoaded) pick(req *Request) (best *backend.Backend, known bool) {
	var fallback *backend.Backend // least loaded excluded candidate
	var bestLoad, fallbackLoad float64
	for _, b := range l.reg.Backends() {
		st := b.Status()
		if !st.Serves(req.Model) {
			continue
		}
		known = true
		if !b.Routable() {
			continue
		}
		load := b.LoadShare()
		if b.ProbeDue() && b.InFlight() < int64(b.Capacity()) {
			// Its breaker waits for its half-open probe and it has a free
			// slot (a full one, its requests hung, is not waited on):
			// this request is the probe, ahead of any load (the
			// breaker's doc in core/backend).
			load = -1
		}
		if excluded(req.Exclude, b) {
			if fallback == nil || load < fallbackLoad {
				fallback, fallbackLoad = b, load
			}
			continue
		}
		if best == nil || load < bestLoad {
			best, bestLoad = b, load
		}
	}
	if best == nil {
		best = fallback
	}
	return best, known
}

func excluded(list []*backend.Backend, b *backend.Backend) bool {
	for _, x := range list {
		if x == b {
			return true
		}
	}
	return false
}

func busy(model string, cause error) *apierr.Error {
	e := apierr.Wrap(canon.ErrOverloaded, "backend_busy",
		fmt.Sprintf("every backend serving model %q is at capacity; retry shortly", model), cause)
	e.RetryAfter = RetryAfterBusy
	return e
}

// ctxError is the error for a ctx that ended before a slot was found.
func (l *LeastLoaded) ctxError(model string, err error) *apierr.Error {
	if errors.Is(err, context.DeadlineExceeded) {
		return busy(model, err)
	}
	return apierr.Wrap(canon.ErrOverloaded, "request_cancelled",
		"the request was cancelled while waiting for a backend", err)
}
