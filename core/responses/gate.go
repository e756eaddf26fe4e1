package responses

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mindrouter/mindrouter/core/store"
)

// A request that will store its answer (store true, or a conversation to
// append to) asks the gate first, before anything is generated: with the
// store down the answer would be generated, sent with an id, and lost
// (the client then gets 404 for it, or 400 continuing from it). The gate
// trusts the store for gateFresh after it last answered (a ping or a
// write), so a busy gateway pings it at most once a second; while it is
// down the requests get 503 with Retry-After. What it cannot catch is
// the store failing after the gate let a request through: that write
// is lost as before, and logged.
const (
	gateFresh = time.Second
	// gateDown is how long a failed ping answers for the requests that
	// queued behind it, so that a store that hangs costs each of them
	// one wait, not one ping timeout each in turn.
	gateDown    = 250 * time.Millisecond
	pingTimeout = 2 * time.Second
)

// pinger is a store that can say whether it answers (sqlstore.Store).
type pinger interface {
	Ping(ctx context.Context) error
}

// storeGate answers whether the store answers. Safe for concurrent use.
type storeGate struct {
	ping     func(ctx context.Context) error // nil: a store that cannot say; never refuse
	okUntil  atomic.Int64                    // UnixNano until which the store counts as up
	failedAt atomic.Int64                    // UnixNano of the last failed ping
	lastErr  atomic.Pointer[error]
	mu       sync.Mutex // one ping at a time
}

func newGate(st store.ResponseStore) *storeGate {
	g := &storeGate{}
	if p, ok := st.(pinger); ok {
		g.ping = p.Ping
	}
	return g
}

// check returns nil when the store answered lately or answers a ping now,
// else the client's 503.
func (g *storeGate) check(ctx context.Context) error {
	if g.ping == nil || time.Now().UnixNano() < g.okUntil.Load() {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	now := time.Now().UnixNano()
	if now < g.okUntil.Load() {
		return nil // another request's ping just succeeded
	}
	if now-g.failedAt.Load() < int64(gateDown) {
		if p := g.lastErr.Load(); p != nil {
			return errStoreDown(*p)
		}
	}
	pctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	if err := g.ping(pctx); err != nil {
		err = fmt.Errorf("responses: the store does not answer: %w", err)
		g.lastErr.Store(&err)
		g.failedAt.Store(time.Now().UnixNano())
		return errStoreDown(err)
	}
	g.up()
	return nil
}

// up notes that the store answered (a ping or a write).
func (g *storeGate) up() { g.okUntil.Store(time.Now().Add(gateFresh).UnixNano()) }

// down notes that a write found the store unreachable: the next request
// that would store asks it again.
func (g *storeGate) down() { g.okUntil.Store(0) }

// wrote notes the outcome of a write.
func (g *storeGate) wrote(err error) {
	switch {
	case err == nil:
		g.up()
	case store.Unavailable(err):
		g.down()
	}
}
