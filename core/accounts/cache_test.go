package accounts

import (
	"crypto/sha256"
	"strconv"
	"sync/atomic"
	"testing"
	"unsafe"
)

func TestNegCache(t *testing.T) {
	var n negCache
	a, b := sha256.Sum256([]byte("a")), sha256.Sum256([]byte("b"))
	n.add(&a, 0)
	if !n.has(&a, int64(negTTL)-1) {
		t.Fatal("an unknown key was forgotten before negTTL")
	}
	if n.has(&a, int64(negTTL)) {
		t.Fatal("an unknown key was remembered past negTTL")
	}
	if n.has(&b, 0) {
		t.Fatal("a key never added is remembered")
	}
	n.add(&b, 0)
	n.remove(&b)
	if n.has(&b, 0) {
		t.Fatal("remove did not forget")
	}
	n.add(&a, 0)
	n.clear()
	if n.has(&a, 0) {
		t.Fatal("clear did not forget")
	}
}

// TestNegCache_Bounded: a flood of distinct keys leaves the table its
// fixed size; each new key only displaces what shared its slot.
func TestNegCache_Bounded(t *testing.T) {
	var n negCache
	before := unsafe.Sizeof(n)
	for i := range 100_000 {
		h := sha256.Sum256([]byte(strconv.Itoa(i)))
		n.add(&h, 0)
	}
	if unsafe.Sizeof(n) != before || len(n.slots) != negSlots {
		t.Fatal("the table grew")
	}
	last := sha256.Sum256([]byte(strconv.Itoa(99_999)))
	if !n.has(&last, 0) {
		t.Fatal("the latest key is not remembered")
	}
}

// TestCache_PutAfterInvalidation: an entry whose load began before an
// invalidation is not kept.
func TestCache_PutAfterInvalidation(t *testing.T) {
	c := newCache()
	var gen atomic.Uint64
	h := sha256.Sum256([]byte("k"))
	g := gen.Load()
	gen.Add(1) // an invalidation lands while the store is being read
	c.put(&h, &entry{}, &gen, g)
	if c.get(&h) != nil {
		t.Fatal("a load that raced an invalidation was cached")
	}
	c.put(&h, &entry{loaded: 1}, &gen, gen.Load())
	if e := c.get(&h); e == nil || e.loaded != 1 {
		t.Fatal("a load with no invalidation since was not cached")
	}
	c.removeIf(func(e *entry) bool { return e.loaded == 1 })
	if c.len() != 0 {
		t.Fatal("removeIf kept a matching entry")
	}
}

func TestCacheShard_Size(t *testing.T) {
	if n := unsafe.Sizeof(cacheShard{}); n%64 != 0 {
		t.Fatalf("a cache shard is %d bytes; keep it a multiple of 64", n)
	}
}
