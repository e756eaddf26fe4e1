package server

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/mindrouter/mindrouter/core/apierr"
	"github.com/mindrouter/mindrouter/core/auth"
	"github.com/mindrouter/mindrouter/core/config"
	"github.com/mindrouter/mindrouter/core/outcome"
	"github.com/mindrouter/mindrouter/core/quota"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// adminLimiter bounds each user's use of the account and admin API
// (limits.admin): a token bucket of requests_per_minute (a burst of as
// many, refilled evenly) and a count of requests in flight.
//
// It is in-process, per replica, unlike the user's inference quotas
// (core/quota, shared through Redis), and that is enough for what it is
// for: not a quota anyone is billed against, but a bound on what one
// user's loop or trickled uploads can cost a replica (store writes, key
// hashing, buffered bodies). A fleet of N replicas lets a user do N times
// the rate, still bounded; and the admin API keeps working, limits
// included, when Redis is down, which is when an admin may need it.
type adminLimiter struct {
	rpm, conc int
	now       func() time.Time

	mu        sync.Mutex
	users     map[adminUser]*adminHold
	lastSweep time.Time
}

// adminUser names whose limits a request counts against: the store's
// user, or (no store user: the bootstrap admin key) the principal's name.
type adminUser struct {
	id   int64
	name string
}

// adminHold is one user's bucket and count; it is also the Ticket of each
// of its admitted requests (Done gives the slot back), so admitting
// allocates only a user's first request.
type adminHold struct {
	l        *adminLimiter
	tokens   float64
	last     time.Time
	inFlight int
}

// newAdminLimiter returns the limiter of l, nil when it limits nothing.
func newAdminLimiter(l config.AdminLimits) *adminLimiter {
	if l.RequestsPerMinute <= 0 && l.MaxConcurrent <= 0 {
		return nil
	}
	return &adminLimiter{rpm: l.RequestsPerMinute, conc: l.MaxConcurrent, now: time.Now,
		users: map[adminUser]*adminHold{}}
}

// adminSweep is how often idle users are forgotten: a bucket untouched
// for a minute is full again, so forgetting it changes nothing.
const adminSweep = time.Minute

// admit counts one request of p, or refuses it with a 429.
func (l *adminLimiter) admit(p *auth.Principal) (*adminHold, error) {
	u := adminUser{id: p.UserID}
	if u.id == 0 {
		u.name = p.User
		if u.name == "" {
			u.name = p.KeyID
		}
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.lastSweep) >= adminSweep {
		for k, h := range l.users {
			if h.inFlight == 0 && now.Sub(h.last) >= adminSweep {
				delete(l.users, k)
			}
		}
		l.lastSweep = now
	}
	h := l.users[u]
	if h == nil {
		h = &adminHold{l: l, tokens: float64(l.rpm), last: now}
		l.users[u] = h
	}
	if l.rpm > 0 {
		h.tokens = math.Min(float64(l.rpm), h.tokens+now.Sub(h.last).Minutes()*float64(l.rpm))
	}
	h.last = now
	if l.conc > 0 && h.inFlight >= l.conc {
		e := apierr.New(canon.ErrRateLimit, "concurrency_limit_exceeded",
			"too many account or admin API requests in flight for this user (limits.admin.max_concurrent "+itoa(int64(l.conc))+"); retry shortly")
		e.RetryAfter = 1
		return nil, e
	}
	if l.rpm > 0 {
		if h.tokens < 1 {
			wait := time.Duration((1 - h.tokens) / float64(l.rpm) * float64(time.Minute))
			e := apierr.New(canon.ErrRateLimit, "rate_limit_exceeded",
				"too many account or admin API requests for this user (limits.admin.requests_per_minute "+itoa(int64(l.rpm))+"); retry later")
			e.RetryAfter = max(int((wait+time.Second-1)/time.Second), 1)
			return nil, e
		}
		h.tokens--
	}
	h.inFlight++
	return h, nil
}

// Reserve implements Ticket: the admin API has no token budget.
func (*adminHold) Reserve(_ context.Context, _, want int64) (int64, error) { return want, nil }

// Done implements Ticket: the request's slot is free again.
func (h *adminHold) Done(int64) {
	h.l.mu.Lock()
	h.inFlight--
	h.l.mu.Unlock()
}

// Status implements Ticket.
func (*adminHold) Status() quota.Status { return quota.Status{} }

// adminLimit is the admin and self-service chain's limit stage. Its hold
// is the exchange's ticket, given back when the request ends.
type adminLimit struct{ l *adminLimiter }

func (adminLimit) stage() outcome.Stage { return outcome.StageLimit }

func (a adminLimit) run(ctx *fasthttp.RequestCtx, ex *exchange) error {
	if a.l == nil {
		return nil
	}
	h, err := a.l.admit(&ex.principal)
	if err != nil {
		ctx.SetConnectionClose() // its body, if any, is not read
		return err
	}
	ex.ticket = h
	return nil
}
