//go:build linux || darwin || freebsd

package pluginhost

import (
	"testing"
	"unsafe"
)

// TestLinearMemory_Reserved: the reserved memory grows in place (same
// address, contents kept), refuses to grow past its maximum, and frees.
func TestLinearMemory_Reserved(t *testing.T) {
	const page = 64 << 10
	lm := allocateLinearMemory(page, 64*page)
	m, ok := lm.(*mappedMemory)
	if !ok {
		t.Fatalf("allocated %T, want a reservation", lm)
	}
	b := m.Reallocate(page)
	if len(b) != page {
		t.Fatalf("len %d", len(b))
	}
	b[0], b[page-1] = 1, 2
	base := unsafe.SliceData(b)
	for size := 2 * page; size <= 64*page; size += 3 * page {
		b = m.Reallocate(uint64(size))
		if len(b) != size || unsafe.SliceData(b) != base || b[0] != 1 || b[page-1] != 2 {
			t.Fatalf("grown to %d: len %d, moved %v, contents %d %d", size, len(b), unsafe.SliceData(b) != base, b[0], b[page-1])
		}
		b[size-1] = 3 // the new end is writable
	}
	if m.Reallocate(65*page) != nil {
		t.Fatal("grew past the maximum")
	}
	m.Free()
	if m.buf != nil {
		t.Fatal("not freed")
	}
}
