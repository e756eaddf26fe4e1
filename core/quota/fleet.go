package quota

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"
)

const msNs = int64(time.Millisecond)

// maxBatch caps one lease of permits; the script also caps a batch at a
// quarter of the room left, and at 1 when little is left.
const maxBatch = 4096

// slotTTL is how long Redis keeps a replica's slots and token lease
// without a refresh: a dead replica's share comes back after this.
func (l *Limiter) slotTTL() int64 { return 3 * l.lease }

// windowMs is the RPM grant check's window: 60 s plus the lease, since a
// permit granted at g may be used until g + lease (see the package doc).
func (l *Limiter) windowMs() int64 { return (minuteNs + l.lease) / msNs }

// permitBatch sizes the next batch of permits from this replica's recent
// request rate: about one lease's worth, at least 1.
func (l *Limiter) permitBatch(u *user, now int64) int {
	el := now - u.permitAt
	if u.permitAt == 0 || el <= 0 || u.admitsSinceFetch == 0 {
		return 1
	}
	n := int(int64(u.admitsSinceFetch)*l.lease/el) + 1
	return min(max(n, 1), maxBatch, u.lim.RPM)
}

// admitCall is one admitScript call's arguments.
type admitCall struct {
	keys      []string
	args      []any
	member    string // the new batch's member prefix ("" when no permit is asked)
	oldMember string // the previous batch, shrunk to what was used ("" none)
}

// admitArgs prepares an admitScript call for u (u.mu held).
func (l *Limiter) admitArgs(u *user, now int64, needSlot, needPermit bool, keepSlots int) admitCall {
	lim := &u.lim
	var c admitCall
	wantP := 0
	if needPermit {
		wantP = l.permitBatch(u, now)
		c.member = l.o.Replica + ":" + strconv.FormatUint(l.seq.Add(1), 10)
	}
	oldKeep, oldNew := 0, ""
	if u.permitMember != "" && u.permits > 0 && (needPermit || now >= u.permitExp) {
		// Unused permits of the previous batch go back in the same trip.
		c.oldMember, oldKeep = u.permitMember, u.permitGranted-u.permits
		oldNew = c.oldMember[:len(c.oldMember)-len(strconv.Itoa(u.permitGranted))] + strconv.Itoa(oldKeep)
	}
	ns := 0
	if needSlot {
		ns = 1
	}
	c.keys = []string{u.rpmKey, u.concKey}
	c.args = []any{now / msNs, lim.RPM, l.windowMs(), wantP, c.member, lim.MaxConcurrent, l.o.Replica, ns, keepSlots,
		l.slotTTL() / msNs, c.oldMember, oldKeep, oldNew}
	return c
}

// applyAdmit records an admitScript reply in u (u.mu held).
func (l *Limiter) applyAdmit(u *user, now int64, c *admitCall, res []int64) error {
	if len(res) != 6 {
		return errors.New("lease permits and slots: bad script reply")
	}
	if c.oldMember != "" {
		u.permits, u.permitMember = 0, ""
	}
	u.slots, u.slotBeat = int(res[3]), now
	if c.member != "" {
		u.rpmCounted = int(res[1])
		if g := int(res[0]); g > 0 {
			u.permits, u.permitGranted = g, g
			u.permitMember = c.member + ":" + strconv.Itoa(g)
			u.permitExp = now + l.lease
			u.permitAt, u.admitsSinceFetch = now, 0
		}
	}
	return nil
}

// fetchAdmit asks Redis for a slot and/or a batch of permits (u.mu held).
// A refusal is returned as a *Denied; err is a Redis failure.
// Slots beyond keepSlots go back.
func (l *Limiter) fetchAdmit(ctx context.Context, u *user, now int64, needSlot, needPermit bool, keepSlots int) (*Denied, error) {
	c := l.admitArgs(u, now, needSlot, needPermit, keepSlots)
	ctx, cancel := l.rctx(ctx)
	defer cancel()
	res, err := admitScript.Run(ctx, l.rdb, c.keys, c.args...).Int64Slice()
	if err != nil {
		return nil, fmt.Errorf("lease permits and slots: %w", err)
	}
	if err := l.applyAdmit(u, now, &c, res); err != nil {
		return nil, err
	}
	if res[5] == 1 {
		return l.denyConcurrency(u, now), nil
	}
	if needPermit && res[0] == 0 {
		return l.denyRequests(u, now, time.Duration(res[2]*msNs)), nil
	}
	return nil, nil
}

// fetchTokens pushes u's pending charges and asks for at least need and
// up to want more tokens of lease, plus a prefetch sized from the recent
// charge rate (u.mu held).
func (l *Limiter) fetchTokens(ctx context.Context, u *user, now int64, need, want int64) error {
	var extra int64
	if el := now - u.tokAt; u.tokAt != 0 && el > 0 {
		extra = u.chargedTok * l.lease / el
	}
	return l.tokenCall(ctx, u, now, u.resv+u.free, need, want, extra)
}

// tokenCall runs tokenScript for u's current period, loading the store's
// figures when Redis has no counter (first use, or after a restart).
func (l *Limiter) tokenCall(ctx context.Context, u *user, now int64, keep, need, want, extra int64) error {
	res, err := l.tokenRun(ctx, u, u.tokKey, now, keep, need, want, extra, -1, -1)
	if err == nil && res[0] == -1 {
		used, life, serr := l.stored(ctx, u)
		if serr != nil {
			return fmt.Errorf("initialise token counter: %w", serr)
		}
		// Whatever this replica held in Redis is gone with the counter.
		keep = u.resv
		u.free = 0
		res, err = l.tokenRun(ctx, u, u.tokKey, now, keep, need, want, extra, used, life)
	}
	if err != nil {
		return err
	}
	if res[0] < 0 {
		return errors.New("lease tokens: counter missing after initialisation")
	}
	l.applyToken(u, now, want, res)
	return nil
}

// applyToken records a tokenScript reply for the current period in u
// (u.mu held): the charges sent are in Redis now.
func (l *Limiter) applyToken(u *user, now, want int64, res []int64) {
	if u.pend != 0 || u.lifePend != 0 {
		u.dirty = true // the store's figure left them out (save)
	}
	u.pend, u.lifePend = 0, 0
	u.free += res[0]
	u.used, u.others, u.life = res[1], res[2], res[3]
	u.tokBeat = now
	if want > 0 {
		u.tokAt, u.chargedTok = now, 0
	}
}

// tokenArgs prepares a tokenScript call for u's counter key (u.mu held):
// the current period's pushes every pending charge, the previous one's
// only its period charge.
func (l *Limiter) tokenArgs(u *user, key string, now, keep, need, want, extra, initUsed, initLife int64) ([]string, []any) {
	charge, lifeCharge, sent, lifeSent := u.pend, u.lifePend, u.sent, u.lifeSent
	keyTTL := (u.periodEnd-now)/msNs + int64(24*time.Hour/time.Millisecond)
	if key != u.tokKey {
		charge, lifeCharge, sent, lifeSent = u.oldPend, 0, u.oldSent, -1
		keyTTL = int64(24 * time.Hour / time.Millisecond)
	}
	return []string{key, u.lifeKey, u.lifeAckKey}, []any{now / msNs, l.o.Replica, u.lim.TokenBudget, charge, lifeCharge, keep,
		need, want, extra, l.slotTTL() / msNs, keyTTL, initUsed, initLife, sent, lifeSent}
}

// checkToken validates a tokenScript reply.
func checkToken(res []int64) error {
	if len(res) != 4 && !(len(res) == 1 && res[0] == -1) {
		return errors.New("lease tokens: bad script reply")
	}
	return nil
}

func (l *Limiter) tokenRun(ctx context.Context, u *user, key string, now, keep, need, want, extra, initUsed, initLife int64) ([]int64, error) {
	keys, args := l.tokenArgs(u, key, now, keep, need, want, extra, initUsed, initLife)
	ctx, cancel := l.rctx(ctx)
	defer cancel()
	res, err := tokenScript.Run(ctx, l.rdb, keys, args...).Int64Slice()
	if err != nil {
		return nil, fmt.Errorf("lease tokens: %w", err)
	}
	return res, checkToken(res)
}
