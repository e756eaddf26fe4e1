//go:build !race

// The wasm parity tests build ./wasm and run it in wazero; under the race
// detector wazero compiles about ten times slower, so they run in the
// non-race pass of `make test`.

package ollama

import (
	"bytes"
	"strconv"
	"testing"

	"github.com/mindrouter/mindrouter/plugins/internal/wasmtest"
	"github.com/mindrouter/mindrouter/sdk/abi"
)

// wasmPlugin drives the .wasm build through its ABI exports, as the gateway
// does.
type wasmPlugin struct {
	m *wasmtest.Module
}

func loadWasm(t testing.TB) *wasmPlugin {
	t.Helper()
	w := &wasmPlugin{m: wasmtest.Load(t, "ollama", nil)}
	if r := parse(t, w.m.Init(t)); r.Status != abi.StatusOK || !bytes.Contains(r.Payload, []byte(`"name":"ollama"`)) {
		t.Fatalf("init: %s %s %s", r.Status, r.Error, r.Payload)
	}
	return w
}

func (w *wasmPlugin) do(t testing.TB, op abi.Op, in []byte) result {
	return parse(t, w.m.Call(t, op, in))
}

// TestWasmMatchesNative runs every golden input through the wasm build and
// requires results identical to the native plugin's.
func TestWasmMatchesNative(t *testing.T) {
	w := loadWasm(t)
	h := newHarness()
	same := func(name string, op abi.Op, in []byte) result {
		t.Helper()
		got := w.do(t, op, in)
		want := parse(t, h.p.Call(op, in))
		if got.Status != want.Status || got.Flags != want.Flags || got.Error != want.Error ||
			!bytes.Equal(got.Payload, want.Payload) || !bytes.Equal(got.State, want.State) || !bytes.Equal(got.Meta, want.Meta) {
			t.Errorf("%s: wasm and native differ\nwasm:   %s %q %s\nnative: %s %q %s",
				name, got.Status, got.Error, got.Payload, want.Status, want.Error, want.Payload)
		}
		return got
	}
	for _, name := range testFiles(t, "request", ".canon.json") {
		same("request "+name, abi.OpRequestEncode, input(0, nil, readFile(t, "request/"+name+".canon.json")))
	}
	for _, name := range testFiles(t, "response", ".ollama.json") {
		same("response "+name, abi.OpResponseDecode, input(0, nil, readFile(t, "response/"+name+".ollama.json")))
	}
	for _, name := range testFiles(t, "stream", ".ndjson") {
		var state []byte
		for i, ev := range lines(string(readFile(t, "stream/"+name+".ndjson"))) {
			r := same(name+" line "+strconv.Itoa(i), abi.OpStreamDecode, input(0, state, items([][]byte{ev})))
			if !r.keepState() {
				state = r.State
			}
		}
	}
	same("stream error", abi.OpStreamDecode, input(0, nil, items([][]byte{[]byte(`{"error":"boom"}`)})))
	for _, tc := range []struct{ probe, file string }{{"models", "tags"}, {"loaded", "ps"}, {"health", "version"}} {
		same("probe "+tc.probe, abi.OpProbeDecode, input(0, nil, readFile(t, "probe/"+tc.file+".json"), "probe", tc.probe, "status", "200"))
	}
	same("error", abi.OpErrorDecode, input(0, nil, []byte(`{"error":"model \"x\" not found, try pulling it first"}`), "status", "404"))
}

// BenchmarkWasm measures the per-line stream op and the request op inside
// wazero (run with -wasm).
func BenchmarkWasm(b *testing.B) {
	w := loadWasm(b)
	b.Run("stream_line", func(b *testing.B) {
		in := streamInput(benchLine)
		b.ReportAllocs()
		for b.Loop() {
			if r := w.do(b, abi.OpStreamDecode, in); r.Status != abi.StatusOK {
				b.Fatal(r.Error)
			}
		}
	})
	b.Run("request", func(b *testing.B) {
		in := input(0, nil, readFile(b, "request/tools.canon.json"))
		b.ReportAllocs()
		for b.Loop() {
			if r := w.do(b, abi.OpRequestEncode, in); r.Status != abi.StatusOK {
				b.Fatal(r.Error)
			}
		}
	})
}
