package accounts

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/mindrouter/mindrouter/core/store"
)

// keyUse counts the uses of one key since the last flush. Counters live
// apart from cache entries so that replacing or dropping an entry loses no
// count.
type keyUse struct {
	id    int64
	count atomic.Int64
	last  atomic.Int64 // UnixNano of the latest counted use (to the second)
	ref   atomic.Int64 // a.mono of the latest entry made with it
}

// keyUse returns key id's counter, made at mono.
func (a *Authenticator) keyUse(id int64, mono int64) *keyUse {
	a.usesMu.Lock()
	u := a.uses[id]
	if u == nil {
		u = &keyUse{id: id}
		a.uses[id] = u
	}
	u.ref.Store(mono)
	a.usesMu.Unlock()
	return u
}

// FlushUses writes the uses counted since the last flush to the store
// (usage_count and last_used_at). Run calls it every few seconds and when
// it stops; on error the counts are kept for the next flush.
func (a *Authenticator) FlushUses(ctx context.Context) error {
	type taken struct {
		u   *keyUse
		use store.KeyUse
	}
	var batch []taken
	a.usesMu.Lock()
	for _, u := range a.uses {
		if n := u.count.Swap(0); n > 0 {
			batch = append(batch, taken{u, store.KeyUse{KeyID: u.id, LastUsed: time.Unix(0, u.last.Load()).UTC(), Count: n}})
		}
	}
	a.usesMu.Unlock()
	if len(batch) == 0 {
		return nil
	}
	// One order for every replica, so concurrent flushes lock rows in the
	// same order and cannot deadlock each other.
	slices.SortFunc(batch, func(x, y taken) int { return cmp.Compare(x.use.KeyID, y.use.KeyID) })
	uses := make([]store.KeyUse, len(batch))
	for i, b := range batch {
		uses[i] = b.use
	}
	if err := a.st.TouchKeys(ctx, uses); err != nil {
		for _, b := range batch {
			b.u.count.Add(b.use.Count)
		}
		return fmt.Errorf("accounts: record use of %d keys: %w", len(uses), err)
	}
	return nil
}

// sweep drops entries too old to be trusted and counters no entry can
// still hand out, so memory follows the keys in use.
func (a *Authenticator) sweep() {
	mono := a.mono(a.now())
	// Kept until it can no longer bridge a store outage either.
	keep := a.staleFor(mono)
	a.cache.removeIf(func(e *entry) bool { return mono-e.loaded >= keep })
	a.usesMu.Lock()
	for id, u := range a.uses {
		// The entries left were made (ref) less than keep ago, so a
		// counter idle for twice that is referenced by nothing live.
		if u.count.Load() == 0 && mono-u.ref.Load() > 2*keep {
			delete(a.uses, id)
		}
	}
	a.usesMu.Unlock()
}
