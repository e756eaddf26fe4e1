//go:build wasm

package canon

import "sync/atomic"

// A WebAssembly instance runs one thread, so one cached decoder does, and is
// cheaper than sync.Pool there. It is taken with a swap all the same: a
// goroutine can be parked mid-decode (e.g. to assist the GC) and another
// one decode meanwhile; it then makes its own.
var cached atomic.Pointer[decoder]

func getDecoder() *decoder {
	if d := cached.Swap(nil); d != nil {
		return d
	}
	return newDecoder()
}

func putDecoder(d *decoder) { cached.Store(d) }
