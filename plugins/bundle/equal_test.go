package bundle

import (
	"bytes"
	"testing"
)

// TestEqualWords compares equalWords with bytes.Equal for every length up
// to 40 (five words and a tail), a difference at each position, lengths
// that differ, and slices that start off word boundaries.
func TestEqualWords(t *testing.T) {
	buf := make([]byte, 64)
	for i := range buf {
		buf[i] = byte('a' + i%26)
	}
	for off := 0; off < 3; off++ {
		for n := 0; n <= 40; n++ {
			a := buf[off : off+n]
			b := bytes.Clone(a)
			if !equalWords(a, b) {
				t.Fatalf("off %d len %d: equal slices reported different", off, n)
			}
			for i := 0; i < n; i++ {
				b[i] ^= 0x20
				if got, want := equalWords(a, b), bytes.Equal(a, b); got != want {
					t.Fatalf("off %d len %d, byte %d changed: got %v, want %v", off, n, i, got, want)
				}
				b[i] ^= 0x20
			}
			if n > 0 && (equalWords(a, b[:n-1]) || equalWords(a[:n-1], b)) {
				t.Fatalf("off %d len %d: slices of different lengths reported equal", off, n)
			}
		}
	}
	if !equalWords(nil, []byte{}) {
		t.Fatal("nil and empty reported different")
	}
	if !hasPrefix([]byte("prefix and more"), []byte("prefix")) || hasPrefix([]byte("pre"), []byte("prefix")) {
		t.Fatal("hasPrefix")
	}
}
