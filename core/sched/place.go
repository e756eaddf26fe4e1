package sched

import "github.com/mindrouter/mindrouter/core/backend"

// Placer chooses where an admitted request runs: it filters the backends
// by hard constraints and orders the rest by score, recording why in d.
// A scheduler calls it when it dispatches a request (a slot may be free
// on several backends); implementations must be fast (no I/O, no
// allocation on the common path except what d keeps when d.Record is on).
type Placer interface {
	// Rank appends to dst the backends that may serve req now, best first
	// (constraints that depend on free capacity are the scheduler's: Rank
	// sees every backend, full or not), and returns it. known reports
	// whether any backend knows req.Model at all (else: 404).
	Rank(dst []*backend.Backend, req *Request, all []*backend.Backend, d *Decision) (ranked []*backend.Backend, known bool)
}

// Decision is what a scheduler decided for one request, for the audit.
// It is filled only when Record is true.
type Decision struct {
	Record     bool        `json:"-"`
	Candidates []Candidate `json:"candidates"`
	Chosen     string      `json:"chosen,omitempty"`
	// The fair-share state of the request's user when it was dispatched.
	Deficit   float64 `json:"deficit"`
	Weight    float64 `json:"weight"`
	QueueWait int64   `json:"queue_wait_us"`
	Position  int     `json:"queue_position"` // requests ahead of it when it arrived
}

// Candidate is one backend considered for a request.
type Candidate struct {
	Backend string             `json:"backend"`
	Failed  string             `json:"failed,omitempty"` // the first hard constraint it failed
	Score   float64            `json:"score"`
	Parts   map[string]float64 `json:"parts,omitempty"` // each soft score's weighted contribution
}

// Reset clears d for reuse, keeping its storage.
func (d *Decision) Reset() {
	rec := d.Record
	cs := d.Candidates[:0]
	*d = Decision{Record: rec, Candidates: cs}
}
