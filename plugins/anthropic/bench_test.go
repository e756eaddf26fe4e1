package anthropic

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

func benchInput(b testing.TB, flags uint32, state, payload []byte, meta ...string) []byte {
	var m []byte
	for i := 0; i+1 < len(meta); i += 2 {
		m = abi.AppendMeta(m, meta[i], meta[i+1])
	}
	in := make([]byte, abi.HeaderSize)
	abi.PutHeader(in, abi.Header{Flags: flags, StateLen: uint32(len(state)), MetaLen: uint32(len(m)), PayloadLen: uint32(len(payload))})
	return append(append(append(in, state...), m...), payload...)
}

// BenchmarkDecodeRequest is the request op through the dispatcher.
func BenchmarkDecodeRequest(b *testing.B) {
	for _, name := range []string{"basic", "tools", "tool_history"} {
		body, err := os.ReadFile(filepath.Join("testdata", "requests", name+".req.json"))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(name, func(b *testing.B) {
			p := newPlugin()
			in := benchInput(b, 0, nil, body, "route", RouteMessages)
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				p.Call(abi.OpRequestDecode, in)
			}
		})
	}
}

// BenchmarkEncodeStream is the per-chunk stream op mid-stream: one chunk
// per call, state carried in.
func BenchmarkEncodeStream(b *testing.B) {
	var w sdk.StateWriter
	text := (&streamState{started: true, kind: blockText, blocks: 1}).encode(&w)
	tool := (&streamState{started: true, kind: blockTool, blocks: 1, seen: 1, tools: true}).encode(&sdk.StateWriter{})
	for _, tc := range []struct {
		name  string
		state []byte
		chunk canon.ChatChunk
	}{
		{"content", text, canon.ChatChunk{ID: "b", Choices: []canon.ChunkChoice{{Delta: canon.Delta{Content: " world"}}}}},
		{"tool_args", tool, canon.ChatChunk{ID: "b", Choices: []canon.ChunkChoice{{Delta: canon.Delta{ToolCalls: []canon.ToolCallDelta{{Index: 0, Arguments: `"Paris"}`}}}}}}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			p := newPlugin()
			in := benchInput(b, 0, tc.state, chunkList([]canon.ChatChunk{tc.chunk}), streamMeta...)
			b.ReportAllocs()
			for b.Loop() {
				p.Call(abi.OpStreamEncode, in)
			}
		})
	}
}
