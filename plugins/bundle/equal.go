package bundle

import "unsafe"

// equal is bytes.Equal. On GOARCH=wasm (equal_wasm.go) it is equalWords:
// Go's wasm memequal, which bytes.Equal and == on strings call, compares
// one byte per loop turn (about a dozen guest instructions a byte), and
// the stream templates' prefix and suffix checks compare some 150–200
// bytes of every backend event (bench/RESULTS.md, "2026-12-04 (session of
// 16:51").

// hasPrefix is bytes.HasPrefix through equal.
func hasPrefix(s, prefix []byte) bool {
	return len(s) >= len(prefix) && equal(s[:len(prefix)], prefix)
}

// equalWords is bytes.Equal eight bytes a step. The loads need no
// alignment on WebAssembly (or amd64 and arm64, where its test runs),
// and each stays within a's and b's bounds.
func equalWords(a, b []byte) bool {
	if len(a) != len(b) {
		return false
	}
	for len(a) >= 8 {
		if *(*uint64)(unsafe.Pointer(unsafe.SliceData(a))) != *(*uint64)(unsafe.Pointer(unsafe.SliceData(b))) {
			return false
		}
		a, b = a[8:], b[8:]
	}
	b = b[:len(a)]
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
