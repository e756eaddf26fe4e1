//go:build !race

package canon

import "testing"

// Allocation counts are checked without the race detector only: under it
// sync.Pool drops items at random.

// Decoding into one value allocates a fixed handful of blocks, however many
// strings the document holds.
func TestDecodeAllocs(t *testing.T) {
	for _, tc := range []struct {
		in  codec
		out codec
		max float64
	}{
		{benchChunk(), new(ChatChunk), 2},
		{benchResponse(), new(ChatResponse), 5},
		{benchRequest(), new(ChatRequest), 7},
		{conversation(50), new(ChatRequest), 4},
	} {
		buf := tc.in.AppendJSON(nil)
		if n := testing.AllocsPerRun(100, func() {
			if err := tc.out.DecodeJSON(buf); err != nil {
				t.Fatal(err)
			}
		}); n > tc.max {
			t.Errorf("%T: %v allocs, want at most %v", tc.out, n, tc.max)
		}
	}
}
