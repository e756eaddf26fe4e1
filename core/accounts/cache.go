package accounts

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/mindrouter/mindrouter/core/auth"
)

// entry is what a verified key resolves to, as read from the store at
// loaded. Immutable once in the cache.
type entry struct {
	p       auth.Principal
	loaded  int64     // a.mono when the store read began
	expires time.Time // zero: never
	reason  error     // nil: usable; else why not (revoked, user inactive)
	use     *keyUse   // counts uses of p.KeyNum
}

// nShards spreads cache readers over locks: a read takes one shard's
// RLock, so parallel requests with different keys touch different lines.
const nShards = 64

// cache maps a key's SHA-256 to its entry. Entries for keys that exist
// only: unknown keys go to negCache, so its size is bounded by the number
// of keys in use, and sweep drops entries nobody uses.
type cache struct {
	shards [nShards]cacheShard
}

type cacheShard struct {
	mu sync.RWMutex
	m  map[[32]byte]*entry
	_  [32]byte // 64 bytes a shard: neighbours' locks share no cache line
}

func newCache() *cache {
	c := &cache{}
	for i := range c.shards {
		c.shards[i].m = make(map[[32]byte]*entry)
	}
	return c
}

func (c *cache) shard(h *[32]byte) *cacheShard { return &c.shards[h[0]%nShards] }

func (c *cache) get(h *[32]byte) *entry {
	s := c.shard(h)
	s.mu.RLock()
	e := s.m[*h]
	s.mu.RUnlock()
	return e
}

// put stores e unless an invalidation happened since the load began (gen
// moved): then e may predate a revocation and is used once, not kept.
func (c *cache) put(h *[32]byte, e *entry, gen *atomic.Uint64, loadGen uint64) {
	s := c.shard(h)
	s.mu.Lock()
	if gen.Load() == loadGen {
		s.m[*h] = e
	}
	s.mu.Unlock()
}

func (c *cache) remove(h *[32]byte) {
	s := c.shard(h)
	s.mu.Lock()
	delete(s.m, *h)
	s.mu.Unlock()
}

// removeIf drops every entry for which drop is true.
func (c *cache) removeIf(drop func(*entry) bool) {
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		for h, e := range s.m {
			if drop(e) {
				delete(s.m, h)
			}
		}
		s.mu.Unlock()
	}
}

func (c *cache) clear() {
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		clear(s.m)
		s.mu.Unlock()
	}
}

func (c *cache) len() int {
	n := 0
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.RLock()
		n += len(s.m)
		s.mu.RUnlock()
	}
	return n
}

// negSlots is the size of the negative cache: a direct-mapped table, so a
// flood of random keys costs a fixed 160 KiB however long it lasts.
const negSlots = 4096

// negTTL is how long an unknown key is refused without asking the store:
// short, so that a key created a moment after someone tried it works
// within a second.
const negTTL = time.Second

// negCache remembers recently unknown key hashes. A newer unknown key
// overwrites whatever shared its slot; forgetting early only costs a store
// lookup.
type negCache struct {
	mu    sync.Mutex
	slots [negSlots]negSlot
}

type negSlot struct {
	h     [32]byte
	until int64 // a.mono
}

func negIndex(h *[32]byte) int { return (int(h[1])<<8 | int(h[2])) % negSlots }

func (n *negCache) has(h *[32]byte, mono int64) bool {
	n.mu.Lock()
	s := &n.slots[negIndex(h)]
	hit := s.until > mono && s.h == *h
	n.mu.Unlock()
	return hit
}

func (n *negCache) add(h *[32]byte, mono int64) {
	n.mu.Lock()
	n.slots[negIndex(h)] = negSlot{h: *h, until: mono + int64(negTTL)}
	n.mu.Unlock()
}

func (n *negCache) remove(h *[32]byte) {
	n.mu.Lock()
	if s := &n.slots[negIndex(h)]; s.h == *h {
		*s = negSlot{}
	}
	n.mu.Unlock()
}

func (n *negCache) clear() {
	n.mu.Lock()
	n.slots = [negSlots]negSlot{}
	n.mu.Unlock()
}
