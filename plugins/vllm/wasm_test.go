//go:build !race

// The wasm parity tests build ./wasm and run it in wazero; under the race
// detector wazero compiles about ten times slower, so they run in the
// non-race pass of `make test`.

package vllm

import (
	"bytes"
	"strings"
	"testing"

	"github.com/mindrouter/mindrouter/plugins/internal/wasmtest"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// wasmPlugin is the .wasm build driven through the ABI exports, as the
// gateway drives it.
type wasmPlugin struct {
	m *wasmtest.Module
}

func loadWasm(t testing.TB) *wasmPlugin {
	t.Helper()
	w := &wasmPlugin{m: wasmtest.Load(t, "vllm", func(level int32, b []byte) {
		t.Logf("plugin log %d: %s", level, b)
	})}
	r := w.read(t, w.m.Init(t))
	if r.Status != abi.StatusOK || !bytes.Contains(r.Payload, []byte(`"name":"vllm"`)) {
		t.Fatalf("init: %s %s %s", r.Status, r.Error, r.Payload)
	}
	return w
}

func (w *wasmPlugin) read(t testing.TB, b []byte) result {
	r, err := abi.ParseResult(b)
	if err != nil {
		t.Fatal(err)
	}
	return result{Status: r.Status, Flags: r.Flags, State: bytes.Clone(r.State), Meta: bytes.Clone(r.Meta),
		Payload: bytes.Clone(r.Payload), Error: string(r.Error)}
}

func (w *wasmPlugin) do(t testing.TB, op abi.Op, in []byte) result {
	return w.read(t, w.m.Call(t, op, in))
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
	w := loadWasm(t)
	p := newPlugin()
	same := func(name string, op abi.Op, in []byte) result {
		t.Helper()
		got := w.do(t, op, in)
		r, _ := abi.ParseResult(p.Call(op, in))
		if got.Status != r.Status || got.Flags != r.Flags || !bytes.Equal(got.Payload, r.Payload) ||
			!bytes.Equal(got.State, r.State) || !bytes.Equal(got.Meta, r.Meta) || got.Error != string(r.Error) {
			t.Errorf("%s: wasm and native differ\nwasm:   %s %q %s\nnative: %s %q %s", name, got.Status, got.Error, got.Payload, r.Status, r.Error, r.Payload)
		}
		return got
	}
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
			if r := w.do(b, abi.OpStreamDecode, in); r.Status != abi.StatusOK {
				b.Fatal(r.Error)
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
			if r := w.do(b, abi.OpCountRequestEncode, in); r.Status != abi.StatusOK {
				b.Fatal(r.Error)
			}
		}
	})
	b.Run("request+native_tokenize_body", func(b *testing.B) {
		in := callIn(0, nil, nil, long.AppendJSON(nil))
		var body []byte
		b.ReportAllocs()
		for b.Loop() {
			r := w.do(b, abi.OpRequestEncode, in)
			var err error
			if body, err = appendTokenizeBody(body[:0], r.Payload); r.Status != abi.StatusOK || err != nil {
				b.Fatal(r.Error, err)
			}
		}
	})
	b.Run("request", func(b *testing.B) {
		req := benchRequest()
		in := callIn(0, nil, nil, req.AppendJSON(nil))
		b.ReportAllocs()
		for b.Loop() {
			if r := w.do(b, abi.OpRequestEncode, in); r.Status != abi.StatusOK {
				b.Fatal(r.Error)
			}
		}
	})
}
