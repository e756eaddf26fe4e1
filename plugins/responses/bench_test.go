package responses

import (
	"strconv"
	"strings"
	"testing"

	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
	"github.com/mindrouter/mindrouter/sdk/sdktest"
)

// longState returns the state blob of a stream whose message text so far
// is about size bytes.
func longState(tb testing.TB, size int) []byte {
	tb.Helper()
	h := newHarness(tb)
	text := strings.Repeat("All work and no play makes Jack a dull boy. ", size/44+1)[:size]
	r := h.Call(abi.OpStreamEncode, sdktest.Meta(gwMeta...), sdktest.Items(sdktest.Chunks(content(text))...), sdktest.Flags(abi.FlagFirst))
	if !r.OK() {
		tb.Fatal(r.Status, r.Error)
	}
	return r.State
}

func itoaK(n int) string { return strconv.Itoa(n>>10) + "KiB" }

// BenchmarkEncodeStream is the per-chunk stream op natively, mid-answer,
// with a short and a long answer's state.
func BenchmarkEncodeStream(b *testing.B) {
	h := newHarness(b)
	in := sdktest.Items(sdktest.Chunks(content(" world"))...)
	for _, size := range []int{1 << 10, 128 << 10} {
		state := longState(b, size)
		b.Run("state="+itoaK(size), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(state)))
			for b.Loop() {
				if r := h.Call(abi.OpStreamEncode, sdktest.Meta(gwMeta...), in, sdktest.State(state)); !r.OK() {
					b.Fatal(r.Status, r.Error)
				}
			}
		})
	}
}

// TestStateSize measures the state blob of a long answer: the text plus a
// few bytes, whatever the cut (what plugins.yaml's state_max_kb must
// hold for the bundle).
func TestStateSize(t *testing.T) {
	h := newHarness(t)
	var state []byte
	text := 0
	for i := range 2000 {
		flags := uint32(0)
		if i == 0 {
			flags = abi.FlagFirst
		}
		d := " token" + strconv.Itoa(i%10)
		text += len(d)
		ch := content(d)
		if i%500 == 499 { // a tool call now and then
			ch = canon.ChatChunk{Choices: []canon.ChunkChoice{{Delta: canon.Delta{ToolCalls: []canon.ToolCallDelta{{Index: i / 500, Name: "f", Arguments: "{}"}}}}}}
			text += 2
		}
		r := h.Call(abi.OpStreamEncode, sdktest.Meta(gwMeta...), sdktest.Items(sdktest.Chunks(ch)...), sdktest.Flags(flags), sdktest.State(state))
		if !r.OK() {
			t.Fatal(r.Status, r.Error)
		}
		if r.State != nil {
			state = r.State
		}
	}
	if over := len(state) - text; over < 0 || over > 256 {
		t.Errorf("state %d bytes for %d bytes of text", len(state), text)
	}
}
