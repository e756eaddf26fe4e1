package frame

import "testing"

func fuzzSeeds(f *testing.F, ins []string) {
	for i, in := range ins {
		f.Add([]byte(in), uint16(i*7), uint16(i*31), uint8(i))
	}
}

// FuzzSSE checks, on arbitrary input, that the splitter agrees with the
// reference parser and that cutting the stream at two points changes
// neither the events nor, under a small limit, where the error falls.
func FuzzSSE(f *testing.F) {
	var seeds []string
	for _, tr := range sseTranscripts {
		seeds = append(seeds, tr.in)
	}
	seeds = append(seeds, "data: a\r", "\r\n\r\n", bom+"data:x", "\xEF\xBB\xEF", "data\r\ndata:\n\n", "event:e\rdata: :\r\r")
	fuzzSeeds(f, seeds)
	f.Fuzz(func(t *testing.T, in []byte, a, b uint16, lim uint8) {
		n := len(in) + 1
		i, j := int(a)%n, int(b)%n
		whole := feedAll(NewSSE(0), [][]byte{in})
		if ref := (outcome{events: refSSE(string(in))}); !whole.equal(ref) {
			t.Fatalf("whole: got %v, reference %v", whole, ref)
		}
		if got := feedAll(NewSSE(0), cut(in, i, j)); !got.equal(whole) {
			t.Fatalf("cut at %d, %d: got %v, whole %v", i, j, got, whole)
		}
		max := 1 + int(lim)%64
		whole = feedAll(NewSSE(max), [][]byte{in})
		if got := feedAll(NewSSE(max), cut(in, i, j)); !got.equal(whole) {
			t.Fatalf("limit %d, cut at %d, %d: got %v, whole %v", max, i, j, got, whole)
		}
	})
}

// FuzzNDJSON is FuzzSSE for NDJSON.
func FuzzNDJSON(f *testing.F) {
	var seeds []string
	for _, tr := range ndjsonTranscripts {
		seeds = append(seeds, tr.in)
	}
	seeds = append(seeds, "abc\r", "\r\n\r\n", " \t\n", "a\rb\r\r\n")
	fuzzSeeds(f, seeds)
	f.Fuzz(func(t *testing.T, in []byte, a, b uint16, lim uint8) {
		n := len(in) + 1
		i, j := int(a)%n, int(b)%n
		whole := feedAll(NewNDJSON(0), [][]byte{in})
		if ref := (outcome{events: refNDJSON(string(in))}); !whole.equal(ref) {
			t.Fatalf("whole: got %v, reference %v", whole, ref)
		}
		if got := feedAll(NewNDJSON(0), cut(in, i, j)); !got.equal(whole) {
			t.Fatalf("cut at %d, %d: got %v, whole %v", i, j, got, whole)
		}
		max := 1 + int(lim)%64
		whole = feedAll(NewNDJSON(max), [][]byte{in})
		if got := feedAll(NewNDJSON(max), cut(in, i, j)); !got.equal(whole) {
			t.Fatalf("limit %d, cut at %d, %d: got %v, whole %v", max, i, j, got, whole)
		}
	})
}
