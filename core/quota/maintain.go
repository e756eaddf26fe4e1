package quota

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// maintainChunk is how many users one pipelined round trip serves.
const maintainChunk = 128

// Maintenance operations.
const (
	opAdmit uint8 = iota // return expired permits, return or refresh slots
	opOld                // push the previous period's charges
	opToken              // push charges, return or refresh the token lease
)

// mop is one maintenance call, planned and applied under its user's lock.
type mop struct {
	u     *user
	kind  uint8
	keys  []string
	args  []any
	admit admitCall
	keep  int64 // opToken: the lease kept
	saved int64 // opToken: free lease dropped, restored if the call fails
	cmd   *redis.Cmd
}

// maintain returns expired leases, refreshes held ones and pushes
// charges; final returns everything not in use (shutdown). Users are
// served in chunks, each chunk in one pipelined round trip while their
// locks are held (so a reply applies to exactly the state it was planned
// from).
func (l *Limiter) maintain(ctx context.Context, now int64, final bool) {
	var us []*user
	for i := range l.shards {
		sh := &l.shards[i]
		sh.mu.Lock()
		for _, u := range sh.users {
			us = append(us, u)
		}
		sh.mu.Unlock()
	}
	var ops []mop
	var held []*user
	for len(us) > 0 {
		n := min(len(us), maintainChunk)
		ops, held = ops[:0], held[:0]
		for _, u := range us[:n] {
			u.mu.Lock()
			before := len(ops)
			if !u.evicted {
				ops = l.plan(u, now, final, ops)
			}
			if len(ops) == before {
				u.mu.Unlock()
			} else {
				held = append(held, u)
			}
		}
		us = us[n:]
		err := l.runOps(ctx, now, ops)
		for _, u := range held {
			u.mu.Unlock()
		}
		if err != nil {
			l.trip(ctx, err)
			return
		}
	}
}

// plan appends u's maintenance calls to ops (u.mu held).
func (l *Limiter) plan(u *user, now int64, final bool, ops []mop) []mop {
	if final && u.permits > 0 {
		u.permitExp = now
	}
	permitsBack := u.permits > 0 && now >= u.permitExp
	keep := u.slots
	if final || now-u.slotUse >= l.lease {
		keep = u.inFlight
	}
	slotsDue := u.slots > 0 && (keep != u.slots || now-u.slotBeat >= l.lease)
	if permitsBack || slotsDue {
		c := l.admitArgs(u, now, false, false, keep)
		ops = append(ops, mop{u: u, kind: opAdmit, keys: c.keys, args: c.args, admit: c})
	}
	if u.oldPend != 0 {
		keys, args := l.tokenArgs(u, u.oldKey, now, 0, 0, 0, 0, -1, -1)
		ops = append(ops, mop{u: u, kind: opOld, keys: keys, args: args})
	}
	dropFree := u.free > 0 && (final || now-u.tokAt >= l.lease)
	beat := u.resv+u.free > 0 && now-u.tokBeat >= l.lease
	if u.pend == 0 && u.lifePend == 0 && !dropFree && !beat {
		return ops
	}
	op := mop{u: u, kind: opToken, keep: u.resv + u.free}
	if dropFree {
		op.keep, op.saved, u.free = u.resv, u.free, 0
	}
	op.keys, op.args = l.tokenArgs(u, u.tokKey, now, op.keep, 0, 0, 0, -1, -1)
	return append(ops, op)
}

// runOps sends ops in one pipeline and applies the replies; it returns
// the first Redis failure after undoing what the failed calls planned.
func (l *Limiter) runOps(ctx context.Context, now int64, ops []mop) error {
	if len(ops) == 0 {
		return nil
	}
	rctx, cancel := l.rctx(ctx)
	defer cancel()
	pipe := l.rdb.Pipeline()
	for i := range ops {
		ops[i].cmd = ops[i].script().EvalSha(rctx, pipe, ops[i].keys, ops[i].args...)
	}
	_, _ = pipe.Exec(rctx) // each command's own error is read below
	var first error
	for i := range ops {
		op := &ops[i]
		err := op.cmd.Err()
		if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
			// Redis restarted since the script was last loaded: Run
			// loads it (that command did not run).
			op.cmd = op.script().Run(rctx, l.rdb, op.keys, op.args...)
			err = op.cmd.Err()
		}
		if err == nil {
			err = l.apply(ctx, now, op)
		}
		if err != nil {
			op.u.free += op.saved
			if first == nil {
				first = fmt.Errorf("quota maintenance: %w", err)
			}
		}
	}
	return first
}

func (op *mop) script() *redis.Script {
	if op.kind == opAdmit {
		return admitScript
	}
	return tokenScript
}

// apply records op's reply in its user (u.mu held).
func (l *Limiter) apply(ctx context.Context, now int64, op *mop) error {
	res, err := op.cmd.Int64Slice()
	if err != nil {
		return err
	}
	u := op.u
	switch op.kind {
	case opAdmit:
		return l.applyAdmit(u, now, &op.admit, res)
	case opOld:
		if err := checkToken(res); err != nil {
			return err
		}
		// Pushed, or that counter is gone (a restart): either way done.
		u.oldPend, u.oldSent, u.oldKey = 0, 0, ""
		return nil
	}
	if err := checkToken(res); err != nil {
		return err
	}
	if res[0] == -1 {
		// The counter is gone (a Redis restart): initialise it from the
		// store and push again.
		return l.tokenCall(ctx, u, now, op.keep, 0, 0, 0)
	}
	l.applyToken(u, now, 0, res)
	return nil
}
