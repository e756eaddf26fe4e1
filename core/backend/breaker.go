package backend

// The circuit breaker of a backend.
//
// States: closed (requests flow) → open after breaker.failures consecutive
// live failures (connection refused or reset, a 5xx answer, an attempt
// timeout, a stream broken after it started) within breaker.window of the
// first of them → half-open once breaker.cooldown has passed, letting
// exactly one probe request through → closed when the probe succeeds, open
// again (with the cool-down doubled, up to the larger of breaker.cooldown
// and BreakerMaxCooldown) when it fails. A success resets the count, and
// so does a failure further than the window from the first counted one:
// rare failures spread over a busy backend's hours never add up to an
// open breaker.
//
// Only live requests move the breaker. Discovery's health probe succeeding
// does not close an open breaker: an engine answers /health or /api/tags
// while failing every generation (GPU out of memory, a wedged worker), so
// only a real request is proof. The health probe still gates routing on
// its own (Routable needs both).
//
// The probe is not left to chance: a backend whose breaker waits for its
// probe (ProbeDue: half-open, the probe not out) is placed ahead of every
// other candidate, whatever its score (core/score, core/sched's placers;
// with a fleet, its replica claims a slot of it for the probe), so the
// next request for a model it serves, one that has not tried it, is the
// probe. Left to the score, a restored backend whose peers had room got
// the probe only when they were full: 40-60 s under a steady load, during
// which the backend's capacity was lost. A backend that comes back is
// thus back within one cool-down of its return, as long as requests for
// its models arrive; the cost is at most one request per cool-down sent
// to a backend that may still fail it (retried on another backend when
// its failure allows, as any failed attempt).
//
// Every attempt's report carries the Ticket its TryAttempt gave, so the
// breaker knows which claim it concerns: only the half-open probe's own
// result closes or re-opens a breaker that opened. A request admitted
// while it was still closed, which answers after it opened, says nothing
// about the backend's recovery: under a 50 % error rate, such a success
// used to close the breaker as soon as it opened (it flapped), and such a
// failure re-opened a half-open one before its probe had answered. A
// failure reported from an epoch before the last opening (a request that
// outlived an open and a close) is ignored for the same reason.
//
// The closed state's hot path (Routable, ReportSuccess with no failure
// counted) is one atomic load; transitions take a small mutex. Nothing
// allocates.

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mindrouter/mindrouter/core/config"
)

// Breaker defaults, for a breaker built without BreakerSettings (the
// gateway passes the config's breaker section, whose own defaults are
// config.Default's).
const (
	BreakerThreshold   = 5                // consecutive live failures that open the breaker
	BreakerWindow      = 10 * time.Second // the failures must fall within this of the first
	BreakerCooldown    = 10 * time.Second // first wait before a half-open probe
	BreakerMaxCooldown = 60 * time.Second // the doubling cool-down's ceiling, unless the cool-down is longer
	// breakerProbeTimeout frees a probe slot whose request never reported
	// (a bug or a lost goroutine), so a breaker cannot stay half-open with
	// no probe possible for ever. It exceeds any attempt's time to headers.
	breakerProbeTimeout = 5 * time.Minute
)

// Breaker states.
const (
	breakerClosed uint32 = iota
	breakerOpen
	breakerHalfOpen
)

var breakerNames = [...]string{"closed", "open", "half-open"}

// BreakerSettings configure a backend's circuit breaker (config.Breaker);
// zero fields take the Breaker* defaults.
type BreakerSettings struct {
	Failures int           // consecutive live failures that open it
	Window   time.Duration // ... within this of the first of them
	Cooldown time.Duration // how long it stays open before a probe
}

// BreakerFromConfig converts the config's breaker section.
func BreakerFromConfig(c config.Breaker) BreakerSettings {
	return BreakerSettings{Failures: c.Failures, Window: c.Window.D(), Cooldown: c.Cooldown.D()}
}

type breaker struct {
	state atomic.Uint32 // read without the mutex on the hot path
	fails atomic.Int32  // consecutive failures while closed
	// epoch counts the openings: a Ticket names the epoch it was given in.
	epoch atomic.Uint64

	mu        sync.Mutex
	firstFail time.Time     // closed: when the counted run of failures began
	until     time.Time     // open: when a probe may go
	cooldown  time.Duration // the current cool-down (doubles on each failed probe)
	probing   bool          // half-open: the probe is out
	probeAt   time.Time

	// Set once before use, or left zero for the defaults.
	now       func() time.Time
	threshold int32
	window    time.Duration
	base, max time.Duration
	name      string
	log       *slog.Logger
}

// configure applies s over the defaults; call before use.
func (br *breaker) configure(s BreakerSettings) {
	br.threshold = int32(min(s.Failures, 1<<30))
	br.window, br.base = s.Window, s.Cooldown
	br.max = max(s.Cooldown, BreakerMaxCooldown)
}

// The zero breaker is closed with the default settings (a Backend made
// in a test without newBackend included); the fields below, when set,
// override them (tests: a fake clock).

func (br *breaker) clock() time.Time {
	if br.now != nil {
		return br.now()
	}
	return time.Now()
}

func (br *breaker) limit() int32 {
	if br.threshold > 0 {
		return br.threshold
	}
	return BreakerThreshold
}

func (br *breaker) windowLen() time.Duration {
	if br.window > 0 {
		return br.window
	}
	return BreakerWindow
}

func (br *breaker) baseCooldown() time.Duration {
	if br.base > 0 {
		return br.base
	}
	return BreakerCooldown
}

func (br *breaker) maxCooldown() time.Duration {
	if br.max > 0 {
		return br.max
	}
	return BreakerMaxCooldown
}

func (br *breaker) logger() *slog.Logger {
	if br.log != nil {
		return br.log
	}
	return slog.Default()
}

// stateName is the state's name, the cool-down's end counted: an open
// breaker whose cool-down has passed reads "half-open".
func (br *breaker) stateName() string {
	s := br.state.Load()
	if s == breakerOpen {
		br.mu.Lock()
		if !br.clock().Before(br.until) {
			br.toHalfOpenLocked()
		}
		s = br.state.Load()
		br.mu.Unlock()
	}
	return breakerNames[s]
}

// allow reports whether a request may be routed to the backend now
// without claiming anything (Routable: the scheduler, model lists):
// closed, or half-open with its probe not yet out.
func (br *breaker) allow() bool {
	if br.state.Load() == breakerClosed {
		return true
	}
	br.mu.Lock()
	defer br.mu.Unlock()
	return br.probeFreeLocked()
}

// probeDue reports whether the breaker waits for its half-open probe:
// open past its cool-down, or half-open, with the probe not yet out. The
// closed state's answer is one atomic load.
func (br *breaker) probeDue() bool {
	if br.state.Load() == breakerClosed {
		return false
	}
	br.mu.Lock()
	defer br.mu.Unlock()
	return br.state.Load() != breakerClosed && br.probeFreeLocked()
}

// Ticket is one attempt's claim on a backend's circuit breaker, given by
// TryAttempt and handed back with the attempt's report: it says whether
// the attempt is the half-open probe, and in which epoch (between two
// openings) it was admitted. The zero Ticket is a closed-state claim of
// the first epoch.
type Ticket struct {
	epoch uint64
	probe bool
}

// acquire claims the right to send a request now: always when closed;
// when half-open, only the one probe. A request that acquired must report
// once, with the ticket: success, failure or abandoned.
func (br *breaker) acquire() (Ticket, bool) {
	if br.state.Load() == breakerClosed {
		// The epoch read after the state: a claim racing an opening gets
		// the old epoch, whose reports the new state ignores.
		return Ticket{epoch: br.epoch.Load()}, true
	}
	br.mu.Lock()
	defer br.mu.Unlock()
	if br.state.Load() == breakerClosed {
		return Ticket{epoch: br.epoch.Load()}, true
	}
	if !br.probeFreeLocked() {
		return Ticket{}, false
	}
	br.probing, br.probeAt = true, br.clock()
	return Ticket{epoch: br.epoch.Load(), probe: true}, true
}

// isProbeLocked reports whether t is the probe now out (br.mu held).
func (br *breaker) isProbeLocked(t Ticket) bool {
	return t.probe && br.probing && t.epoch == br.epoch.Load() && br.state.Load() == breakerHalfOpen
}

// probeFreeLocked: open past its cool-down (now half-open) or half-open,
// with no probe out.
func (br *breaker) probeFreeLocked() bool {
	switch br.state.Load() {
	case breakerClosed:
		return true
	case breakerOpen:
		if br.clock().Before(br.until) {
			return false
		}
		br.toHalfOpenLocked()
	}
	if br.probing && br.clock().Sub(br.probeAt) >= breakerProbeTimeout {
		br.probing = false
	}
	return !br.probing
}

func (br *breaker) toHalfOpenLocked() {
	br.state.Store(breakerHalfOpen)
	br.probing = false
	br.logger().Info("backend circuit breaker half-open: probing with one request", slog.String("backend", br.name))
}

// success records a request the backend answered. The probe's success
// closes a half-open breaker: the backend works. Another request's (one
// admitted before the breaker opened) leaves an open or half-open breaker
// as it is.
func (br *breaker) success(t Ticket) {
	if br.state.Load() == breakerClosed {
		if br.fails.Load() != 0 {
			br.fails.Store(0) // failure() takes the mutex and restarts the window from 0
		}
		return
	}
	br.mu.Lock()
	defer br.mu.Unlock()
	if br.state.Load() == breakerClosed {
		br.fails.Store(0)
		return
	}
	if !br.isProbeLocked(t) {
		return
	}
	br.state.Store(breakerClosed)
	br.fails.Store(0)
	br.probing, br.cooldown = false, br.baseCooldown()
	br.logger().Info("backend circuit breaker closed: the backend answered", slog.String("backend", br.name))
}

// failure records a live failure: the threshold's worth in a row, within
// the window, opens a closed breaker; the probe's failure re-opens a
// half-open one with the cool-down doubled. Other failures while open or
// half-open (requests admitted before it opened), and failures of an
// epoch before the last opening, change nothing. Failures are rare: this
// takes the mutex.
func (br *breaker) failure(t Ticket) {
	br.mu.Lock()
	defer br.mu.Unlock()
	switch br.state.Load() {
	case breakerClosed:
		if t.epoch != br.epoch.Load() {
			return // admitted before the breaker last opened: old news
		}
		now := br.clock()
		if br.fails.Load() == 0 || now.Sub(br.firstFail) > br.windowLen() {
			br.fails.Store(0) // a new run of failures starts here
			br.firstFail = now
		}
		if br.fails.Add(1) < br.limit() {
			return
		}
		br.cooldown = br.baseCooldown()
		br.openLocked("consecutive failures")
	case breakerHalfOpen:
		if !br.isProbeLocked(t) {
			return
		}
		br.cooldown = min(2*br.cooldown, br.maxCooldown())
		br.openLocked("the probe failed")
	}
}

func (br *breaker) openLocked(why string) {
	br.epoch.Add(1)
	br.state.Store(breakerOpen)
	br.fails.Store(0)
	br.probing = false
	br.until = br.clock().Add(br.cooldown)
	br.logger().Warn("backend circuit breaker open: routing around the backend", slog.String("backend", br.name),
		slog.String("reason", why), slog.Float64("cooldown_s", br.cooldown.Seconds()))
}

// abandoned returns a claimed probe whose request ended without telling
// anything about the backend (the client went away).
func (br *breaker) abandoned(t Ticket) {
	if br.state.Load() == breakerClosed {
		return
	}
	br.mu.Lock()
	if br.isProbeLocked(t) {
		br.probing = false
	}
	br.mu.Unlock()
}

// BreakerState is the circuit breaker's state: "closed", "open" or
// "half-open" (for /status and metrics).
func (b *Backend) BreakerState() string { return b.brk.stateName() }

// TryAttempt claims the right to send one request to b now: true while
// its breaker is closed, and for the single probe while half-open. Each
// true must be followed by exactly one ReportSuccess, ReportFailure or
// ReportAbandoned with the Ticket it gave.
func (b *Backend) TryAttempt() (Ticket, bool) { return b.brk.acquire() }

// BreakerAllows reports whether b's circuit breaker would let a request
// through now (closed, or half-open with its probe not out), without
// claiming anything: the scorer's hard constraint.
func (b *Backend) BreakerAllows() bool { return b.brk.allow() }

// ProbeDue reports whether b's circuit breaker waits for its half-open
// probe (its cool-down has passed and the probe is not out): the
// placers put such a backend ahead of the score, so that the next
// request for a model it serves is the probe (see the breaker's doc).
func (b *Backend) ProbeDue() bool { return b.brk.probeDue() }

// ReportSuccess tells b's breaker that the attempt t answered (any status
// that is not a server failure).
func (b *Backend) ReportSuccess(t Ticket) { b.brk.success(t) }

// ReportFailure tells b's breaker of attempt t's live failure: the
// connection refused or reset, a 5xx answer, an attempt timeout.
func (b *Backend) ReportFailure(t Ticket) { b.brk.failure(t) }

// ReportAbandoned releases attempt t's claim, which tells nothing about b
// (the client cancelled before b answered).
func (b *Backend) ReportAbandoned(t Ticket) { b.brk.abandoned(t) }

// SetBreakerLogger sends the backends' circuit-breaker state changes to
// log (slog.Default otherwise), those added later included. Call it
// before serving: it is not synchronised with requests.
func (r *Registry) SetBreakerLogger(log *slog.Logger) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.brkLog = log
	for _, b := range r.snap.Load().list {
		b.brk.log = log
	}
}
