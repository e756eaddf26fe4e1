package sched

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrAbandoned, as the cause of Run's ctx (context.WithCancelCause),
// stops Run without giving anything back, as a crashed replica would:
// its slots come back to the others when their leases expire (tests).
var ErrAbandoned = errors.New("sched: fleet abandoned")

// Run does the Fleet's work until ctx is done: it claims slots for
// backends with local waiters (woken by Fair, by other replicas' release
// notices on the pub/sub channel, and by a safety timer), gives idle
// slots back after the grace or at once when another replica bids,
// beats its heartbeat and renews its leases every Heartbeat, pushes
// users' service, and probes
// Redis while it is down. On ctx done it gives back its idle slots and
// withdraws its bids.
func (fl *Fleet) Run(ctx context.Context) {
	ps := fl.rdb.Subscribe(ctx, fl.channel)
	defer ps.Close()
	msgs := ps.Channel()
	tk := time.NewTicker(fleetTick)
	defer tk.Stop()
	var t loopTimes
	fl.housekeep(ctx, time.Now(), &t)
	for {
		select {
		case <-ctx.Done():
			if errors.Is(context.Cause(ctx), ErrAbandoned) {
				return
			}
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
			fl.shutdown(sctx)
			cancel()
			return
		case <-fl.notify:
		case m, ok := <-msgs:
			if !ok {
				msgs = nil
				continue
			}
			fl.onMessage(m.Payload)
		case now := <-tk.C:
			fl.housekeep(ctx, now, &t)
		}
		fl.processDirty(ctx)
	}
}

// loopTimes are when Run last did its periodic work.
type loopTimes struct{ renew, flush, probe time.Time }

// housekeep is the periodic work: probe while down; else renew, flush,
// and queue backends whose idle slots are due back or whose waiters
// should claim again.
func (fl *Fleet) housekeep(ctx context.Context, now time.Time, t *loopTimes) {
	if fl.down.Load() {
		if now.Sub(t.probe) >= fleetProbe {
			t.probe = now
			fl.probe(ctx)
		}
		return
	}
	if now.Sub(t.renew) >= fl.beat {
		t.renew = now
		if err := fl.renew(ctx, false); err != nil {
			fl.trip(ctx, err)
			return
		}
	}
	if now.Sub(t.flush) >= fleetFlush {
		t.flush = now
		if err := fl.flushService(ctx); err != nil {
			fl.trip(ctx, err)
			return
		}
	}
	fl.mu.Lock()
	for _, s := range fl.slots {
		idle := len(s.names) > s.inUse
		if (idle && (now.Before(s.othersUntil) || now.Sub(s.lastPut) >= fl.grace)) || len(s.arb) > 0 ||
			(s.bidding && now.Sub(s.lastClaim) >= fleetRetry) {
			fl.markLocked(s)
		}
	}
	fl.mu.Unlock()
}

// onMessage handles a notice from the channel: "f|replica|backend" (a
// slot is free while someone bids: another replica's notice makes a
// bidder claim again; its own says only that it lost to a lower bid) or
// "w|replica|backend" (a replica waits for a slot).
func (fl *Fleet) onMessage(p string) {
	kind, rest, ok := strings.Cut(p, "|")
	if !ok {
		return
	}
	from, name, ok := strings.Cut(rest, "|")
	if !ok {
		return
	}
	fl.mu.Lock()
	defer fl.mu.Unlock()
	s := fl.byName[name]
	if s == nil {
		return // never used here: nothing to give or claim
	}
	switch kind {
	case "w":
		if from == fl.replica {
			return
		}
		s.othersUntil = time.Now().Add(fleetBidTTL)
		if len(s.names) > s.inUse {
			fl.markLocked(s)
		}
	case "f":
		if s.bidding && from != fl.replica {
			fl.markLocked(s)
		}
	}
}

// processDirty runs process for each backend queued, until none is.
func (fl *Fleet) processDirty(ctx context.Context) {
	for {
		fl.mu.Lock()
		list := fl.dirty
		fl.dirty = nil
		for _, s := range list {
			s.isDirty = false
		}
		fl.mu.Unlock()
		if len(list) == 0 {
			return
		}
		for _, s := range list {
			fl.process(ctx, s)
		}
	}
}

// process brings s's holding in line with this replica's waiters: idle
// slots to them, or a claim (with the best waiter's key as the bid) for
// more, or idle and arbitrated slots back to the pool.
func (fl *Fleet) process(ctx context.Context, s *fleetSlots) {
	if fl.down.Load() {
		return
	}
	d, key := fl.fair.fleetBid(s.b)
	now := time.Now()
	fl.mu.Lock()
	if d > 0 && len(s.names) > s.inUse {
		// A slot is idle here: the waiters take it, and those set aside
		// for arbitration too, without asking (the idle one would serve
		// them anyway).
		s.names = append(s.names, s.arb...)
		s.arb = nil
		fl.mu.Unlock()
		fl.fair.dispatchBackend(s.b)
		return
	}
	offer := s.arb
	s.arb = nil
	if d == 0 && len(s.names) > s.inUse && (now.Before(s.othersUntil) || now.Sub(s.lastPut) >= fl.grace) {
		offer = append(offer, s.names[max(s.inUse, 0):]...)
		s.names = s.names[:max(s.inUse, 0)]
	}
	want := min(d, s.b.Capacity())
	if want == 0 && len(offer) == 0 && !s.bidding {
		fl.mu.Unlock()
		return
	}
	s.lastClaim = now
	fl.mu.Unlock()

	got, others, err := fl.claim(ctx, s, offer, want, key)
	fl.mu.Lock()
	if err != nil {
		s.names = append(s.names, offer...) // still ours as far as we know: renewal or expiry settles it
		fl.mu.Unlock()
		fl.trip(ctx, err)
		return
	}
	s.names = append(s.names, got...)
	s.bidding = len(got) < want
	if others > 0 {
		s.othersUntil = now.Add(fleetBidTTL)
	}
	fl.mu.Unlock()
	if len(got) > 0 {
		fl.fair.dispatchBackend(s.b)
	}
}

// claim runs claimScript: it offers back offer and asks for want slots
// in all (offered ones kept first), bidding key. It returns the slots
// now held of those asked for, and how many other replicas bid.
func (fl *Fleet) claim(ctx context.Context, s *fleetSlots, offer []string, want int, key float64) ([]string, int, error) {
	nNew := max(want-len(offer), 0)
	now := time.Now().UnixMilli()
	args := make([]any, 0, 13+len(offer)+nNew)
	args = append(args, now, s.b.Capacity(), now+fl.lease.Milliseconds(), fl.replica, want,
		strconv.FormatFloat(key, 'g', -1, 64), now+fleetBidTTL.Milliseconds(), fl.channel, s.msgFree, s.msgWant, len(offer),
		fl.DeadAfter().Milliseconds(), fl.beatGap().Milliseconds())
	for _, m := range offer {
		args = append(args, m)
	}
	fresh := make([]string, nNew)
	for i := range fresh {
		fresh[i] = fl.member()
		args = append(args, fresh[i])
	}
	cctx, cancel := context.WithTimeout(ctx, fleetCall)
	defer cancel()
	res, err := claimScript.Run(cctx, fl.rdb, []string{s.kSlots, s.kBids, s.kBx, s.kAlive, s.kClock}, args...).Int64Slice()
	if err != nil {
		return nil, 0, fmt.Errorf("claim slots of backend %s: %w", s.b.Name, err)
	}
	if len(res) != 2 {
		return nil, 0, fmt.Errorf("claim slots of backend %s: bad script reply", s.b.Name)
	}
	n := int(res[0])
	kept := min(n, len(offer))
	got := append(offer[:kept:kept], fresh[:n-kept]...)
	fl.stats.claims.Add(1)
	fl.stats.granted.Add(int64(n - kept))
	fl.stats.returned.Add(int64(len(offer) - kept))
	return got, int(res[1]), nil
}

// renew beats this replica's heartbeat on each backend whose slots it
// holds and extends those leases (renewScript), and beats the fleet-wide
// heartbeat (the count of live replicas sizes the shares while Redis is
// down).
// With fill, slots in use beyond those held (after an outage) are leased
// too while the pool has room. Lost leases are dropped.
func (fl *Fleet) renew(ctx context.Context, fill bool) error {
	type job struct {
		s     *fleetSlots
		names []string
	}
	fl.mu.Lock()
	jobs := make([]job, 0, len(fl.slots))
	for _, s := range fl.slots {
		if fill {
			for len(s.names) < s.inUse {
				s.names = append(s.names, fl.member())
			}
		}
		// A backend this replica bids for is beaten too, holding nothing:
		// its beats must come every heartbeat (its claims come only every
		// safety tick), or the others' silence on the backend would keep
		// resetting the heartbeat clock and nobody dead would be swept.
		if n := len(s.names) + len(s.arb); n > 0 || s.bidding {
			jobs = append(jobs, job{s, append(append(make([]string, 0, n), s.names...), s.arb...)})
		}
	}
	fl.mu.Unlock()
	now := time.Now().UnixMilli()
	exp := now + fl.lease.Milliseconds()
	for _, j := range jobs {
		args := make([]any, 0, 6+len(j.names))
		args = append(args, now, exp, j.s.b.Capacity(), fl.replica, fl.DeadAfter().Milliseconds(), fl.beatGap().Milliseconds())
		for _, m := range j.names {
			args = append(args, m)
		}
		cctx, cancel := context.WithTimeout(ctx, fleetCall)
		lost, err := renewScript.Run(cctx, fl.rdb, []string{j.s.kSlots, j.s.kAlive, j.s.kClock}, args...).StringSlice()
		cancel()
		if err != nil {
			return fmt.Errorf("renew slots of backend %s: %w", j.s.b.Name, err)
		}
		if len(lost) > 0 {
			fl.drop(j.s, lost)
		}
	}
	cctx, cancel := context.WithTimeout(ctx, fleetCall)
	defer cancel()
	key := fl.prefix + "replicas"
	pipe := fl.rdb.Pipeline()
	pipe.ZAdd(cctx, key, redis.Z{Score: float64(exp), Member: fl.replica})
	pipe.ZRemRangeByScore(cctx, key, "-inf", strconv.FormatInt(now, 10))
	card := pipe.ZCard(cctx, key)
	if _, err := pipe.Exec(cctx); err != nil {
		return fmt.Errorf("replica heartbeat: %w", err)
	}
	fl.mu.Lock()
	fl.live = max(int(card.Val()), 1)
	fl.mu.Unlock()
	return nil
}

// drop forgets leases Redis no longer has.
func (fl *Fleet) drop(s *fleetSlots, lost []string) {
	gone := make(map[string]bool, len(lost))
	for _, m := range lost {
		gone[m] = true
	}
	keep := func(list []string) []string {
		out := list[:0]
		for _, m := range list {
			if !gone[m] {
				out = append(out, m)
			}
		}
		return out
	}
	fl.mu.Lock()
	s.names = keep(s.names)
	s.arb = keep(s.arb)
	fl.mu.Unlock()
	fl.stats.lost.Add(int64(len(lost)))
}

// trip switches to per-replica scheduling after a Redis failure: each
// replica uses its share of each backend's slots until probe finds Redis
// again. A failure because ctx ended says nothing about Redis.
func (fl *Fleet) trip(ctx context.Context, err error) {
	if ctx.Err() != nil || errors.Is(err, context.Canceled) {
		return
	}
	if !fl.down.CompareAndSwap(false, true) {
		return
	}
	fl.stats.trips.Add(1)
	fl.mu.Lock()
	live := fl.live
	for _, s := range fl.slots {
		s.bidding = false
		s.names = append(s.names, s.arb...)
		s.arb = nil
	}
	fl.mu.Unlock()
	fl.log.Warn("scheduler: redis unreachable; each replica now schedules alone with max_concurrent / live replicas of each backend",
		"live_replicas", live, "err", err)
	fl.fair.Kick()
}

// probe ends the outage when Redis answers: the slots in use are leased
// again (while the pool has room) and fleet scheduling resumes.
func (fl *Fleet) probe(ctx context.Context) {
	cctx, cancel := context.WithTimeout(ctx, fleetCall)
	err := fl.rdb.Ping(cctx).Err()
	cancel()
	if err != nil {
		return
	}
	if err := fl.renew(ctx, true); err != nil {
		return
	}
	fl.down.Store(false)
	fl.log.Info("scheduler: redis reachable again; backend slots are shared fleet-wide again")
	fl.fair.Kick()
}

// shutdown gives back the idle slots and withdraws the bids (in-use
// slots expire with their leases), and leaves the replica count.
func (fl *Fleet) shutdown(ctx context.Context) {
	if fl.down.Load() {
		return
	}
	fl.mu.Lock()
	var list []*fleetSlots
	offers := map[*fleetSlots][]string{}
	for _, s := range fl.slots {
		offer := append(s.arb, s.names[min(max(s.inUse, 0), len(s.names)):]...)
		s.arb, s.names = nil, s.names[:min(max(s.inUse, 0), len(s.names))]
		if len(offer) > 0 || s.bidding {
			list = append(list, s)
			offers[s] = offer
		}
		s.bidding = false
	}
	fl.mu.Unlock()
	for _, s := range list {
		if _, _, err := fl.claim(ctx, s, offers[s], 0, 0); err != nil {
			fl.log.Debug("scheduler: give back slots at shutdown", "backend", s.b.Name, "err", err)
			return
		}
	}
	_ = fl.rdb.ZRem(ctx, fl.prefix+"replicas", fl.replica).Err()
}
