//go:build !race

// The wasm parity tests run the .wasm build (wasmtest) in wazero; under the race
// detector wazero compiles about ten times slower, so they run in the
// non-race pass of `make test`.

package openai

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/mindrouter/mindrouter/plugins/internal/wasmtest"
	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// loadWasm is the .wasm build (wasmtest.LoadPlugin), checked to be this
// translator.
func loadWasm(t testing.TB) *wasmtest.Module {
	t.Helper()
	w, m := wasmtest.LoadPlugin(t, "openai", nil)
	if m.Name != "openai" || m.Kind != sdk.KindTranslator || m.StateVersion != 1 {
		t.Fatalf("manifest %+v", m)
	}
	return w
}

// TestWasm_MatchesNative runs the golden inputs through the .wasm and the
// native plugin and requires identical results.
func TestWasm_MatchesNative(t *testing.T) {
	par := wasmtest.NewParity(t, loadWasm(t), newPlugin())
	check := func(name string, op abi.Op, flags uint32, state, payload []byte, meta ...string) abi.Result {
		t.Helper()
		return par.Check(name, op, wasmtest.Input(flags, state, payload, meta...))
	}
	for _, name := range testFiles(t, "requests", ".req.json") {
		body, _ := os.ReadFile(filepath.Join("testdata", "requests", name+".req.json"))
		check(name, abi.OpRequestDecode, 0, nil, body, "route", RouteChat)
	}
	check("bad request", abi.OpRequestDecode, 0, nil, []byte(`{"model":"m","messages":[],"n":2}`), "route", RouteChat)
	for _, name := range testFiles(t, "responses", ".canon.json") {
		body, _ := os.ReadFile(filepath.Join("testdata", "responses", name+".canon.json"))
		check(name, abi.OpResponseEncode, 0, nil, body, append([]string{"route", RouteChat}, gwMeta...)...)
	}
	models, _ := os.ReadFile(filepath.Join("testdata", "models.canon.json"))
	check("models", abi.OpModelsEncode, 0, nil, models, "route", RouteModels)
	for _, name := range testFiles(t, "streams", ".json") {
		sc := loadStream(t, name)
		var state []byte
		for i := range sc.chunks {
			var flags uint32
			if i == 0 {
				flags |= abi.FlagFirst
			}
			r := check(name, abi.OpStreamEncode, flags, state, chunkList(sc.chunks[i:i+1]), sc.meta...)
			if r.Flags&abi.ResultStateKeep == 0 {
				state = r.State
			}
		}
		check(name+" end", abi.OpStreamEncode, abi.FlagEnd, state, nil, sc.meta...)
	}
	check("corrupt state", abi.OpStreamEncode, 0, []byte{9, 9}, nil, streamMeta...)
}

// BenchmarkWasm measures the ops inside wazero, where Go code runs several
// times slower than natively: the mid-stream per-chunk op and the request op.
func BenchmarkWasm(b *testing.B) {
	w := loadWasm(b)
	var sw sdk.StateWriter
	state := (&streamState{roles: 1, tools: 1, named: 1}).encode(&sw)
	body, _ := os.ReadFile(filepath.Join("testdata", "requests", "tools.req.json"))
	for _, tc := range []struct {
		name string
		op   abi.Op
		in   []byte
	}{
		{"stream_content", abi.OpStreamEncode, benchInput(b, 0, state, chunkList([]canon.ChatChunk{{Choices: []canon.ChunkChoice{{Delta: canon.Delta{Content: " world"}}}}}), streamMeta...)},
		{"stream_tool_args", abi.OpStreamEncode, benchInput(b, 0, state, chunkList([]canon.ChatChunk{{Choices: []canon.ChunkChoice{{Delta: canon.Delta{ToolCalls: []canon.ToolCallDelta{{Arguments: `"Paris"}`}}}}}}}), streamMeta...)},
		{"request_tools", abi.OpRequestDecode, benchInput(b, 0, nil, body, "route", RouteChat)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if r := w.Result(b, tc.op, tc.in); r.Status != abi.StatusOK {
					b.Fatal(r.Status, string(r.Error))
				}
			}
		})
	}
}
