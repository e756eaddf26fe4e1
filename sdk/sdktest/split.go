package sdktest

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
)

// SplitInvariant drives the stream op (stream_encode, stream_decode,
// fused_stream) over items as Stream does, first in one batch, then cut
// into batches in every way (up to 12 items; for longer streams every
// single cut, every pair of cuts, one item per call and 200 random
// cuttings; for stream_encode each also with the end call alone after the
// last item), and fails the test unless every cutting gives the same
// bytes, end-of-stream flag and status. This is what the state blob must
// guarantee: the gateway cuts a stream wherever the network does. It
// returns the output of the single batch.
func SplitInvariant(tb testing.TB, p *sdk.Plugin, op abi.Op, items [][]byte, opts ...Option) []byte {
	tb.Helper()
	return New(tb, p).SplitInvariant(op, items, opts...)
}

// SplitInvariant is the function SplitInvariant on h's plugin and
// component indexes.
func (h *Harness) SplitInvariant(op abi.Op, items [][]byte, opts ...Option) []byte {
	h.tb.Helper()
	want := h.Stream(op, [][][]byte{items}, opts...)
	failures := 0
	for _, cuts := range Cuttings(len(items)) {
		batches := Batches(items, cuts)
		for _, endAlone := range []bool{false, true} {
			if endAlone && op != abi.OpStreamEncode {
				break // the end call is always alone
			}
			b := batches
			if endAlone {
				b = append(b[:len(b):len(b)], nil)
			}
			got := h.Stream(op, b, opts...)
			if bytes.Equal(got.Out, want.Out) && got.Done == want.Done && got.Status == want.Status {
				continue
			}
			h.tb.Errorf("%s cut at %v (end call alone: %v): output differs from one call\n got: %q done=%v status=%s %s\nwant: %q done=%v status=%s %s",
				op, cuts, endAlone, got.Out, got.Done, got.Status, got.Error, want.Out, want.Done, want.Status, want.Error)
			if failures++; failures == 3 {
				h.tb.FailNow()
			}
		}
	}
	return want.Out
}

// Cuttings lists ways to cut n items into batches, each as the ascending
// indexes where a new batch starts: all 2^(n-1) up to n = 12, else every
// single cut, every pair, every item alone and 200 random cuttings (seeded,
// so failures reproduce).
func Cuttings(n int) [][]int {
	if n < 2 {
		return nil
	}
	var out [][]int
	if n <= 12 {
		for mask := 1; mask < 1<<(n-1); mask++ {
			var cuts []int
			for i := 1; i < n; i++ {
				if mask&(1<<(i-1)) != 0 {
					cuts = append(cuts, i)
				}
			}
			out = append(out, cuts)
		}
		return out
	}
	for i := 1; i < n; i++ {
		out = append(out, []int{i})
		for j := i + 1; j < n; j++ {
			out = append(out, []int{i, j})
		}
	}
	all := make([]int, n-1)
	for i := range all {
		all[i] = i + 1
	}
	out = append(out, all)
	rng := rand.New(rand.NewPCG(uint64(n), 7))
	for range 200 {
		var cuts []int
		for i := 1; i < n; i++ {
			if rng.IntN(3) == 0 {
				cuts = append(cuts, i)
			}
		}
		out = append(out, cuts)
	}
	return out
}

// Batches cuts items at the given ascending indexes.
func Batches(items [][]byte, cuts []int) [][][]byte {
	var out [][][]byte
	start := 0
	for _, c := range cuts {
		if c <= start || c >= len(items) {
			panic(fmt.Sprintf("sdktest: bad cut %d in %v for %d items", c, cuts, len(items)))
		}
		out = append(out, items[start:c])
		start = c
	}
	return append(out, items[start:])
}
