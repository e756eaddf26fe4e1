package quota

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/mindrouter/mindrouter/core/auth"
)

const nShards = 64

// graveSize is how many finished Tickets each shard holds before reusing
// the oldest: a second Done on a ticket (a deferred Done after an explicit
// one) is a no-op as long as fewer than nShards·graveSize requests finish
// in between — microseconds against tens of thousands of requests.
const graveSize = 64

type shard struct {
	mu    sync.Mutex
	users map[int64]*user
	grave [graveSize]*Ticket
	next  int
}

// user is one user's state on this replica. Every field is guarded by mu.
type user struct {
	mu  sync.Mutex
	id  int64
	lim auth.Limits

	rpmKey, concKey, lifeKey string
	lifeAckKey               string // the lifetime charges applied, per replica (tokenScript)
	tokKey                   string // the current period's counter
	period                   int64  // index k of the current period
	periodStart, periodEnd   int64  // ns

	// Local accounting, kept in every mode: the authority when Redis is
	// absent or down (mode local), and the figures reports and the
	// store get without Redis.
	win       window
	inFlight  int
	used      int64 // tokens charged this period (in fleet mode: Redis's figure + charges not yet pushed)
	resv      int64 // tokens reserved by tickets in flight this period
	reservers int   // tickets holding a reservation this period
	life      int64
	loaded    bool // the store's figures were read (or there is no store)
	evicted   bool // removed from the map: look it up again
	loadAt    int64
	dirty     bool // changed since the last persist
	lastSeen  int64

	// Fleet state: leases from Redis.
	permits, permitGranted int
	permitExp              int64
	permitMember           string
	permitAt               int64 // when the last batch was fetched
	admitsSinceFetch       int
	rpmCounted             int // permits counted fleet-wide at the last fetch

	slots    int   // concurrency slots held in Redis (in use + free)
	slotUse  int64 // last time a slot was taken or released
	slotBeat int64

	free       int64 // leased tokens not reserved
	others     int64 // other replicas' token leases at the last call
	tokAt      int64 // last lease fetch
	tokBeat    int64 // last lease refresh
	chargedTok int64 // tokens charged since the last fetch (for prefetch sizing)
	pend       int64 // period tokens not yet pushed to Redis
	lifePend   int64 // lifetime tokens not yet pushed
	oldPend    int64 // charges of the previous period not yet pushed
	oldKey     string
	// Running totals of the charges this replica sent (pushed or
	// pending) to the current period's counter, to oldKey's, and to the
	// lifetime counter: the token script applies each charge once by
	// them (see tokenScript), so a call whose reply was lost can be sent
	// again.
	sent, oldSent, lifeSent int64
	downAdmits              int // admissions made while Redis was down
	oldPeriodAt             int64
}

func (u *user) unlimited() bool {
	return u.lim.TokenBudget <= 0 && u.lim.RPM <= 0 && u.lim.MaxConcurrent <= 0
}

// periodOf returns the index and bounds (ns) of the budget period at now:
// period k is [anchor + k·P, anchor + (k+1)·P).
func periodOf(now int64, lim *auth.Limits) (k, start, end int64) {
	p := int64(lim.BudgetPeriod)
	if p <= 0 {
		p = int64(30 * 24 * time.Hour)
	}
	var a int64
	if !lim.PeriodAnchor.IsZero() {
		a = lim.PeriodAnchor.UnixNano()
	}
	k = floorDiv(now-a, p)
	start = a + k*p
	return k, start, start + p
}

// roll moves u to the period at now. The old period's unreserved lease is
// dropped (its counter expires) and its pending charges are kept apart so
// they are pushed to the old counter.
func (u *user) roll(now int64) {
	k, start, end := periodOf(now, &u.lim)
	if u.tokKey != "" && (start == u.periodStart || start < u.periodStart && now < u.periodEnd) {
		// Same period, or a time read before another request moved u on
		// (Done runs with its admission time): never go back.
		return
	}
	if u.tokKey != "" && u.pend != 0 {
		// Charges still pending for an older counter go to this one's
		// (as before): its running total grows by them.
		u.oldSent = u.sent + u.oldPend
		u.oldPend += u.pend
		u.oldKey = u.tokKey
		u.oldPeriodAt = u.periodStart
	}
	u.pend, u.sent = 0, 0
	u.period, u.periodStart, u.periodEnd = k, start, end
	u.tokKey = tokKey(u.id, start)
	u.used, u.resv, u.reservers, u.free, u.others = 0, 0, 0, 0, 0
}

func tokKey(uid, periodStart int64) string {
	return "mr:q:{" + strconv.FormatInt(uid, 10) + "}:t:" + strconv.FormatInt(periodStart/int64(time.Millisecond), 10)
}

// user returns the state of uid, locked, creating it and loading the
// store's figures on first sight (one store read per user per process).
func (l *Limiter) user(ctx context.Context, uid int64, lim *auth.Limits, now int64) *user {
	sh := &l.shards[uint64(uid)%nShards]
	for {
		sh.mu.Lock()
		u := sh.users[uid]
		if u == nil {
			break
		}
		sh.mu.Unlock()
		u.mu.Lock()
		if !u.evicted {
			return u
		}
		u.mu.Unlock()
	}
	// sh.mu is held here.
	id := strconv.FormatInt(uid, 10)
	u := &user{id: uid, lim: *lim, lastSeen: now,
		rpmKey: "mr:q:{" + id + "}:rpm", concKey: "mr:q:{" + id + "}:conc", lifeKey: "mr:q:{" + id + "}:life",
		lifeAckKey: "mr:q:{" + id + "}:lifeack"}
	u.roll(now)
	u.mu.Lock() // others wait for the load below
	sh.users[uid] = u
	sh.mu.Unlock()
	l.load(ctx, u)
	return u
}

// load reads the store's figures for u (u.mu held).
func (l *Limiter) load(ctx context.Context, u *user) {
	if l.o.Store == nil {
		u.loaded = true
		return
	}
	u.loadAt = u.lastSeen
	used, life, err := l.stored(ctx, u)
	if err != nil {
		l.log.Warn("quota: read stored usage", "user", u.id, "err", err)
		return
	}
	u.used += used
	u.life += life
	u.loaded = true
}

// stored returns the store's period usage (0 when it belongs to another
// period) and lifetime tokens for u's current period.
func (l *Limiter) stored(ctx context.Context, u *user) (used, life int64, err error) {
	if l.o.Store == nil {
		return 0, 0, nil
	}
	s, err := l.o.Store.Usage(ctx, u.id)
	if err != nil {
		return 0, 0, err
	}
	if !s.PeriodStart.IsZero() && s.PeriodStart.UnixNano() == u.periodStart {
		used = s.TokensUsed
	}
	return used, s.LifetimeTokens, nil
}

// eachUser calls f for every user, locking each in turn, until f returns
// false.
func (l *Limiter) eachUser(f func(u *user) bool) {
	var us []*user
	for i := range l.shards {
		sh := &l.shards[i]
		sh.mu.Lock()
		for _, u := range sh.users {
			us = append(us, u)
		}
		sh.mu.Unlock()
	}
	for _, u := range us {
		u.mu.Lock()
		ok := u.evicted || f(u)
		u.mu.Unlock()
		if !ok {
			return
		}
	}
}

// evictIdle forgets users with nothing in flight, held or unsaved that
// were last seen before cutoff.
func (l *Limiter) evictIdle(cutoff int64) {
	for i := range l.shards {
		sh := &l.shards[i]
		sh.mu.Lock()
		for id, u := range sh.users {
			if !u.mu.TryLock() {
				continue
			}
			idle := u.lastSeen < cutoff && u.inFlight == 0 && u.permits == 0 && u.slots == 0 &&
				u.free == 0 && u.resv == 0 && u.pend == 0 && u.lifePend == 0 && u.oldPend == 0 && !u.dirty
			if idle {
				u.evicted = true
				delete(sh.users, id)
			}
			u.mu.Unlock()
		}
		sh.mu.Unlock()
	}
}
