package frame

import (
	"strings"
	"testing"
)

func benchFeed(b *testing.B, sp Splitter, pieces ...string) {
	ps := make([][]byte, len(pieces))
	size := 0
	for i, p := range pieces {
		ps[i] = []byte(p)
		size += len(p)
	}
	var n int
	emit := func(ev []byte) { n++ }
	b.SetBytes(int64(size))
	b.ReportAllocs()
	for b.Loop() {
		for _, p := range ps {
			if err := sp.Feed(p, emit); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/event")
}

// BenchmarkSSEFeed feeds typical ~200-byte vLLM chat completion chunks.
func BenchmarkSSEFeed(b *testing.B) {
	ev := vllmChunk(" world")
	crlf := strings.ReplaceAll(ev, "\n", "\r\n")
	b.Run("1event", func(b *testing.B) { benchFeed(b, NewSSE(0), ev) })
	b.Run("16events", func(b *testing.B) { benchFeed(b, NewSSE(0), strings.Repeat(ev, 16)) })
	b.Run("1event-crlf", func(b *testing.B) { benchFeed(b, NewSSE(0), crlf) })
	b.Run("1event-split", func(b *testing.B) { benchFeed(b, NewSSE(0), ev[:100], ev[100:]) })
	// 16 events read in 1500-byte pieces, so most pieces end mid-event.
	b.Run("16events-mtu", func(b *testing.B) {
		s := strings.Repeat(ev, 16)
		var pieces []string
		for len(s) > 1500 {
			pieces, s = append(pieces, s[:1500]), s[1500:]
		}
		benchFeed(b, NewSSE(0), append(pieces, s)...)
	})
}

// BenchmarkNDJSONFeed feeds typical Ollama chat lines.
func BenchmarkNDJSONFeed(b *testing.B) {
	line := `{"model":"llama3.2","created_at":"2024-06-10T10:00:00.050000Z","message":{"role":"assistant","content":" world"},"done":false}` + "\n"
	b.Run("1line", func(b *testing.B) { benchFeed(b, NewNDJSON(0), line) })
	b.Run("16lines", func(b *testing.B) { benchFeed(b, NewNDJSON(0), strings.Repeat(line, 16)) })
	b.Run("1line-split", func(b *testing.B) { benchFeed(b, NewNDJSON(0), line[:60], line[60:]) })
}
