package ollama

import (
	"testing"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

const benchLine = `{"model":"llama3.2","created_at":"2025-10-26T17:15:24.109172Z","message":{"role":"assistant","content":" sky"},"done":false}`

// streamInput is a mid-stream OpStreamDecode call carrying one line.
func streamInput(line string) []byte {
	state := (&streamState{roleSent: true}).append(nil)
	payload := abi.AppendItem(nil, []byte(line))
	in := make([]byte, abi.HeaderSize, abi.HeaderSize+len(state)+len(payload))
	abi.PutHeader(in, abi.Header{StateLen: uint32(len(state)), PayloadLen: uint32(len(payload))})
	in = append(in, state...)
	return append(in, payload...)
}

// BenchmarkDecodeStream is the per-chunk cost: one NDJSON line per call.
func BenchmarkDecodeStream(b *testing.B) {
	b.Run("abi", func(b *testing.B) {
		p := sdk.NewAdapter(Manifest(), New())
		in := streamInput(benchLine)
		b.ReportAllocs()
		b.SetBytes(int64(len(benchLine)))
		for b.Loop() {
			if r, _ := abi.ParseResult(p.Call(abi.OpStreamDecode, in)); r.Status != abi.StatusOK {
				b.Fatal(string(r.Error))
			}
		}
	})
	b.Run("typed", func(b *testing.B) {
		a := New()
		st := sdk.State{In: (&streamState{roleSent: true}).append(nil)}
		events := [][]byte{[]byte(benchLine)}
		chunks := make([]canon.ChatChunk, 0, 4)
		b.ReportAllocs()
		b.SetBytes(int64(len(benchLine)))
		for b.Loop() {
			chunks = chunks[:0]
			if err := a.DecodeStream(&sdk.Call{}, &st, events, &chunks); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkEncodeRequest encodes the tool round-trip request (canonical
// JSON in, Ollama JSON out) through the ABI, and typed.
func BenchmarkEncodeRequest(b *testing.B) {
	req := readFile(b, "request/tools.canon.json")
	b.Run("abi", func(b *testing.B) {
		p := sdk.NewAdapter(Manifest(), New())
		in := make([]byte, abi.HeaderSize, abi.HeaderSize+len(req))
		abi.PutHeader(in, abi.Header{PayloadLen: uint32(len(req))})
		in = append(in, req...)
		b.ReportAllocs()
		b.SetBytes(int64(len(req)))
		for b.Loop() {
			if r, _ := abi.ParseResult(p.Call(abi.OpRequestEncode, in)); r.Status != abi.StatusOK {
				b.Fatal(string(r.Error))
			}
		}
	})
	b.Run("typed", func(b *testing.B) {
		var cr canon.ChatRequest
		if err := cr.DecodeJSON(req); err != nil {
			b.Fatal(err)
		}
		a := New()
		var out sdk.Output
		c := &sdk.Call{}
		// The request logs a warning (invalid arguments); a bare Call has no
		// logger, so drop that call from the typed benchmark.
		cr.Messages[1].ToolCalls = cr.Messages[1].ToolCalls[:2]
		b.ReportAllocs()
		for b.Loop() {
			out.Body = out.Body[:0]
			if err := a.EncodeRequest(c, &cr, &out); err != nil {
				b.Fatal(err)
			}
		}
	})
}
