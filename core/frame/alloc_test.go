//go:build !race

package frame

import (
	"strings"
	"testing"
)

// Steady-state feeding allocates nothing, whether events arrive whole, many
// to a piece, across pieces, or need joining.
func TestFeedZeroAlloc(t *testing.T) {
	ev := vllmChunk(" world")
	named := "event: content_block_delta\r\ndata: {\"type\":\"content_block_delta\",\"index\":0}\r\n\r\n"
	for _, tc := range []struct {
		name   string
		sp     Splitter
		pieces []string
	}{
		{"sse-one", NewSSE(0), []string{ev}},
		{"sse-16", NewSSE(0), []string{strings.Repeat(ev, 16)}},
		{"sse-split", NewSSE(0), []string{ev[:77], ev[77:150], ev[150:]}},
		{"sse-split-cr", NewSSE(0), []string{strings.ReplaceAll(ev, "\n", "\r")[:len(ev)-1], "\r"}},
		{"sse-crlf-split", NewSSE(0), []string{strings.ReplaceAll(ev, "\n", "\r\n")[:len(ev)+1], "\n\r\n"}},
		{"sse-multiline", NewSSE(0), []string{"data: {\"a\":\ndata: 1}\n: ping\n\n"}},
		{"sse-named", NewSSE(0), []string{named + named[:30], named[30:]}},
		{"ndjson-one", NewNDJSON(0), []string{`{"model":"llama3.2","message":{"role":"assistant","content":"Hi"},"done":false}` + "\n"}},
		{"ndjson-16", NewNDJSON(0), []string{strings.Repeat(`{"response":"x","done":false}`+"\r\n", 16)}},
		{"ndjson-split", NewNDJSON(0), []string{`{"response":"x",`, `"done":false}` + "\n"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pieces := make([][]byte, len(tc.pieces))
			for i, p := range tc.pieces {
				pieces[i] = []byte(p)
			}
			var n int
			emit := func(ev []byte) { n += len(ev) }
			allocs := testing.AllocsPerRun(200, func() {
				for _, p := range pieces {
					if err := tc.sp.Feed(p, emit); err != nil {
						t.Fatal(err)
					}
				}
			})
			if allocs != 0 {
				t.Fatalf("%v allocations per run", allocs)
			}
			if n == 0 {
				t.Fatal("no events")
			}
		})
	}
}
