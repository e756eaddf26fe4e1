package tokencount

import (
	"crypto/sha256"
	"sync"
	"time"
)

type countKey struct {
	backend, model string
	sum            [sha256.Size]byte
}

// memo is a bounded map of count answers with CLOCK eviction (an entry
// hit since the hand last passed survives one more sweep): LRU's hit rate
// without moving anything on a hit. Safe for concurrent use; a hit
// allocates nothing.
type memo struct {
	mu    sync.Mutex
	index map[countKey]int // → slots
	slots []memoSlot
	hand  int
	max   int
	// until: backends not to ask before then (Backoff); one entry per
	// backend name, so bounded by the configuration.
	until map[string]time.Time
}

type memoSlot struct {
	key countKey
	val Count
	ref bool
}

func newMemo(max int) *memo {
	return &memo{index: make(map[countKey]int, max), max: max, until: map[string]time.Time{}}
}

// usable says whether backend may be asked now.
func (m *memo) usable(backend string, now time.Time) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	u, ok := m.until[backend]
	if ok && !now.Before(u) {
		delete(m.until, backend)
	}
	return !ok || !now.Before(u)
}

// backOff stops asking backend until then.
func (m *memo) backOff(backend string, until time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.until[backend] = until
}

func (m *memo) get(k countKey) (Count, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	i, ok := m.index[k]
	if !ok {
		return Count{}, false
	}
	m.slots[i].ref = true
	return m.slots[i].val, true
}

func (m *memo) put(k countKey, v Count) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if i, ok := m.index[k]; ok {
		m.slots[i].val = v
		return
	}
	if len(m.slots) < m.max {
		m.index[k] = len(m.slots)
		m.slots = append(m.slots, memoSlot{key: k, val: v})
		return
	}
	for m.slots[m.hand].ref { // at most one lap: each pass clears a bit
		m.slots[m.hand].ref = false
		m.hand = (m.hand + 1) % m.max
	}
	delete(m.index, m.slots[m.hand].key)
	m.slots[m.hand] = memoSlot{key: k, val: v}
	m.index[k] = m.hand
	m.hand = (m.hand + 1) % m.max
}

func (m *memo) len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.slots)
}
