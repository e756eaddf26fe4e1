// Package outcome is the record of one finished request: who asked for
// what, where it went, what it cost and how it ended. The server fills one
// Outcome per request and hands it to every registered Observer when the
// request finishes; quota settlement and audit attach there.
package outcome

import "time"

// Stage names a step of the request pipeline whose time is recorded.
type Stage uint8

// Pipeline stages, in order.
const (
	StageAuth    Stage = iota // key check
	StageLimit                // quotas and rate limits
	StageRead                 // reading the body (after authentication)
	StageCheck                // native JSON pre-check
	StageDecode               // translator: client body → canonical
	StageAdmit                // scheduling: waiting for a backend slot
	StageEncode               // adapter: canonical → backend body
	StageBackend              // backend call until the response headers (complete body when not streamed)
	StageRespond              // response translation and write; for a stream, the whole relay
	NumStages
)

var stageNames = [NumStages]string{"auth", "limit", "read", "check", "decode", "admit", "encode", "backend", "respond"}

// String names the stage for logs and metrics.
func (s Stage) String() string {
	if s < NumStages {
		return stageNames[s]
	}
	return "unknown"
}

// Usage counts tokens as the backend reported them.
type Usage struct {
	Prompt, Completion, Reasoning, Cached int
	// Reported is true when the backend reported usage; false means the
	// figures are zero (nothing was generated) or the server's estimate
	// (an answer that ended without usage: the input estimate and the
	// adapters' count of the output decoded).
	Reported bool
}

// Outcome is the record of one request. The server owns it; an Observer
// must copy what it keeps.
type Outcome struct {
	RequestID string
	Route     string // route name from the translator's manifest
	Kind      string // endpoint kind
	Dialect   string // the translator's format
	Model     string
	Stream    bool

	KeyID, User, Group string
	UserID             int64
	ClientIP           string // after the trusted-proxy rules
	UserAgent          string

	Backend  string // the last backend tried ("" when none was)
	Attempts int    // backend attempts made

	Status     int    // HTTP status sent (499: the client went away)
	ErrorCode  string // machine-readable error code, "" on success
	Error      string // error text for logs (never shown to clients as is)
	ClientGone bool   // the client disconnected before the answer was complete

	Usage        Usage
	FinishReason string

	Start    time.Time
	Duration time.Duration
	Stages   [NumStages]time.Duration

	BytesIn  int64         // request body
	BytesOut int64         // response body or stream bytes
	Chunks   int           // stream writes
	TTFT     time.Duration // a stream's first byte to the client after Start (0: none)
	// FairnessDelay is the part of StageAdmit the fair-share order cost
	// the request (the scheduler's decision's fairness wait; 0 when no
	// decision was recorded). StreamPlugin is the time a stream's plugin
	// calls took (adapter decode, translator encode), a part of
	// StageRespond: the rest of it is framing and client writes.
	FairnessDelay time.Duration
	StreamPlugin  time.Duration

	// Request and Response are the client's request body and the
	// response sent (for a stream, its first bytes), as far as the server
	// kept them; they alias server buffers and are valid only during
	// Observe. ResponseCut: the response was longer than what was kept.
	Request, Response []byte
	ResponseCut       bool

	// Backend placement, when known: the backend's node and GPU indices,
	// and the scheduler's decision as JSON.
	Node     string
	GPUs     string
	Decision []byte
	// EnergyJ estimates the GPU energy the request used, in joules, from
	// the node sidecar's power reading (0: unknown).
	EnergyJ float64

	// Panicked: the handler panicked serving the request (the client got
	// a 500); the Outcome holds what was filled in before the panic.
	Panicked bool
}

// Reset clears o for reuse.
func (o *Outcome) Reset() { *o = Outcome{} }

// Observer is told about every finished request, on the request's own
// goroutine, after the response was written. It must be fast and must not
// block (queue slow work), and must not keep o after returning.
type Observer interface {
	Observe(o *Outcome)
}

// Starter is an Observer that is also told when a request is admitted
// (it holds a backend slot), before the backend is called: the audit
// records the request then, so that one the gateway never finishes (a
// crash, a kill) still leaves a record. The Outcome holds what is known
// at that point (no response, no usage; Duration so far). Started runs on
// the request's goroutine, must not block and must not keep o.
type Starter interface {
	Observer
	Started(o *Outcome)
}

// ObserverFunc adapts a function to Observer.
type ObserverFunc func(o *Outcome)

// Observe implements Observer.
func (f ObserverFunc) Observe(o *Outcome) { f(o) }
