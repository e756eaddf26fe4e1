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
//   - 503 backend_busy (Retry-After): no slot freed up within the queue
//     wait (or ctx's deadline passed while waiting);
//   - 503 request_cancelled: ctx was cancelled before a slot was found.
//
// A request that fails on one backend and may be retried lists the
// backends it has tried in Request.Exclude; the Admitter then prefers any
// other candidate, and falls back to an excluded one only when no other
// can serve.
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
// LeastLoaded is today's policy. Fair sharing between users and groups
// (User, Group, Weight) and token-aware placement (EstTokens) are meant to
// arrive as other Admitters behind the same interface.
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
	// Exclude lists backends already tried by this request (retries go
	// elsewhere when possible).
	Exclude []*backend.Backend
	// Decision, when the server sets it and the Admitter records
	// decisions (FairOptions.Record), is filled with what was decided for
	// this request (see Decision); nil: nothing is recorded.
	Decision *Decision

	lease lease // storage of the Lease Admit returns; see the package doc
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
	// owner, when set, is told of each release after the slot is returned
	// (Fair hands the slot to its next waiter). Written before held is
	// set, read after held is cleared.
	owner releaser
}

// releaser is an Admitter that must hear of every released slot.
type releaser interface{ released(b *backend.Backend) }

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
		b.Release()
		if l.owner != nil {
			l.owner.released(b)
		}
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
// preferring backends not in req.Exclude, or nil; known reports whether
// any backend (routable or not) knows the model.
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
