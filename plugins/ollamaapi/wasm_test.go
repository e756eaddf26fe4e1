//go:build !race

// The wasm parity tests run the .wasm build (wasmtest) in wazero; under the race
// detector wazero compiles about ten times slower, so they run in the
// non-race pass of `make test`.

package ollamaapi

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/mindrouter/mindrouter/plugins/internal/wasmtest"
	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
)

// loadWasm is the .wasm build (wasmtest.LoadPlugin), checked to be this
// translator.
func loadWasm(t testing.TB) *wasmtest.Module {
	t.Helper()
	w, m := wasmtest.LoadPlugin(t, "ollamaapi", nil)
	if m.Name != "ollama-api" || m.Kind != sdk.KindTranslator || m.StateVersion != stateVersion || len(m.Routes) != 9 {
		t.Fatalf("manifest %+v", m)
	}
	return w
}

// TestWasm_MatchesNative runs the golden inputs of every op through the
// .wasm and the native plugin and requires identical results.
func TestWasm_MatchesNative(t *testing.T) {
	par := wasmtest.NewParity(t, loadWasm(t), newPlugin())
	check := func(name string, op abi.Op, flags uint32, state, payload []byte, meta ...string) abi.Result {
		t.Helper()
		want := par.Check(name, op, input(flags, state, payload, meta...))
		if bad := name == "bad request" || name == "corrupt state"; (want.Status == abi.StatusOK) == bad {
			t.Errorf("%s: native %s %q", name, want.Status, want.Error)
		}
		return want
	}
	read := func(parts ...string) []byte {
		b, err := os.ReadFile(filepath.Join(append([]string{"testdata"}, parts...)...))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, name := range testFiles(t, "requests", ".req.json") {
		check(name, abi.OpRequestDecode, 0, nil, read("requests", name+".req.json"), abi.MetaRoute, routeOf(name))
	}
	check("bad request", abi.OpRequestDecode, 0, nil, []byte(`{"model":"m","prompt":"","raw":true}`), abi.MetaRoute, RouteGenerate)
	for _, route := range []string{RouteChat, RouteGenerate} {
		for _, name := range testFiles(t, "responses", ".canon.json") {
			check(name, abi.OpResponseEncode, 0, nil, read("responses", name+".canon.json"), routeMeta(route)...)
		}
		for _, name := range testFiles(t, "streams", ".json") {
			chunks := loadChunks(t, name)
			var state []byte
			for i := range chunks {
				var flags uint32
				if i == 0 {
					flags |= abi.FlagFirst
				}
				r := check(name, abi.OpStreamEncode, flags, state, chunkList(chunks[i:i+1]), routeMeta(route)...)
				if r.Flags&abi.ResultStateKeep == 0 {
					state = r.State
				}
			}
			check(name+" end", abi.OpStreamEncode, abi.FlagEnd, state, nil, routeMeta(route)...)
		}
	}
	check("corrupt state", abi.OpStreamEncode, 0, []byte{9, 9}, nil, routeMeta(RouteChat)...)
	check("error", abi.OpErrorEncode, 0, nil, []byte(`{"status":404,"type":"not_found","message":"model 'x' not found"}`), abi.MetaStream, "1")
	models := read("models.canon.json")
	for _, route := range []string{RouteTags, RoutePS, RouteVersion, RouteRoot} {
		check(route, abi.OpModelsEncode, 0, nil, models, abi.MetaRoute, route)
	}
	check("show", abi.OpModelsEncode, 0, nil, read("models_one.canon.json"), abi.MetaRoute, RouteShow, abi.MetaModel, "qwen3-8b")
	check("embed", abi.OpEmbedRequestDecode, 0, nil, []byte(`{"model":"m","input":["a","b"],"dimensions":8}`), abi.MetaRoute, RouteEmbed)
	check("embed response", abi.OpEmbedResponseEncode, 0, nil, []byte(`{"model":"m","vectors":[[0.5,-1e-9]],"usage":{"prompt_tokens":2}}`),
		abi.MetaRoute, RouteEmbeddings)
}
