package openai

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

// BenchmarkDecodeRequest is the request op: typed (the plugin's own work)
// and through the dispatcher (plus the canonical JSON encode).
func BenchmarkDecodeRequest(b *testing.B) {
	for _, name := range []string{"basic", "tools", "tool_history"} {
		body, err := os.ReadFile(filepath.Join("testdata", "requests", name+".req.json"))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(name+"/typed", func(b *testing.B) {
			tr := New()
			c := &sdk.Call{}
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				var req canon.ChatRequest
				if err := tr.DecodeRequest(c, body, &req); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/abi", func(b *testing.B) {
			p := newPlugin()
			in := benchInput(b, 0, nil, body, "route", RouteChat)
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
	state := (&streamState{roles: 1, tools: 1, named: 1}).encode(&w)
	cases := []struct {
		name  string
		chunk canon.ChatChunk
	}{
		{"content", canon.ChatChunk{ID: "b", Choices: []canon.ChunkChoice{{Delta: canon.Delta{Content: " world"}}}}},
		{"tool_args", canon.ChatChunk{ID: "b", Choices: []canon.ChunkChoice{{Delta: canon.Delta{ToolCalls: []canon.ToolCallDelta{{Index: 0, Arguments: `"Paris"}`}}}}}}},
		{"usage", canon.ChatChunk{ID: "b", Usage: &canon.Usage{PromptTokens: 10, CompletionTokens: 20, TotalTokens: 30}}},
	}
	meta := append(append([]string{}, streamMeta...), "include_usage", "1")
	for _, tc := range cases {
		b.Run(tc.name+"/typed", func(b *testing.B) {
			tr := New()
			chunks := []canon.ChatChunk{tc.chunk}
			var out sdk.Output
			b.ReportAllocs()
			for b.Loop() {
				out.Body = out.Body[:0]
				st := sdk.State{In: state}
				if err := tr.EncodeStream(&sdk.Call{}, &st, chunks, &out); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(tc.name+"/abi", func(b *testing.B) {
			p := newPlugin()
			in := benchInput(b, 0, state, chunkList([]canon.ChatChunk{tc.chunk}), meta...)
			b.ReportAllocs()
			for b.Loop() {
				p.Call(abi.OpStreamEncode, in)
			}
		})
	}
}

func BenchmarkEncodeResponse(b *testing.B) {
	resp := &canon.ChatResponse{Choices: []canon.Choice{{
		Message:      canon.Message{Content: []canon.Part{{Type: canon.PartText, Text: "The capital of Peru is Lima."}}},
		FinishReason: canon.FinishStop,
	}}, Usage: &canon.Usage{PromptTokens: 20, CompletionTokens: 8}}
	tr := New()
	var out sdk.Output
	b.ReportAllocs()
	for b.Loop() {
		out.Body = out.Body[:0]
		tr.EncodeResponse(&sdk.Call{}, resp, &out)
	}
}
