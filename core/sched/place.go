package sched

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/mindrouter/mindrouter/core/backend"
	"github.com/mindrouter/mindrouter/sdk/jsonw"
)

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

// NeedsExplainer is a Placer that can say which capability a request
// needs that no backend serving its model offers. When Rank ranks
// nothing although the model is known, Fair asks it: a non-empty phrase
// ("image input", "tools", "structured output", "embeddings", "text
// generation") turns the 503 backend_unavailable into a 400
// model_capability, since waiting would not help.
type NeedsExplainer interface {
	// Unmet returns the capability of req.Needs that every backend
	// serving req.Model lacks, or "" when some backend has them all (or
	// the model is unknown). Called only on the error path.
	Unmet(req *Request, all []*backend.Backend) string
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
	// FairnessWait is the part of QueueWait after the request was first
	// passed over (see the package doc): the wait that fair sharing, not
	// capacity, imposed on it. 0 when it never was.
	FairnessWait int64 `json:"fairness_wait_us"`
	// The fleet's part, when the Fair has a Fleet (empty or 0 otherwise).
	// FleetSlot is where the slot came from: "held" (an idle slot this
	// replica held), "claimed" (the request waited for a claim in Redis:
	// its replica held no idle slot when it was next in line), or "share"
	// (Redis was down: the replica's share of max_concurrent).
	FleetSlot string `json:"fleet_slot,omitempty"`
	// FleetWait is how long a "claimed" request waited from the first
	// moment it was next in line for a slot its replica did not hold.
	FleetWait int64 `json:"fleet_wait_us,omitempty"`
	// FleetKey is the user's fleet-wide fair-share key (decayed service
	// over weight, before this request's cost): what its replica bid.
	FleetKey float64 `json:"fleet_key,omitempty"`
}

// Decision.FleetSlot values.
const (
	FleetSlotHeld    = "held"
	FleetSlotClaimed = "claimed"
	FleetSlotShare   = "share"
)

// Candidate is one backend considered for a request.
type Candidate struct {
	Backend string  `json:"backend"`
	Failed  string  `json:"failed,omitempty"` // the first hard constraint it failed
	Score   float64 `json:"score"`
	Parts   Parts   `json:"parts,omitempty"` // each soft score's weighted contribution
}

// Part is one named entry of Candidate.Parts.
type Part struct {
	Name  string
	Value float64
}

// Parts are a candidate's score contributions and marks, in the order the
// Placer wrote them; they encode as one JSON object. A slice, not a map:
// the server records a decision for every request it audits, and filling
// and writing eight map entries (hashing, randomised iteration) was most
// of a decision's cost.
type Parts []Part

// Get is the value of the part called name, if there is one.
func (ps Parts) Get(name string) (float64, bool) {
	for _, p := range ps {
		if p.Name == name {
			return p.Value, true
		}
	}
	return 0, false
}

// MarshalJSON writes ps as a JSON object, in order.
func (ps Parts) MarshalJSON() ([]byte, error) {
	var w jsonw.W
	ps.writeJSON(&w)
	return w.B, nil
}

// UnmarshalJSON reads a JSON object of numbers (its keys' order is kept).
func (ps *Parts) UnmarshalJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil {
		return err
	} else if t == nil {
		*ps = nil
		return nil
	} else if t != json.Delim('{') {
		return fmt.Errorf("sched: parts: want an object, got %v", t)
	}
	out := (*ps)[:0]
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return err
		}
		var v float64
		if err := dec.Decode(&v); err != nil {
			return fmt.Errorf("sched: parts: %v: %w", k, err)
		}
		out = append(out, Part{Name: k.(string), Value: v})
	}
	*ps = out
	return nil
}

func (ps Parts) writeJSON(w *jsonw.W) {
	w.Obj()
	for _, p := range ps {
		w.Key(p.Name)
		w.Float(p.Value)
	}
	w.EndObj()
}

// Reset clears d for reuse, keeping its storage.
func (d *Decision) Reset() {
	rec := d.Record
	cs := d.Candidates[:0]
	*d = Decision{Record: rec, Candidates: cs}
}

// WriteJSON writes d as encoding/json would from its tags, without
// reflection or allocation once w's buffers have grown: the server writes
// one per request for the audit.
func (d *Decision) WriteJSON(w *jsonw.W) {
	w.Obj()
	w.Key("candidates")
	if d.Candidates == nil {
		w.Null()
	} else {
		w.Arr()
	}
	for i := range d.Candidates {
		c := &d.Candidates[i]
		w.Obj()
		w.Key("backend")
		w.Str(c.Backend)
		if c.Failed != "" {
			w.Key("failed")
			w.Str(c.Failed)
		}
		w.Key("score")
		w.Float(c.Score)
		if len(c.Parts) > 0 {
			w.Key("parts")
			c.Parts.writeJSON(w)
		}
		w.EndObj()
	}
	if d.Candidates != nil {
		w.EndArr()
	}
	if d.Chosen != "" {
		w.Key("chosen")
		w.Str(d.Chosen)
	}
	w.Key("deficit")
	w.Float(d.Deficit)
	w.Key("weight")
	w.Float(d.Weight)
	w.Key("queue_wait_us")
	w.Int(d.QueueWait)
	w.Key("queue_position")
	w.Int(int64(d.Position))
	w.Key("fairness_wait_us")
	w.Int(d.FairnessWait)
	if d.FleetSlot != "" {
		w.Key("fleet_slot")
		w.Str(d.FleetSlot)
	}
	if d.FleetWait != 0 {
		w.Key("fleet_wait_us")
		w.Int(d.FleetWait)
	}
	if d.FleetKey != 0 {
		w.Key("fleet_key")
		w.Float(d.FleetKey)
	}
	w.EndObj()
}
