//go:build linux || darwin || freebsd

package pluginhost

import (
	"syscall"

	"github.com/tetratelabs/wazero/experimental"
)

// memAllocator backs each instance's linear memory with an address range
// reserved up front (its memory_mb, no access) and made readable and
// writable as the guest grows it, so the memory never moves and is never
// copied. wazero's default backs it with a Go slice grown by append,
// which copies the whole memory whenever capacity runs out; a Go guest
// grows its heap in many small steps over an instance's first thousands
// of calls (first-party plugins: 4 → ~8.4 MiB over ~6,000 calls, 17–30 µs
// a request averaged over a new instance's first 10,000 requests). The
// reservation is virtual: what the guest touches is what it costs, as
// before. Where the reservation fails, an instance falls back to a slice.
var memAllocator experimental.MemoryAllocator = experimental.MemoryAllocatorFunc(allocateLinearMemory)

func allocateLinearMemory(capBytes, maxBytes uint64) experimental.LinearMemory {
	if maxBytes > 0 && maxBytes <= maxReserveBytes {
		b, err := syscall.Mmap(-1, 0, int(maxBytes), syscall.PROT_NONE, syscall.MAP_PRIVATE|syscall.MAP_ANON|mapNoReserve)
		if err == nil {
			return &mappedMemory{buf: b}
		}
	}
	return &sliceMemory{buf: make([]byte, 0, capBytes)}
}

// maxReserveBytes bounds one reservation (memory_mb is validated far
// below it; wasm32 memory cannot exceed 4 GiB).
const maxReserveBytes = 4 << 30

// mappedMemory is a reserved range; committed bytes at its start are
// accessible.
type mappedMemory struct {
	buf       []byte
	committed int
}

func (m *mappedMemory) Reallocate(size uint64) []byte {
	if size > uint64(len(m.buf)) {
		return nil
	}
	if n := int(size); n > m.committed {
		end := min((n+osPage-1)/osPage*osPage, len(m.buf))
		if err := syscall.Mprotect(m.buf[m.committed:end], syscall.PROT_READ|syscall.PROT_WRITE); err != nil {
			return nil // the guest sees memory.grow fail: out of memory
		}
		m.committed = end
	}
	return m.buf[:size:size]
}

func (m *mappedMemory) Free() {
	if m.buf != nil {
		_ = syscall.Munmap(m.buf)
		m.buf, m.committed = nil, 0
	}
}

// osPage is the granularity of Mprotect (wasm pages, 64 KiB, are a
// multiple of every page size this builds for).
var osPage = syscall.Getpagesize()
