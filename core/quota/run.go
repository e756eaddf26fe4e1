package quota

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mindrouter/mindrouter/core/auth"
	"github.com/mindrouter/mindrouter/core/store"
)

// idleEvict is how long an idle user's state is kept.
const idleEvict = int64(10 * time.Minute)

// Run does the background work until ctx is done: returns unused leases
// after Options.Lease, refreshes held ones, pushes charges to Redis,
// persists counters every PersistEvery, and probes Redis while it is
// down. On ctx done it returns leases, persists a last time and returns.
func (l *Limiter) Run(ctx context.Context) {
	every := min(max(l.o.Lease/4, 10*time.Millisecond), 250*time.Millisecond)
	tk := time.NewTicker(every)
	defer tk.Stop()
	lastPersist := time.Now()
	for {
		select {
		case <-ctx.Done():
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			l.shutdown(sctx)
			cancel()
			return
		case <-tk.C:
			l.tick(ctx)
			if time.Since(lastPersist) >= l.o.PersistEvery {
				lastPersist = time.Now()
				if err := l.persist(ctx); err != nil {
					l.log.Warn("quota: persist usage", "err", err)
				}
			}
		}
	}
}

// tick is one round of background work.
func (l *Limiter) tick(ctx context.Context) {
	now := l.now()
	if l.rdb != nil {
		if l.down.Load() {
			l.probe(ctx, now)
		} else {
			l.maintain(ctx, now, false)
		}
	}
	l.evictIdle(now - idleEvict)
}

// probe closes the breaker when Redis answers again, after pushing what
// this replica counted meanwhile.
func (l *Limiter) probe(ctx context.Context, now int64) {
	pctx, cancel := l.rctx(ctx)
	err := l.rdb.Ping(pctx).Err()
	cancel()
	if err != nil {
		return
	}
	l.eachUser(func(u *user) bool {
		err = l.reconcile(ctx, u, now)
		return err == nil
	})
	if err != nil {
		l.log.Debug("quota: reconcile after redis outage", "err", err)
		return
	}
	l.down.Store(false)
	l.log.Info("quota: redis reachable again; fleet limits resumed")
}

// reconcile pushes u's outage-time usage into Redis (u.mu held): token
// charges, admissions (as one grant stamped now, which is conservative),
// and its slots in use.
func (l *Limiter) reconcile(ctx context.Context, u *user, now int64) error {
	if err := l.flushOld(ctx, u, now); err != nil {
		return err
	}
	if u.pend != 0 || u.lifePend != 0 || u.free > 0 {
		saved := u.free
		u.free = 0
		if err := l.tokenCall(ctx, u, now, u.resv, 0, 0, 0); err != nil {
			u.free = saved
			return err
		}
	}
	if n := min(u.downAdmits, u.win.count(now)); n > 0 && u.lim.RPM > 0 {
		member := l.o.Replica + ":rc" + strconv.FormatUint(l.seq.Add(1), 10) + ":" + strconv.Itoa(n)
		rctx, cancel := l.rctx(ctx)
		err := recentScript.Run(rctx, l.rdb, []string{u.rpmKey}, now/msNs, member, l.windowMs()).Err()
		cancel()
		if err != nil {
			return fmt.Errorf("record admissions made while redis was down: %w", err)
		}
	}
	u.downAdmits = 0
	if u.lim.MaxConcurrent > 0 && (u.inFlight > 0 || u.slots > 0) {
		if _, err := l.fetchAdmit(ctx, u, now, false, false, u.inFlight); err != nil {
			return err
		}
	}
	return nil
}

// flushOld pushes charges left from the previous period to its counter;
// they are dropped when that counter is gone.
func (l *Limiter) flushOld(ctx context.Context, u *user, now int64) error {
	if u.oldPend == 0 {
		return nil
	}
	if _, err := l.tokenRun(ctx, u, u.oldKey, now, 0, 0, 0, 0, -1, -1); err != nil {
		return err
	}
	u.oldPend, u.oldSent, u.oldKey = 0, 0, ""
	return nil
}

// shutdown returns leases and persists a last time, charges not pushed
// to Redis included: this replica will not push them any more.
func (l *Limiter) shutdown(ctx context.Context) {
	if l.fleet() {
		l.maintain(ctx, l.now(), true)
	}
	if err := l.save(ctx, true); err != nil {
		l.log.Warn("quota: persist usage at shutdown", "err", err)
	}
}

type persistRow struct {
	row     store.Usage
	tokKey  string
	lifeKey string
	u       *user
}

// persist saves every changed user's counters to the store: Redis's
// figures while Redis is up (every replica's usage), else this replica's.
func (l *Limiter) persist(ctx context.Context) error { return l.save(ctx, false) }

// save is persist; final includes the charges not yet pushed to Redis.
//
// Until then a saved figure leaves them out: this replica still pushes
// them, and if Redis has lost the counter meanwhile (a restart) the
// counter is rebuilt from the store and the push lands on top, so a
// figure that held them would count them twice. Leaving them out costs
// nothing while the replica lives; when it stops (final) they are saved,
// since nothing will push them after it.
func (l *Limiter) save(ctx context.Context, final bool) error {
	if l.o.Store == nil {
		return nil
	}
	now := l.now()
	var rows []persistRow
	l.eachUser(func(u *user) bool {
		if u.dirty && u.loaded {
			u.dirty = false
			used, life := u.used, u.life
			if !final {
				used, life = used-u.pend, life-u.lifePend
			}
			rows = append(rows, persistRow{u: u, tokKey: u.tokKey, lifeKey: u.lifeKey,
				row: store.Usage{UserID: u.id, PeriodStart: time.Unix(0, u.periodStart).UTC(),
					TokensUsed: used, LifetimeTokens: life, UpdatedAt: time.Unix(0, now).UTC()}})
		}
		return true
	})
	if len(rows) == 0 {
		return nil
	}
	if l.fleet() {
		if err := l.redisFigures(ctx, rows); err != nil {
			l.trip(ctx, err)
		}
	}
	out := make([]store.Usage, len(rows))
	for i := range rows {
		out[i] = rows[i].row
	}
	if err := l.o.Store.SaveUsage(ctx, out); err != nil {
		for _, r := range rows {
			r.u.mu.Lock()
			r.u.dirty = true
			r.u.mu.Unlock()
		}
		return fmt.Errorf("save usage of %d users: %w", len(rows), err)
	}
	return nil
}

// redisFigures replaces rows' figures with Redis's where it has them.
func (l *Limiter) redisFigures(ctx context.Context, rows []persistRow) error {
	ctx, cancel := l.rctx(ctx)
	defer cancel()
	pipe := l.rdb.Pipeline()
	used := make([]*redis.StringCmd, len(rows))
	life := make([]*redis.StringCmd, len(rows))
	for i, r := range rows {
		used[i] = pipe.HGet(ctx, r.tokKey, "used")
		life[i] = pipe.Get(ctx, r.lifeKey)
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("read counters: %w", err)
	}
	for i := range rows {
		if v, err := used[i].Int64(); err == nil {
			rows[i].row.TokensUsed = v
		}
		if v, err := life[i].Int64(); err == nil {
			rows[i].row.LifetimeTokens = max(v, rows[i].row.LifetimeTokens)
		}
	}
	return nil
}

// Usage reports a user's standing: fleet-wide from Redis when it is
// reachable, else this replica's view (or the store's figures).
// TokensReserved and InFlight count what replicas hold in Redis: tokens
// and slots leased, in use or not.
func (l *Limiter) Usage(ctx context.Context, userID int64, lim auth.Limits) (Report, error) {
	now := l.now()
	_, start, end := periodOf(now, &lim)
	r := Report{UserID: userID, PeriodStart: time.Unix(0, start).UTC(), PeriodEnd: time.Unix(0, end).UTC(),
		TokenBudget: lim.TokenBudget, RPM: lim.RPM, MaxConcurrent: lim.MaxConcurrent}
	var fromStore bool
	if u := l.peek(userID); u != nil {
		u.lim = lim
		u.roll(now)
		r.TokensUsed, r.TokensReserved, r.LifetimeTokens = u.used, u.resv, u.life
		r.RequestsLastMinute, r.InFlight = u.win.count(now), u.inFlight
		fromStore = !u.loaded
		u.mu.Unlock()
	} else {
		fromStore = true
	}
	if fromStore && l.o.Store != nil {
		s, err := l.o.Store.Usage(ctx, userID)
		if err != nil {
			return r, fmt.Errorf("quota: usage of user %d: %w", userID, err)
		}
		if s.PeriodStart.UnixNano() == start {
			r.TokensUsed = max(r.TokensUsed, s.TokensUsed)
		}
		r.LifetimeTokens = max(r.LifetimeTokens, s.LifetimeTokens)
	}
	if l.rdb == nil {
		return r, nil
	}
	if !l.fleet() {
		return r, fmt.Errorf("quota: usage of user %d from this replica only: %w", userID, ErrRedisDown)
	}
	id := strconv.FormatInt(userID, 10)
	rctx, cancel := l.rctx(ctx)
	defer cancel()
	res, err := usageScript.Run(rctx, l.rdb, []string{"mr:q:{" + id + "}:rpm", "mr:q:{" + id + "}:conc",
		tokKey(userID, start), "mr:q:{" + id + "}:life"}, now/msNs).Int64Slice()
	if err == nil && len(res) != 5 {
		err = errors.New("bad script reply")
	}
	if err != nil {
		l.trip(ctx, err)
		return r, fmt.Errorf("quota: usage of user %d: %w: %w", userID, ErrRedisDown, err)
	}
	if res[0] >= 0 {
		r.TokensUsed = res[0]
	}
	if res[2] >= 0 {
		r.LifetimeTokens = max(r.LifetimeTokens, res[2])
	}
	// Redis counts what is leased (in use or not) and only where a limit
	// makes replicas lease; this replica's own figures are a floor.
	r.TokensReserved = max(r.TokensReserved, res[1])
	r.RequestsLastMinute = max(r.RequestsLastMinute, int(res[3]))
	r.InFlight = max(r.InFlight, int(res[4]))
	return r, nil
}

// Reset sets the current period's used tokens to 0, fleet-wide (lifetime
// tokens are kept), here, in Redis and in the store. Other replicas'
// charges not yet pushed (at most a lease's worth) still land after it.
func (l *Limiter) Reset(ctx context.Context, userID int64, lim auth.Limits) error {
	now := l.now()
	_, start, _ := periodOf(now, &lim)
	life := int64(0)
	if u := l.peek(userID); u != nil {
		u.lim = lim
		u.roll(now)
		// The pending charges are void: they leave the running total
		// too, so that the next push does not send them after all.
		u.used, u.sent, u.pend = 0, u.sent-u.pend, 0
		life = u.life
		u.mu.Unlock()
	}
	var redisErr error
	if l.rdb != nil {
		if !l.fleet() {
			redisErr = ErrRedisDown
		} else {
			keyTTL := time.Duration(start+int64(lim.BudgetPeriod)-now) + 24*time.Hour
			if lim.BudgetPeriod <= 0 {
				keyTTL = 31 * 24 * time.Hour
			}
			rctx, cancel := l.rctx(ctx)
			err := resetScript.Run(rctx, l.rdb, []string{tokKey(userID, start)}, keyTTL.Milliseconds()).Err()
			cancel()
			if err != nil {
				l.trip(ctx, err)
				redisErr = fmt.Errorf("%w: %w", ErrRedisDown, err)
			}
		}
	}
	if l.o.Store != nil {
		s, err := l.o.Store.Usage(ctx, userID)
		if err != nil {
			return fmt.Errorf("quota: reset user %d: read stored usage: %w", userID, err)
		}
		row := store.Usage{UserID: userID, PeriodStart: time.Unix(0, start).UTC(),
			LifetimeTokens: max(life, s.LifetimeTokens), UpdatedAt: time.Unix(0, now).UTC()}
		if err := l.o.Store.SaveUsage(ctx, []store.Usage{row}); err != nil {
			return fmt.Errorf("quota: reset user %d: save usage: %w", userID, err)
		}
	}
	if redisErr != nil {
		return fmt.Errorf("quota: reset user %d on this replica and in the store only: %w", userID, redisErr)
	}
	return nil
}

// peek returns uid's state, locked, or nil.
func (l *Limiter) peek(uid int64) *user {
	sh := &l.shards[uint64(uid)%nShards]
	sh.mu.Lock()
	u := sh.users[uid]
	sh.mu.Unlock()
	if u == nil {
		return nil
	}
	u.mu.Lock()
	if u.evicted {
		u.mu.Unlock()
		return nil
	}
	return u
}
