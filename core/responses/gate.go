package responses

import (
	"context"
	"errors"
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
// the store failing after the gate let a request through: that response
// write is retried for half a second (a blip, a failover), then lost and
// logged; a conversation append is not retried (see putResponse).
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

// putRetries are the waits before the retries of a response write the
// store could not take: a blip (a failover, a dropped connection) does
// not lose the response its client was just given the id of. Short: the
// write holds the answer's last event.
var putRetries = []time.Duration{100 * time.Millisecond, 400 * time.Millisecond}

// putResponse is PutResponse, retried while the store is unavailable. A
// retry that finds the id taken means an earlier attempt was stored and
// only its acknowledgement was lost. (Conversation appends are not
// retried: an append whose acknowledgement was lost would be made twice.)
func (k *Keeper) putResponse(ctx context.Context, r *store.StoredResponse, blobs []store.Blob) error {
	err := k.st.PutResponse(ctx, r, blobs)
	for _, wait := range putRetries {
		if !store.Unavailable(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
		if err = k.st.PutResponse(ctx, r, blobs); errors.Is(err, store.ErrConflict) {
			return nil
		}
	}
	return err
}
