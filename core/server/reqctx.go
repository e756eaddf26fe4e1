package server

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mindrouter/mindrouter/core/backend"
)

// reqCtx is a request's context (exchange.ctx): what
// context.WithDeadline(s.baseCtx, start+timeouts.request) gave before, at
// a fraction of its cost on every request. WithDeadline allocated a timer
// and registered the request in the base context's children (under that
// context's one mutex), and each backend call's context.AfterFunc
// registered again in the request's children map, allocated for it.
// Here:
//   - the deadline timer is the exchange's own, made once and re-armed
//     per request (armDeadline): expire cancels only a context whose
//     deadline has passed, so a late firing meant for the pooled
//     exchange's previous request does nothing;
//   - the server's end (baseCtx cancelled: the gateway closing) reaches
//     the requests in flight through one context.AfterFunc for the
//     server and a list linked through the live contexts (liveSet), not
//     one registration per request in a map;
//   - the done channel is made only when someone asks for it (Done):
//     a unary request that never waits on it has none;
//   - AfterFunc, which context.AfterFunc and derived contexts
//     (WithTimeout, WithCancel) use for a parent like this one, keeps the
//     callbacks in a small slice, which backend.DoContext fills through
//     OnEnd (EndNotifier) without the stop func.
//
// A reqCtx is new for each request (one small allocation), never reused:
// whatever still holds the context of a finished request sees it ended.
// Values are the base context's; context.Cause is Err (no cause is set).
type reqCtx struct {
	values   context.Context // the base context without its cancellation
	deadline time.Time

	ended atomic.Bool // err is set: Err's fast path
	mu    sync.Mutex
	done  chan struct{} // made by Done, or closed at cancel when Done had made it
	err   error
	hooks []reqHook
	last  uint64     // id of the last hook
	buf   [2]reqHook // hooks' first backing array

	// The server's live set (liveSet.mu guards them).
	prev, next *reqCtx
	listed     bool
}

func newReqCtx(values context.Context, deadline time.Time) *reqCtx {
	c := &reqCtx{values: values, deadline: deadline}
	c.hooks = c.buf[:0]
	return c
}

type reqHook struct {
	id uint64
	f  func()
}

var closedDone = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

func (c *reqCtx) Deadline() (time.Time, bool) { return c.deadline, true }

func (c *reqCtx) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		if c.err != nil {
			return closedDone
		}
		c.done = make(chan struct{})
	}
	return c.done
}

func (c *reqCtx) Err() error {
	if !c.ended.Load() {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

func (c *reqCtx) Value(key any) any { return c.values.Value(key) }

// cancel ends c with err (the first one wins): its done channel closes
// and its callbacks run, in the calling goroutine, as a cancelCtx cancels
// its children (context.AfterFunc runs its own f in a goroutine of its
// own; the others, a derived context's cancel and DoContext's, are
// quick).
func (c *reqCtx) cancel(err error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = err
	c.ended.Store(true)
	if c.done != nil {
		close(c.done)
	}
	hooks := c.hooks
	c.hooks = nil
	c.mu.Unlock()
	for _, h := range hooks {
		h.f()
	}
}

// AfterFunc arranges for f to run once c ends (at once if it has): what
// the context package calls on a parent of this kind, for
// context.AfterFunc and for the contexts derived from c. stop reports
// whether it stopped f from being run.
func (c *reqCtx) AfterFunc(f func()) (stop func() bool) {
	id, ok := c.addHook(f)
	if !ok {
		f()
		return func() bool { return false }
	}
	return func() bool { return c.removeHook(id) }
}

// addHook registers f to run when c ends; ok is false, f not
// registered, when c has ended already.
func (c *reqCtx) addHook(f func()) (id uint64, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return 0, false
	}
	c.last++
	c.hooks = append(c.hooks, reqHook{id: c.last, f: f})
	return c.last, true
}

// removeHook unregisters hook id, reporting whether it had not run (nor
// been started).
func (c *reqCtx) removeHook(id uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, h := range c.hooks {
		if h.id == id {
			c.hooks = append(c.hooks[:i], c.hooks[i+1:]...)
			return true
		}
	}
	return false
}

// OnEnd is AfterFunc without the stop func's allocation
// (backend.EndNotifier, for DoContext): Unhook(id) stops f, as stop does;
// ok is false when c has ended already, f not registered.
func (c *reqCtx) OnEnd(f func()) (id uint64, ok bool) { return c.addHook(f) }

// Unhook stops what OnEnd registered: true when f had not been run.
func (c *reqCtx) Unhook(id uint64) bool { return c.removeHook(id) }

func (c *reqCtx) String() string { return "server.reqCtx" }

var _ backend.EndNotifier = (*reqCtx)(nil)

// armDeadline arms the timer that cancels the exchange's context at its
// deadline, d from now: one timer per pooled exchange, made on its first
// request, re-armed by begin and stopped by releaseHeld.
func (ex *exchange) armDeadline(d time.Duration) {
	if ex.dlTimer == nil {
		ex.dlTimer = time.AfterFunc(d, ex.expire)
		return
	}
	ex.dlTimer.Reset(d)
}

// expire is the deadline timer's callback: it cancels the current
// request's context when that context's deadline has passed (a firing
// meant for an earlier request of this pooled exchange finds a later
// deadline, or no request, and does nothing).
func (ex *exchange) expire() {
	c := ex.rc.Load()
	if c == nil {
		return
	}
	if d := time.Until(c.deadline); d > 0 {
		// Fired for an earlier request, or early: the current request's
		// timer is armed by its begin; nothing to do.
		return
	}
	c.cancel(context.DeadlineExceeded)
}

// liveSet holds the contexts of a server's requests in flight, so that
// the server's end (its base context cancelled) cancels them: a list
// linked through the contexts themselves (no hashing, no allocation).
type liveSet struct {
	mu    sync.Mutex
	ended atomic.Bool
	head  *reqCtx
	n     int
}

// add registers c; when the server has ended, c is cancelled at once.
func (l *liveSet) add(c *reqCtx) {
	l.mu.Lock()
	if l.ended.Load() {
		l.mu.Unlock()
		c.cancel(context.Canceled)
		return
	}
	c.prev, c.next, c.listed = nil, l.head, true
	if l.head != nil {
		l.head.prev = c
	}
	l.head = c
	l.n++
	l.mu.Unlock()
}

func (l *liveSet) remove(c *reqCtx) {
	l.mu.Lock()
	if c.listed {
		if c.prev != nil {
			c.prev.next = c.next
		} else {
			l.head = c.next
		}
		if c.next != nil {
			c.next.prev = c.prev
		}
		c.prev, c.next, c.listed = nil, nil, false
		l.n--
	}
	l.mu.Unlock()
}

// len is the number of requests in flight.
func (l *liveSet) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n
}

// end cancels every request in flight, and any added later.
func (l *liveSet) end() {
	l.mu.Lock()
	l.ended.Store(true)
	cs := make([]*reqCtx, 0, l.n)
	for c := l.head; c != nil; c = c.next {
		cs = append(cs, c)
	}
	l.mu.Unlock()
	for _, c := range cs {
		c.cancel(context.Canceled)
	}
}
