package quota

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mindrouter/mindrouter/core/auth"
	"github.com/mindrouter/mindrouter/core/store"
)

// Mode is what the Limiter does while Redis is unreachable.
type Mode string

// Modes.
const (
	ModeLocal  Mode = "local"  // each replica enforces every limit alone (N replicas: up to N× each limit)
	ModeOpen   Mode = "open"   // admit without limits (usage still counted)
	ModeClosed Mode = "closed" // deny: Denied{Kind: "unavailable"}, which the server answers with 503
)

// String returns the mode's config spelling.
func (m Mode) String() string { return string(m) }

// Denial kinds.
const (
	KindRequests    = "requests"
	KindTokens      = "tokens"
	KindConcurrency = "concurrency"
	KindUnavailable = "unavailable"
)

// ErrRedisDown is returned (wrapped) by Usage and Reset while Redis is
// unreachable; Reset has still reset this replica and the store.
var ErrRedisDown = errors.New("quota: redis unavailable")

// ErrTicketDone is returned by Reserve on a ticket already settled.
var ErrTicketDone = errors.New("quota: ticket already done")

// Options configure a Limiter.
type Options struct {
	Redis        redis.UniversalClient // nil: this gateway alone, all state in memory
	Store        store.Store           // counters persisted here and loaded on first use; nil: not persisted
	Replica      string                // unique per process (default: random)
	RedisDown    Mode                  // default "local"
	Lease        time.Duration         // default 1s
	PersistEvery time.Duration         // default 10s
	// CallTimeout bounds one Redis call, dial retries included (default
	// 1s); the client's own timeouts (redis.timeout) usually end it first.
	CallTimeout time.Duration
	Log         *slog.Logger
	Now         func() time.Time // tests
}

// Limiter enforces users' quotas. It is safe for concurrent use; Run must
// be running for leases to go back, counters to be persisted and Redis
// to be found again after an outage.
type Limiter struct {
	o      Options
	rdb    redis.UniversalClient
	log    *slog.Logger
	lease  int64 // ns
	shards [nShards]shard
	down   atomic.Bool // Redis unreachable: the breaker is open
	seq    atomic.Uint64
	pool   sync.Pool
}

// New returns a Limiter; call Run to start its background work.
func New(o Options) *Limiter {
	if o.RedisDown == "" {
		o.RedisDown = ModeLocal
	}
	if o.Lease <= 0 {
		o.Lease = time.Second
	}
	if o.PersistEvery <= 0 {
		o.PersistEvery = 10 * time.Second
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = time.Second
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Replica == "" {
		var b [6]byte
		_, _ = rand.Read(b[:])
		o.Replica = hex.EncodeToString(b[:])
	}
	l := &Limiter{o: o, rdb: o.Redis, log: o.Log.With("component", "quota"), lease: int64(o.Lease)}
	for i := range l.shards {
		l.shards[i].users = make(map[int64]*user)
	}
	l.pool.New = func() any { return new(Ticket) }
	return l
}

func (l *Limiter) now() int64 {
	if l.o.Now != nil {
		return l.o.Now().UnixNano()
	}
	return time.Now().UnixNano()
}

// rctx bounds one Redis call.
func (l *Limiter) rctx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, l.o.CallTimeout)
}

// fleet reports whether limits are held in Redis right now.
func (l *Limiter) fleet() bool { return l.rdb != nil && !l.down.Load() }

// trip opens the breaker after a Redis failure: until Run's probe finds
// Redis again, requests use the RedisDown mode without waiting on Redis.
// A failure because the caller's ctx ended (the client went away) says
// nothing about Redis.
func (l *Limiter) trip(ctx context.Context, err error) {
	if ctx.Err() != nil {
		return
	}
	if l.down.CompareAndSwap(false, true) {
		l.log.Warn("quota: redis unreachable; limits now follow redis_down", "mode", string(l.o.RedisDown), "err", err)
	}
}

// Status is a user's standing after a request, for the x-ratelimit-*
// headers. Limits of 0 mean unlimited.
type Status struct {
	LimitRequests, RemainingRequests int
	ResetRequests                    time.Duration // until the oldest counted request leaves the window
	LimitTokens, RemainingTokens     int64
	ResetTokens                      time.Duration // until the budget period ends
}

// Denied is a refusal. Msg is a sentence safe to show the client.
type Denied struct {
	Kind       string // KindRequests, KindTokens, KindConcurrency or KindUnavailable
	Status     Status
	RetryAfter time.Duration // whole seconds, at least 1s
	Msg        string
}

func (d *Denied) Error() string { return d.Msg }

// Ticket is one admitted request. It is owned by that request and not
// safe for concurrent use, except that Done may race with itself.
type Ticket struct {
	l      *Limiter
	u      *user
	done   bool
	slot   bool
	leased bool // resv came from the Redis lease
	resv   int64
	period int64
	at     int64 // admission time: Reserve and Done use it (reading the clock costs more than the rest on some VMs)
	status Status
}

// Admit checks RPM, concurrency and that the budget is not spent, counting
// the request and taking a concurrency slot. A refusal is a *Denied. With
// headroom it takes no Redis round trip: permits and slots come from the
// replica's lease.
func (l *Limiter) Admit(ctx context.Context, p *auth.Principal) (*Ticket, error) {
	now := l.now()
	u := l.user(ctx, p.UserID, &p.Limits, now)
	defer u.mu.Unlock()
	u.lim = p.Limits
	u.lastSeen = now
	u.roll(now)
	if !u.loaded && now-u.loadAt >= int64(10*time.Second) {
		l.load(ctx, u) // the store was down when the user was first seen
	}
	if !u.unlimited() {
		if d := l.admitLocked(ctx, u, now); d != nil {
			return nil, d
		}
	}
	u.inFlight++
	if u.lim.RPM > 0 {
		u.win.add(now)
	}
	t := l.pool.Get().(*Ticket)
	*t = Ticket{l: l, u: u, slot: true, period: u.period, at: now}
	l.status(u, now, &t.status)
	return t, nil
}

// admitLocked decides a limited user's request (u.mu held); nil admits.
func (l *Limiter) admitLocked(ctx context.Context, u *user, now int64) *Denied {
	lim := &u.lim
	needSlot, needPermit := lim.MaxConcurrent > 0, lim.RPM > 0
	if l.fleet() {
		// Held slots count only while Redis surely still has them (Run
		// refreshes them every lease; Redis forgets them after 3).
		slotOK := !needSlot || u.slots > u.inFlight && now-u.slotBeat < 2*l.lease
		permitOK := !needPermit || (u.permits > 0 && now < u.permitExp)
		if !slotOK || !permitOK {
			keep := u.slots // a permit fetch keeps the slots as they are
			if !slotOK {
				keep = u.inFlight // the new slot comes on top of those in use
			}
			d, err := l.fetchAdmit(ctx, u, now, !slotOK, needPermit && !permitOK, keep)
			if err != nil {
				l.trip(ctx, err)
				return l.admitDown(u, now)
			}
			if d != nil {
				return d
			}
		}
		if needPermit {
			u.permits--
			u.admitsSinceFetch++
		}
		if needSlot {
			u.slotUse = now
		}
		d := l.tokensLeft(u, now)
		if d != nil && now-u.tokBeat >= l.lease {
			// Spent as far as this replica knows: look again, at most
			// once a lease, so a Reset elsewhere takes effect here.
			if err := l.tokenCall(ctx, u, now, u.resv+u.free, 0, 0, 0); err != nil {
				l.trip(ctx, err)
			} else {
				d = l.tokensLeft(u, now)
			}
		}
		if d != nil {
			l.unadmit(u, needPermit)
		}
		return d
	}
	if l.rdb != nil {
		return l.admitDown(u, now)
	}
	return l.admitLocal(u, now)
}

// unadmit gives back the permit taken by a request refused for tokens
// (its slot is counted only once admitted).
func (l *Limiter) unadmit(u *user, needPermit bool) {
	if needPermit {
		u.permits++
		u.admitsSinceFetch--
	}
}

// admitDown applies the RedisDown mode.
func (l *Limiter) admitDown(u *user, now int64) *Denied {
	switch l.o.RedisDown {
	case ModeOpen:
		u.downAdmits++
		return nil
	case ModeClosed:
		d := &Denied{Kind: KindUnavailable, RetryAfter: time.Second,
			Msg: "The quota service is temporarily unavailable; retry shortly."}
		l.status(u, now, &d.Status)
		return d
	}
	d := l.admitLocal(u, now)
	if d == nil {
		u.downAdmits++
	}
	return d
}

// admitLocal enforces the limits with this replica's state alone.
func (l *Limiter) admitLocal(u *user, now int64) *Denied {
	lim := &u.lim
	if lim.MaxConcurrent > 0 && u.inFlight >= lim.MaxConcurrent {
		return l.denyConcurrency(u, now)
	}
	if lim.RPM > 0 && u.win.count(now) >= lim.RPM {
		return l.denyRequests(u, now, u.win.untilFree(now))
	}
	return l.tokensLeft(u, now)
}

// tokensLeft refuses a request when the period's budget is spent.
func (l *Limiter) tokensLeft(u *user, now int64) *Denied {
	b := u.lim.TokenBudget
	if b <= 0 || u.used+u.resv < b || u.free > 0 {
		return nil
	}
	return l.denyTokens(u, now)
}

func (l *Limiter) denyConcurrency(u *user, now int64) *Denied {
	d := &Denied{Kind: KindConcurrency, RetryAfter: time.Second,
		Msg: fmt.Sprintf("Too many concurrent requests: the limit is %d at a time.", u.lim.MaxConcurrent)}
	l.status(u, now, &d.Status)
	return d
}

func (l *Limiter) denyRequests(u *user, now int64, retry time.Duration) *Denied {
	d := &Denied{Kind: KindRequests, RetryAfter: roundUp(retry),
		Msg: fmt.Sprintf("Rate limit exceeded: %d requests per minute.", u.lim.RPM)}
	l.status(u, now, &d.Status)
	d.Status.RemainingRequests = 0
	return d
}

func (l *Limiter) denyTokens(u *user, now int64) *Denied {
	d := &Denied{Kind: KindTokens, RetryAfter: roundUp(time.Duration(u.periodEnd - now)),
		Msg: fmt.Sprintf("Token budget exhausted: %d tokens per budget period; it renews at %s.",
			u.lim.TokenBudget, time.Unix(0, u.periodEnd).UTC().Format(time.RFC3339))}
	l.status(u, now, &d.Status)
	d.Status.RemainingTokens = 0
	return d
}

// roundUp rounds d up to whole seconds, at least 1s (Retry-After is in
// seconds, and 0 would invite a retry storm).
func roundUp(d time.Duration) time.Duration {
	if d < time.Second {
		return time.Second
	}
	return (d + time.Second - 1).Truncate(time.Second)
}

// status fills s from u (u.mu held).
func (l *Limiter) status(u *user, now int64, s *Status) {
	lim := &u.lim
	*s = Status{LimitRequests: lim.RPM, LimitTokens: lim.TokenBudget}
	if lim.RPM > 0 {
		n := u.win.count(now)
		if l.fleet() && now < u.permitExp {
			// The fleet's count at the last fetch, less what this
			// replica still holds unused.
			n = max(n, u.rpmCounted-u.permits)
		}
		s.RemainingRequests = max(0, lim.RPM-n)
		s.ResetRequests = u.win.untilFree(now)
	}
	if lim.TokenBudget > 0 {
		s.RemainingTokens = max(0, lim.TokenBudget-u.used-u.resv-u.others)
		s.ResetTokens = time.Duration(u.periodEnd - now)
	}
}

// Status is the user's standing when the request was admitted, updated
// by Reserve.
func (t *Ticket) Status() Status { return t.status }

// Reserve takes between min and want tokens of budget for this request
// (min = estimated input + 1; want = input + max output). It never grants
// more than remains; when what remains cannot cover want, requests in
// flight share it (each gets at least min or is refused). granted < min
// is a *Denied{Kind: "tokens"}; the ticket still holds its slot, so the
// caller calls Done(0) after a refusal as after any other end.
func (t *Ticket) Reserve(ctx context.Context, min, want int64) (granted int64, err error) {
	l, u := t.l, t.u
	if want < min {
		want = min
	}
	now := t.at
	u.mu.Lock()
	defer u.mu.Unlock()
	if t.done {
		return 0, ErrTicketDone
	}
	u.roll(now)
	if u.lim.TokenBudget <= 0 {
		// Nothing to hold back: usage is counted at Done.
		l.status(u, now, &t.status)
		return want, nil
	}
	granted, leased, d := l.reserveLocked(ctx, u, now, min, want)
	if d != nil {
		return 0, d
	}
	if t.period != u.period {
		// Admitted in the previous period: the reservation belongs to this one.
		t.resv, t.period, t.leased = 0, u.period, false
	}
	if t.resv == 0 {
		u.reservers++
	}
	t.leased = t.leased || (leased && granted > 0)
	u.resv += granted
	t.resv += granted
	l.status(u, now, &t.status)
	return granted, nil
}

// reserveLocked finds granted tokens for a limited user (u.mu held) and
// reports whether they came from the Redis lease.
func (l *Limiter) reserveLocked(ctx context.Context, u *user, now int64, min, want int64) (int64, bool, *Denied) {
	if l.rdb == nil {
		g := fairShare(min, want, u.lim.TokenBudget-u.used-u.resv, u.reservers)
		if g < min {
			return 0, false, l.denyTokens(u, now)
		}
		return g, false, nil
	}
	if !l.fleet() {
		g, d := l.reserveDown(u, now, min, want)
		return g, false, d
	}
	if u.free > 0 && now-u.tokBeat >= 2*l.lease {
		// Not refreshed for a while (Run stalled?): Redis may have
		// dropped the lease, so ask again rather than spend it.
		u.free = 0
	}
	if u.free < want {
		if err := l.fetchTokens(ctx, u, now, max(0, min-u.free), want-u.free); err != nil {
			l.trip(ctx, err)
			g, d := l.reserveDown(u, now, min, want)
			return g, false, d
		}
	}
	g := fairShare(min, want, u.free, u.reservers)
	if g < min {
		return 0, false, l.denyTokens(u, now)
	}
	u.free -= g
	return g, true, nil
}

// reserveDown applies the RedisDown mode to a reservation.
func (l *Limiter) reserveDown(u *user, now int64, min, want int64) (int64, *Denied) {
	switch l.o.RedisDown {
	case ModeOpen:
		return want, nil
	case ModeClosed:
		d := &Denied{Kind: KindUnavailable, RetryAfter: time.Second,
			Msg: "The quota service is temporarily unavailable; retry shortly."}
		l.status(u, now, &d.Status)
		return 0, d
	}
	g := fairShare(min, want, u.lim.TokenBudget-u.used-u.resv-u.others, u.reservers)
	if g < min {
		return 0, l.denyTokens(u, now)
	}
	return g, nil
}

// fairShare grants want when avail covers it; otherwise the requests in
// flight share what is left: each new one gets avail/(others+1), at least
// need, never more than avail.
func fairShare(need, want, avail int64, others int) int64 {
	if avail >= want {
		return want
	}
	return min(max(avail/int64(others+1), need), avail)
}

// Done settles the request with the tokens really used (which may exceed
// what was granted: that is charged), refunds the rest of the reservation
// and releases the slot. It is idempotent and needs no Reserve before it.
func (t *Ticket) Done(used int64) {
	l, u := t.l, t.u
	if u == nil {
		return
	}
	used = max(used, 0)
	now := t.at
	u.mu.Lock()
	if t.done {
		u.mu.Unlock()
		return
	}
	t.done = true
	// now is the admission time: never move these back.
	u.lastSeen = max(u.lastSeen, now)
	if t.slot {
		u.inFlight--
		u.slotUse = max(u.slotUse, now)
	}
	u.roll(now)
	if t.resv > 0 && t.period == u.period {
		u.resv -= t.resv
		u.reservers--
		if t.leased {
			// The reservation goes back to the free lease, less what
			// was used; use beyond it eats the free lease first.
			u.free = max(0, u.free+t.resv-used)
		}
	}
	u.used += used
	u.life += used
	u.chargedTok += used
	if l.rdb != nil {
		u.pend += used
		u.lifePend += used
		u.sent += used
		u.lifeSent += used
	}
	u.dirty = true
	u.mu.Unlock()
	l.retire(t)
}

// retire keeps t in its shard's grave for a while, then pools the ticket
// it displaces (see graveSize).
func (l *Limiter) retire(t *Ticket) {
	sh := &l.shards[uint64(t.u.id)%nShards]
	sh.mu.Lock()
	old := sh.grave[sh.next]
	sh.grave[sh.next] = t
	sh.next = (sh.next + 1) % graveSize
	sh.mu.Unlock()
	if old != nil {
		l.pool.Put(old)
	}
}
