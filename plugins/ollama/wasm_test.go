//go:build !race

// The wasm parity tests run the .wasm build (wasmtest) in wazero; under the race
// detector wazero compiles about ten times slower, so they run in the
// non-race pass of `make test`.

package ollama

import (
	"strconv"
	"testing"

	"github.com/mindrouter/mindrouter/plugins/internal/wasmtest"
	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
)

// loadWasm is the .wasm build (wasmtest.LoadPlugin), checked to be this
// adapter.
func loadWasm(t testing.TB) *wasmtest.Module {
	t.Helper()
	w, m := wasmtest.LoadPlugin(t, "ollama", nil)
	if m.Name != "ollama" || m.Kind != sdk.KindAdapter {
		t.Fatalf("manifest %+v", m)
	}
	return w
}

// TestWasmMatchesNative runs every golden input through the wasm build and
// requires results identical to the native plugin's.
func TestWasmMatchesNative(t *testing.T) {
	par := wasmtest.NewParity(t, loadWasm(t), newHarness().p)
	same := par.Check
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
			if r.Flags&abi.ResultStateKeep == 0 {
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
			if r := w.Result(b, abi.OpStreamDecode, in); r.Status != abi.StatusOK {
				b.Fatal(string(r.Error))
			}
		}
	})
	b.Run("request", func(b *testing.B) {
		in := input(0, nil, readFile(b, "request/tools.canon.json"))
		b.ReportAllocs()
		for b.Loop() {
			if r := w.Result(b, abi.OpRequestEncode, in); r.Status != abi.StatusOK {
				b.Fatal(string(r.Error))
			}
		}
	})
}
