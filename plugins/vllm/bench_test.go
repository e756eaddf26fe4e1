package vllm

import (
	"testing"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

var benchChunk = []byte(`{"id":"chatcmpl-8d1f0c2b6a4e4f7e9b3a2c1d0e9f8a7b","object":"chat.completion.chunk","created":1733000000,"model":"Qwen/Qwen3-8B","choices":[{"index":0,"delta":{"content":" today"},"logprobs":null,"finish_reason":null}]}`)

var benchToolChunk = []byte(`{"id":"chatcmpl-1a2b3c4d5e6f47a8b9c0d1e2f3a4b5c6","object":"chat.completion.chunk","created":1733000000,"model":"Qwen/Qwen3-8B","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"Par"}}]},"logprobs":null,"finish_reason":null}]}`)

// BenchmarkDecodeStreamChunk: the per-event hot path, typed (what the plugin
// code costs) and through the ABI (plus canonical JSON out), natively.
func BenchmarkDecodeStreamChunk(b *testing.B) {
	b.Run("typed", func(b *testing.B) {
		a := New()
		events := [][]byte{benchChunk}
		var chunks []canon.ChatChunk
		st := &sdk.State{}
		c := &sdk.Call{}
		b.ReportAllocs()
		b.SetBytes(int64(len(benchChunk)))
		for b.Loop() {
			chunks = chunks[:0]
			if err := a.DecodeStream(c, st, events, &chunks); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, bc := range []struct {
		name  string
		ev    []byte
		state []byte
	}{
		{"abi", benchChunk, nil},
		{"abi_tool_args", benchToolChunk, []byte{1, 1, 0, 0, 1}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			p := newPlugin()
			payload := eventList([][]byte{bc.ev})
			in := make([]byte, abi.HeaderSize, abi.HeaderSize+len(bc.state)+len(payload))
			abi.PutHeader(in, abi.Header{StateLen: uint32(len(bc.state)), PayloadLen: uint32(len(payload))})
			in = append(append(in, bc.state...), payload...)
			b.ReportAllocs()
			b.SetBytes(int64(len(bc.ev)))
			for b.Loop() {
				if r, _ := abi.ParseResult(p.Call(abi.OpStreamDecode, in)); r.Status != abi.StatusOK {
					b.Fatal(string(r.Error))
				}
			}
		})
	}
}

func benchRequest() canon.ChatRequest {
	for _, tc := range requestCases {
		if tc.name == "tool_turns" {
			r := tc.req
			r.Stream = true
			r.Temperature = ptr(0.7)
			r.MaxTokens = 512
			r.Think = canon.ThinkOn
			for _, t := range requestCases {
				if t.name == "tools" {
					r.Tools = t.req.Tools
				}
			}
			return r
		}
	}
	panic("no case")
}

// BenchmarkEncodeRequest: a streamed five-message tool conversation with
// two tools.
func BenchmarkEncodeRequest(b *testing.B) {
	req := benchRequest()
	b.Run("typed", func(b *testing.B) {
		a := New()
		var out sdk.Output
		c := &sdk.Call{}
		b.ReportAllocs()
		for b.Loop() {
			out = sdk.Output{Body: out.Body[:0]}
			if err := a.EncodeRequest(c, &req, &out); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("abi", func(b *testing.B) {
		p := newPlugin()
		payload := req.AppendJSON(nil)
		in := make([]byte, abi.HeaderSize, abi.HeaderSize+len(payload))
		abi.PutHeader(in, abi.Header{PayloadLen: uint32(len(payload))})
		in = append(in, payload...)
		b.ReportAllocs()
		b.SetBytes(int64(len(payload)))
		for b.Loop() {
			if r, _ := abi.ParseResult(p.Call(abi.OpRequestEncode, in)); r.Status != abi.StatusOK {
				b.Fatal(string(r.Error))
			}
		}
	})
}

func BenchmarkDecodeResponse(b *testing.B) {
	body := []byte(`{"id":"chatcmpl-tc","object":"chat.completion","created":1733000123,"model":"Qwen/Qwen3-8B","choices":[{"index":0,"message":{"role":"assistant","reasoning_content":"Need the weather tool.","content":null,"tool_calls":[{"id":"chatcmpl-tool-aaa","type":"function","function":{"name":"get_weather","arguments":"{\"city\": \"Paris\"}"}}]},"logprobs":null,"finish_reason":"tool_calls","stop_reason":null}],"usage":{"prompt_tokens":300,"total_tokens":340,"completion_tokens":40,"prompt_tokens_details":{"cached_tokens":256}}}`)
	a := New()
	c := &sdk.Call{}
	b.ReportAllocs()
	for b.Loop() {
		var r canon.ChatResponse
		if err := a.DecodeResponse(c, body, &r); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeProbeMetrics(b *testing.B) {
	body := readTestdata(b, "probes", "metrics_v1.txt")
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		var d canon.Discovery
		decodeMetrics(body, &d)
	}
}
