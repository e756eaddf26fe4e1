package sched

import (
	"time"

	"github.com/mindrouter/mindrouter/core/backend"
)

// FairnessWait bookkeeping. A request is passed over when a slot that
// could have served it (a backend its Placer ranks, for its model) goes
// to a request of its model that arrived later. Only a user's head
// request can be passed over: the ones behind it wait for it first (FIFO
// per user). Each model keeps its flows whose head has not been passed
// over yet in a heap by the head's arrival; a grant to w marks (and
// drops) those whose head arrived before w, so each head is marked once
// and a grant costs O(log n) per head it marks. Kept only while the Fair
// records decisions: it is for the audit.

// headLeavesLocked drops fl from the unpassed heap before its head w
// leaves the queue (granted, timed out, cancelled).
func (f *Fair) headLeavesLocked(fl *flow, w *waiter) {
	if fl.pidx >= 0 && fl.fifo.head == w {
		fl.mq.removeUnpassed(fl.pidx)
	}
}

// headArrivesLocked puts fl in the unpassed heap when its (new) head has
// not been passed over.
func (f *Fair) headArrivesLocked(fl *flow) {
	if f.record && fl.pidx < 0 && fl.fifo.n > 0 && fl.fifo.head.passed.IsZero() {
		fl.mq.pushUnpassed(fl)
	}
}

// markPassedLocked marks, as of now, the heads of w's model that arrived
// before w and may use b: w took b's slot before them.
func (f *Fair) markPassedLocked(w *waiter, b *backend.Backend, now time.Time) {
	mq := w.flow.mq
	aside := f.aside[:0]
	for len(mq.unpassed) > 0 {
		fl := mq.unpassed[0]
		h := fl.fifo.head
		if h.seq >= w.seq {
			break
		}
		mq.removeUnpassed(0)
		if f.accepts(h.req, b) {
			h.passed = now
		} else {
			aside = append(aside, fl) // b was no use to it: not passed over
		}
	}
	for _, fl := range aside {
		mq.pushUnpassed(fl)
	}
	clear(aside)
	f.aside = aside[:0]
}

func unpassedLess(a, b *flow) bool { return a.fifo.head.seq < b.fifo.head.seq }

func (q *modelQueue) pushUnpassed(fl *flow) {
	fl.pidx = len(q.unpassed)
	q.unpassed = append(q.unpassed, fl)
	q.unpassedUp(fl.pidx)
}

func (q *modelQueue) removeUnpassed(i int) {
	h := q.unpassed
	last := len(h) - 1
	if i != last {
		q.unpassedSwap(i, last)
	}
	h[last].pidx = -1
	h[last] = nil
	q.unpassed = h[:last]
	if i != last && !q.unpassedDown(i) {
		q.unpassedUp(i)
	}
}

func (q *modelQueue) unpassedSwap(i, j int) {
	h := q.unpassed
	h[i], h[j] = h[j], h[i]
	h[i].pidx = i
	h[j].pidx = j
}

func (q *modelQueue) unpassedUp(j int) {
	for j > 0 {
		i := (j - 1) / 2
		if !unpassedLess(q.unpassed[j], q.unpassed[i]) {
			break
		}
		q.unpassedSwap(i, j)
		j = i
	}
}

func (q *modelQueue) unpassedDown(i0 int) bool {
	i, n := i0, len(q.unpassed)
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		j := l
		if r := l + 1; r < n && unpassedLess(q.unpassed[r], q.unpassed[l]) {
			j = r
		}
		if !unpassedLess(q.unpassed[j], q.unpassed[i]) {
			break
		}
		q.unpassedSwap(i, j)
		i = j
	}
	return i > i0
}

// recordFleet fills d's fleet fields for waiter w granted now (before
// its cost is charged).
func (f *Fair) recordFleet(d *Decision, w *waiter, now time.Time) {
	d.FleetKey = f.fleet.key(w.req.User, w.flow.weight)
	d.FleetSlot = f.fleet.source()
	if !w.fleetFrom.IsZero() {
		d.FleetWait = now.Sub(w.fleetFrom).Microseconds()
		if d.FleetSlot == FleetSlotHeld {
			d.FleetSlot = FleetSlotClaimed
		}
	}
}
