package ollamaapi

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// BenchmarkOps measures the hot ops natively through the dispatcher: a
// mid-stream text chunk, a tool-call argument fragment, and a request with
// tools and history.
func BenchmarkOps(b *testing.B) {
	var w sdk.StateWriter
	mid := bytesClone((&streamState{}).encode(&w))
	pending := bytesClone((&streamState{pending: true, pID: "call_1", pName: "get_weather", pArgs: `{"city":`}).encode(&w))
	body, err := os.ReadFile(filepath.Join("testdata", "requests", "chat_tools.req.json"))
	if err != nil {
		b.Fatal(err)
	}
	text := chunkList([]canon.ChatChunk{{Choices: []canon.ChunkChoice{{Delta: canon.Delta{Content: " world"}}}}})
	frag := chunkList([]canon.ChatChunk{{Choices: []canon.ChunkChoice{{Delta: canon.Delta{ToolCalls: []canon.ToolCallDelta{{Arguments: `"Paris"`}}}}}}})
	for _, tc := range []struct {
		name string
		op   abi.Op
		in   []byte
	}{
		{"stream_content", abi.OpStreamEncode, input(0, mid, text, routeMeta(RouteChat)...)},
		{"stream_tool_args", abi.OpStreamEncode, input(0, pending, frag, routeMeta(RouteChat)...)},
		{"request_tools", abi.OpRequestDecode, input(0, nil, body, abi.MetaRoute, RouteChat)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			p := newPlugin()
			b.ReportAllocs()
			for b.Loop() {
				if r, _ := abi.ParseResult(p.Call(tc.op, tc.in)); r.Status != abi.StatusOK {
					b.Fatal(r.Status, string(r.Error))
				}
			}
		})
	}
}

func bytesClone(b []byte) []byte { return append([]byte(nil), b...) }
