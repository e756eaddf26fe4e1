//go:build !race

// The wasm parity tests run the .wasm build (wasmtest) in wazero; under the race
// detector wazero compiles about ten times slower, so they run in the
// non-race pass of `make test`.

package vllm

import (
	"strings"
	"testing"

	"github.com/mindrouter/mindrouter/plugins/internal/wasmtest"
	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// loadWasm is the .wasm build (wasmtest.LoadPlugin), checked to be this
// adapter; its log lines go to the test log.
func loadWasm(t testing.TB) *wasmtest.Module {
	t.Helper()
	w, m := wasmtest.LoadPlugin(t, "vllm", func(level int32, b []byte) {
		t.Logf("plugin log %d: %s", level, b)
	})
	if m.Name != "vllm" || m.Kind != sdk.KindAdapter {
		t.Fatalf("manifest %+v", m)
	}
	return w
}

func callIn(flags uint32, state []byte, meta map[string]string, payload []byte) []byte {
	var m []byte
	for k, v := range meta {
		m = abi.AppendMeta(m, k, v)
	}
	in := make([]byte, abi.HeaderSize)
	abi.PutHeader(in, abi.Header{Flags: flags, StateLen: uint32(len(state)), MetaLen: uint32(len(m)), PayloadLen: uint32(len(payload))})
	return append(append(append(in, state...), m...), payload...)
}

// TestWasmMatchesNative runs the goldens through the wasm build and requires
// byte-identical results to the native plugin.
func TestWasmMatchesNative(t *testing.T) {
	par := wasmtest.NewParity(t, loadWasm(t), newPlugin())
	same := par.Check
	for _, tc := range requestCases {
		same("request "+tc.name, abi.OpRequestEncode, callIn(0, nil, nil, tc.req.AppendJSON(nil)))
		same("count request "+tc.name, abi.OpCountRequestEncode, callIn(0, nil, nil, tc.req.AppendJSON(nil)))
	}
	same("count response", abi.OpCountResponseDecode, callIn(0, nil, nil, []byte(`{"count":3,"max_model_len":32768,"tokens":[1,2,3]}`)))
	same("count response error", abi.OpCountResponseDecode, callIn(0, nil, nil, []byte(`{"object":"error","message":"x"}`)))
	for _, tc := range responseCases {
		same("response "+tc.file, abi.OpResponseDecode, callIn(0, nil, nil, readTestdata(t, "responses", tc.file)))
	}
	for _, f := range append(streamFiles, "error_new.sse", "error_old.sse") {
		var state []byte
		for i, ev := range readSSE(t, f) {
			r := same(f+" event "+itoa(i), abi.OpStreamDecode, callIn(0, state, nil, eventList([][]byte{ev})))
			if r.Flags&abi.ResultStateKeep == 0 {
				state = r.State
			}
		}
	}
	same("metrics", abi.OpProbeDecode, callIn(0, nil, map[string]string{"probe": "metrics", "status": "200"}, readTestdata(t, "probes", "metrics_v1.txt")))
	same("models", abi.OpProbeDecode, callIn(0, nil, map[string]string{"probe": "models", "status": "200"}, readTestdata(t, "probes", "models.json")))
	same("error", abi.OpErrorDecode, callIn(0, nil, map[string]string{"status": "404"}, readTestdata(t, "errors", "not_found.json")))
}

// BenchmarkWasm measures the per-event stream op and the request op inside
// wazero (run with -wasm).
func BenchmarkWasm(b *testing.B) {
	w := loadWasm(b)
	b.Run("stream_chunk", func(b *testing.B) {
		in := callIn(0, nil, nil, eventList([][]byte{benchChunk}))
		b.ReportAllocs()
		for b.Loop() {
			if r := w.Result(b, abi.OpStreamDecode, in); r.Status != abi.StatusOK {
				b.Fatal(string(r.Error))
			}
		}
	})
	// The count of a request near the context limit (core/gateway's
	// BenchmarkContextCap: a system message and 700 words): the count op
	// (ABI 2.7) against what the gateway did before it, the chat encode in
	// wasm and the /tokenize body made from it natively.
	long := canon.ChatRequest{Model: "m", MaxTokens: 500, Messages: []canon.Message{
		{Role: canon.RoleSystem, Content: text("Be brief.")}, userMsg(strings.Repeat("word ", 700))}}
	b.Run("count_request", func(b *testing.B) {
		in := callIn(0, nil, nil, long.AppendJSON(nil))
		b.ReportAllocs()
		for b.Loop() {
			if r := w.Result(b, abi.OpCountRequestEncode, in); r.Status != abi.StatusOK {
				b.Fatal(string(r.Error))
			}
		}
	})
	b.Run("request+native_tokenize_body", func(b *testing.B) {
		in := callIn(0, nil, nil, long.AppendJSON(nil))
		var body []byte
		b.ReportAllocs()
		for b.Loop() {
			r := w.Result(b, abi.OpRequestEncode, in)
			var err error
			if body, err = appendTokenizeBody(body[:0], r.Payload); r.Status != abi.StatusOK || err != nil {
				b.Fatal(string(r.Error), err)
			}
		}
	})
	b.Run("request", func(b *testing.B) {
		req := benchRequest()
		in := callIn(0, nil, nil, req.AppendJSON(nil))
		b.ReportAllocs()
		for b.Loop() {
			if r := w.Result(b, abi.OpRequestEncode, in); r.Status != abi.StatusOK {
				b.Fatal(string(r.Error))
			}
		}
	})
}
