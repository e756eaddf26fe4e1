package audit

import (
	"sync"
	"time"
)

// handoff holds the events of the latest group commits, as they were
// spooled, for the sink goroutine: when its read position is where they
// start, it takes them instead of reading their records back and decoding
// them (≈ a seventh of a record's CPU with ClickHouse, BenchmarkRecorderCost).
// The spool stays the source of truth: what is not held here (after a
// restart, a rewind, or once the sink has fallen more than
// maxHandoffBytes behind) is read back from disk, and only events already
// durable are ever taken (they are added when written, before the flush).
type handoff struct {
	mu    sync.Mutex
	evs   []Event
	ends  []int64 // ends[i]: the spool offset after evs[i]'s record
	start int64   // the offset of evs[0]'s record
}

// maxHandoffBytes bounds the spooled bytes the handoff holds: a sink that
// falls further behind reads back from disk (and holds no more than this).
const maxHandoffBytes = 32 << 20

// add appends a group commit's events, whose records start at start and
// end at ends. Events that do not follow those held (a commit after one
// that was not added) or would pass maxHandoffBytes replace them.
func (h *handoff) add(evs []Event, start int64, ends []int64) {
	if len(evs) == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	n := len(h.evs)
	if n > 0 && (h.ends[n-1] != start || ends[len(ends)-1]-h.start > maxHandoffBytes) {
		h.drop(n)
	}
	if ends[len(ends)-1]-start > maxHandoffBytes {
		return
	}
	if len(h.evs) == 0 {
		h.start = start
	}
	h.evs = append(h.evs, evs...)
	h.ends = append(h.ends, ends...)
}

// take puts into dst (reusing its array) the held events whose records
// start at pos, up to max events and, as the spool's readBatch does,
// up to maxBytes of records (the one that passes it included), and only
// those that end by durable (the spool's flushed end). ok is false when
// none is held at pos; limit is then the offset where the held events
// begin (a read from disk stops there), or -1.
func (h *handoff) take(dst []Event, pos int64, max int, maxBytes, durable int64) (out []Event, end, limit int64, ok bool) {
	clear(dst)
	dst = dst[:0]
	h.mu.Lock()
	defer h.mu.Unlock()
	k := 0
	for k < len(h.evs) && h.ends[k] <= pos {
		k++
	}
	h.drop(k) // the reader is past them
	switch {
	case len(h.evs) == 0:
		return dst, pos, -1, false
	case h.start > pos:
		return dst, pos, h.start, false
	case h.start < pos: // not at a record boundary of ours: not expected
		h.drop(len(h.evs))
		return dst, pos, -1, false
	}
	n := 0
	for n < len(h.evs) && n < max && (n == 0 || h.ends[n-1]-h.start < maxBytes) && h.ends[n] <= durable {
		n++
	}
	if n == 0 { // written, not yet flushed: nothing to read either
		return dst, pos, pos, false
	}
	end = h.ends[n-1]
	if n == len(h.evs) { // all of them: swap arrays instead of copying
		out, h.evs = h.evs, dst
		h.ends, h.start = h.ends[:0], end
		return out, end, -1, true
	}
	out = append(dst, h.evs[:n]...)
	h.drop(n)
	return out, end, -1, true
}

// drop forgets the first k held events.
func (h *handoff) drop(k int) {
	if k == 0 {
		return
	}
	h.start = h.ends[k-1]
	m := copy(h.evs, h.evs[k:])
	clear(h.evs[m:]) // their strings
	h.evs = h.evs[:m]
	h.ends = h.ends[:copy(h.ends, h.ends[k:])]
}

// asDecoded makes e what decodeEvent gives for appendEvent's record of
// it, so that an event the sink takes from the handoff is the one it
// would read back: times as Unix microseconds in UTC, the state as its
// code says, no empty blob list.
func asDecoded(e *Event) {
	e.Time = time.UnixMicro(e.Time.UnixMicro()).UTC()
	e.State = stateCodes[stateCode(e.State)]
	if e.State == RowInterruptMark {
		e.Until = time.UnixMicro(e.Until.UnixMicro()).UTC()
	} else {
		e.Until = time.Time{}
	}
	if len(e.Blobs) == 0 {
		e.Blobs = nil
	}
}
