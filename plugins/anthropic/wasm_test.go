//go:build !race

// The wasm parity tests build ./wasm and run it in wazero; under the race
// detector wazero compiles about ten times slower, so they run in the
// non-race pass of `make test`.

package anthropic

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/mindrouter/mindrouter/plugins/internal/wasmtest"
	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// wasmPlugin runs the built .wasm through the ABI exports.
type wasmPlugin struct {
	t testing.TB
	m *wasmtest.Module
}

func loadWasm(t testing.TB) *wasmPlugin {
	t.Helper()
	w := &wasmPlugin{t: t, m: wasmtest.Load(t, "anthropic", nil)}
	if v := w.m.ABIVersion(t); v != abi.Version {
		t.Fatalf("abi version %v", v)
	}
	res := w.parse(w.m.Init(t))
	var m struct {
		Name  string `json:"name"`
		Kind  string `json:"kind"`
		State int    `json:"state_version"`
	}
	if err := json.Unmarshal(res.Payload, &m); err != nil || m.Name != "anthropic" || m.Kind != "translator" || m.State != 1 {
		t.Fatalf("manifest %s: %v", res.Payload, err)
	}
	return w
}

// raw runs op on in; the result is a copy.
func (w *wasmPlugin) raw(op abi.Op, in []byte) abi.Result {
	return w.parse(w.m.Call(w.t, op, in))
}

func (w *wasmPlugin) parse(area []byte) abi.Result {
	r, err := abi.ParseResult(bytes.Clone(area))
	if err != nil {
		w.t.Fatal(err)
	}
	return r
}

// TestWasm_MatchesNative runs the golden inputs through the .wasm and the
// native plugin and requires identical results.
func TestWasm_MatchesNative(t *testing.T) {
	w := loadWasm(t)
	native := newPlugin()
	check := func(name string, op abi.Op, flags uint32, state, payload []byte, meta ...string) result {
		t.Helper()
		want := call(t, native, op, flags, state, payload, meta...)
		var m []byte
		for i := 0; i+1 < len(meta); i += 2 {
			m = abi.AppendMeta(m, meta[i], meta[i+1])
		}
		in := make([]byte, abi.HeaderSize)
		abi.PutHeader(in, abi.Header{Flags: flags, StateLen: uint32(len(state)), MetaLen: uint32(len(m)), PayloadLen: uint32(len(payload))})
		in = append(append(append(in, state...), m...), payload...)
		got := w.raw(op, in)
		if got.Status != want.Status || !bytes.Equal(got.Payload, want.Payload) || string(got.Error) != want.Error ||
			got.Flags != want.Flags || !bytes.Equal(got.State, want.State) {
			t.Errorf("%s: wasm %s %s %q, native %s %s %q", name, got.Status, got.Payload, got.Error, want.Status, want.Payload, want.Error)
		}
		return want
	}
	for _, name := range testFiles(t, "requests", ".req.json") {
		body, _ := os.ReadFile(filepath.Join("testdata", "requests", name+".req.json"))
		check(name, abi.OpRequestDecode, 0, nil, body, "route", RouteMessages)
	}
	check("bad request", abi.OpRequestDecode, 0, nil, []byte(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`), "route", RouteMessages)
	for _, name := range testFiles(t, "responses", ".canon.json") {
		body, _ := os.ReadFile(filepath.Join("testdata", "responses", name+".canon.json"))
		check(name, abi.OpResponseEncode, 0, nil, body, gwMeta...)
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
	for _, e := range []canon.Error{{Status: 404, Type: canon.ErrNotFound, Message: "no such model"}, {Status: 502, Type: canon.ErrBackend}} {
		check("error", abi.OpErrorEncode, 0, nil, e.AppendJSON(nil), "route", RouteMessages)
		check("stream error", abi.OpErrorEncode, 0, nil, e.AppendJSON(nil), "route", RouteMessages, "stream", "1")
	}
}

// BenchmarkWasm measures the ops inside wazero, where Go code runs several
// times slower than natively: the mid-stream per-chunk op and the request op.
func BenchmarkWasm(b *testing.B) {
	w := loadWasm(b)
	var sw sdk.StateWriter
	state := (&streamState{started: true, kind: blockText, blocks: 1}).encode(&sw)
	toolState := (&streamState{started: true, kind: blockTool, blocks: 1, seen: 1, tools: true}).encode(&sw)
	body, _ := os.ReadFile(filepath.Join("testdata", "requests", "tool_history.req.json"))
	for _, tc := range []struct {
		name string
		op   abi.Op
		in   []byte
	}{
		{"stream_content", abi.OpStreamEncode, benchInput(b, 0, state, chunkList([]canon.ChatChunk{{Choices: []canon.ChunkChoice{{Delta: canon.Delta{Content: " world"}}}}}), streamMeta...)},
		{"stream_tool_args", abi.OpStreamEncode, benchInput(b, 0, toolState, chunkList([]canon.ChatChunk{{Choices: []canon.ChunkChoice{{Delta: canon.Delta{ToolCalls: []canon.ToolCallDelta{{Arguments: `"Paris"}`}}}}}}}), streamMeta...)},
		{"request_tools", abi.OpRequestDecode, benchInput(b, 0, nil, body, "route", RouteMessages)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if r := w.raw(tc.op, tc.in); r.Status != abi.StatusOK {
					b.Fatal(r.Status, string(r.Error))
				}
			}
		})
	}
}
