package sched

import (
	"time"

	"github.com/mindrouter/mindrouter/core/backend"
)

// modelQueue is one model's deficit round robin: its round, every user's
// flow for the model, the flows with waiters in a heap ordered by key,
// and the same flows least recently served first (the starvation bound).
// It lives as long as the Fair: its flows keep their users' state.
type modelQueue struct {
	model  string
	round  float64 // the current DRR round
	flows  map[string]*flow
	heap   []*flow
	since  flist
	n      int // waiters
	active int // index in Fair.active; -1 when no one waits
	// unpassed: the flows whose head has not been passed over yet, by the
	// head's arrival (a heap; kept only while recording, for FairnessWait).
	unpassed []*flow
}

// flow is one user's state and waiting requests for one model. While it
// has waiters its deficit is d0 + (round − r0)·Quantum·weight: credit is
// added lazily, a round at a time, instead of visiting users.
type flow struct {
	user       string
	mq         *modelQueue
	weight     float64
	d0, r0     float64
	idleSince  time.Time // zero: never active (full burst credit)
	lastServed uint64    // Fair.served at its last dispatch
	fifo       wlist     // waiting requests, oldest first

	waitFrom     time.Time // when it was last served, or began waiting if later
	sprev, snext *flow     // in mq.since

	// The heap key, a snapshot (setKey) so that the heap stays consistent
	// while the flow's state changes: the round in which the deficit
	// covers the head's cost, the last dispatch, the head's arrival.
	eligible  float64
	keyServed uint64
	keySeq    uint64
	idx       int // in mq.heap
	pidx      int // in mq.unpassed; -1 when not there
}

func (fl *flow) deficit(quantum float64) float64 {
	if fl.fifo.n == 0 {
		return fl.d0
	}
	return fl.d0 + (fl.mq.round-fl.r0)*quantum*fl.weight
}

// waiter is one queued request.
type waiter struct {
	req        *Request
	flow       *flow
	enq        time.Time
	seq        uint64
	cost       float64
	pos        int
	granted    *backend.Backend
	passed     time.Time     // first passed over (while recording); zero: never
	fleetFrom  time.Time     // first next in line without an idle fleet slot; zero: never
	ch         chan struct{} // buffered 1: the grant's wake-up
	prev, next *waiter       // in flow.fifo
}

// wlist is an intrusive doubly-linked list of waiters.
type wlist struct {
	head, tail *waiter
	n          int
}

func (l *wlist) push(w *waiter) {
	w.prev, w.next = l.tail, nil
	if l.tail != nil {
		l.tail.next = w
	} else {
		l.head = w
	}
	l.tail = w
	l.n++
}

func (l *wlist) remove(w *waiter) {
	if w.prev != nil {
		w.prev.next = w.next
	} else {
		l.head = w.next
	}
	if w.next != nil {
		w.next.prev = w.prev
	} else {
		l.tail = w.prev
	}
	w.prev, w.next = nil, nil
	l.n--
}

// flist is an intrusive doubly-linked list of flows.
type flist struct{ head, tail *flow }

func (l *flist) push(f *flow) {
	f.sprev, f.snext = l.tail, nil
	if l.tail != nil {
		l.tail.snext = f
	} else {
		l.head = f
	}
	l.tail = f
}

func (l *flist) remove(f *flow) {
	if f.sprev != nil {
		f.sprev.snext = f.snext
	} else {
		l.head = f.snext
	}
	if f.snext != nil {
		f.snext.sprev = f.sprev
	} else {
		l.tail = f.sprev
	}
	f.sprev, f.snext = nil, nil
}

// flowLess orders flows: earlier eligible round, then the user served
// longest ago (round-robin order), then the older head request.
func flowLess(a, b *flow) bool {
	if a.eligible != b.eligible {
		return a.eligible < b.eligible
	}
	if a.keyServed != b.keyServed {
		return a.keyServed < b.keyServed
	}
	return a.keySeq < b.keySeq
}

func (q *modelQueue) pushFlow(fl *flow) {
	fl.idx = len(q.heap)
	q.heap = append(q.heap, fl)
	q.up(fl.idx)
}

func (q *modelQueue) removeFlow(i int) {
	last := len(q.heap) - 1
	if i != last {
		q.swap(i, last)
	}
	q.heap[last].idx = -1
	q.heap[last] = nil
	q.heap = q.heap[:last]
	if i != last {
		q.fix(i)
	}
}

func (q *modelQueue) fix(i int) {
	if !q.down(i) {
		q.up(i)
	}
}

func (q *modelQueue) swap(i, j int) {
	q.heap[i], q.heap[j] = q.heap[j], q.heap[i]
	q.heap[i].idx = i
	q.heap[j].idx = j
}

func (q *modelQueue) up(j int) {
	for j > 0 {
		i := (j - 1) / 2
		if !flowLess(q.heap[j], q.heap[i]) {
			break
		}
		q.swap(i, j)
		j = i
	}
}

func (q *modelQueue) down(i0 int) bool {
	i, n := i0, len(q.heap)
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		j := l
		if r := l + 1; r < n && flowLess(q.heap[r], q.heap[l]) {
			j = r
		}
		if !flowLess(q.heap[j], q.heap[i]) {
			break
		}
		q.swap(i, j)
		i = j
	}
	return i > i0
}
