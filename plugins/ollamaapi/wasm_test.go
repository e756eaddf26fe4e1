//go:build !race

// The wasm parity tests build ./wasm and run it in wazero; under the race
// detector wazero compiles about ten times slower, so they run in the
// non-race pass of `make test`.

package ollamaapi

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/mindrouter/mindrouter/plugins/internal/wasmtest"
	"github.com/mindrouter/mindrouter/sdk/abi"
)

// wasmPlugin runs the built .wasm through the ABI exports.
type wasmPlugin struct {
	t testing.TB
	m *wasmtest.Module
}

func loadWasm(t testing.TB) *wasmPlugin {
	t.Helper()
	w := &wasmPlugin{t: t, m: wasmtest.Load(t, "ollamaapi", nil)}
	if v := w.m.ABIVersion(t); v != abi.Version {
		t.Fatalf("abi version %v", v)
	}
	res := w.parse(w.m.Init(t))
	var m struct {
		Name   string `json:"name"`
		Kind   string `json:"kind"`
		State  int    `json:"state_version"`
		Routes []struct {
			Name string `json:"name"`
		} `json:"routes"`
	}
	if err := json.Unmarshal(res.Payload, &m); err != nil || m.Name != "ollama-api" || m.Kind != "translator" ||
		m.State != stateVersion || len(m.Routes) != 8 {
		t.Fatalf("manifest %s: %v", res.Payload, err)
	}
	return w
}

func (w *wasmPlugin) parse(area []byte) abi.Result {
	r, err := abi.ParseResult(bytes.Clone(area))
	if err != nil {
		w.t.Fatal(err)
	}
	return r
}

// TestWasm_MatchesNative runs the golden inputs of every op through the
// .wasm and the native plugin and requires identical results.
func TestWasm_MatchesNative(t *testing.T) {
	w := loadWasm(t)
	native := newPlugin()
	check := func(name string, op abi.Op, flags uint32, state, payload []byte, meta ...string) result {
		t.Helper()
		want := call(t, native, op, flags, state, payload, meta...)
		got := copyResult(t, w.parse(w.m.Call(t, op, input(flags, state, payload, meta...))))
		if got.Status != want.Status || !bytes.Equal(got.Payload, want.Payload) || got.Error != want.Error ||
			got.Flags != want.Flags || !bytes.Equal(got.State, want.State) {
			t.Errorf("%s: wasm %s %s %q, native %s %s %q", name, got.Status, got.Payload, got.Error, want.Status, want.Payload, want.Error)
		}
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
	for _, route := range []string{RouteTags, RoutePS, RouteVersion} {
		check(route, abi.OpModelsEncode, 0, nil, models, abi.MetaRoute, route)
	}
	check("show", abi.OpModelsEncode, 0, nil, read("models_one.canon.json"), abi.MetaRoute, RouteShow, abi.MetaModel, "qwen3-8b")
	check("embed", abi.OpEmbedRequestDecode, 0, nil, []byte(`{"model":"m","input":["a","b"],"dimensions":8}`), abi.MetaRoute, RouteEmbed)
	check("embed response", abi.OpEmbedResponseEncode, 0, nil, []byte(`{"model":"m","vectors":[[0.5,-1e-9]],"usage":{"prompt_tokens":2}}`),
		abi.MetaRoute, RouteEmbeddings)
}
