//go:build !race

// The wasm parity tests run the .wasm build (wasmtest) in wazero; under the race
// detector wazero compiles about ten times slower, so they run in the
// non-race pass of `make test`.

package responses

import (
	"testing"

	"github.com/mindrouter/mindrouter/plugins/internal/wasmtest"
	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
	"github.com/mindrouter/mindrouter/sdk/sdktest"
)

// loadWasm is the .wasm build (wasmtest.LoadPlugin), checked to be this
// translator.
func loadWasm(t testing.TB) *wasmtest.Module {
	t.Helper()
	w, m := wasmtest.LoadPlugin(t, "responses", nil)
	if m.Name != Name || m.Kind != sdk.KindTranslator || m.StateVersion != stateVersion || len(m.Routes) != 2 ||
		m.Routes[0].Kind != sdk.EndpointResponses {
		t.Fatalf("manifest %+v", m)
	}
	return w
}

func chunkList(chunks []canon.ChatChunk) []byte { return sdktest.ChunkList(chunks) }

// TestWasm_MatchesNative runs the decode, response, stream, error and
// count inputs of the native tests through the .wasm and the native
// plugin and requires identical results.
func TestWasm_MatchesNative(t *testing.T) {
	par := wasmtest.NewParity(t, loadWasm(t), newPlugin())
	check := func(name string, op abi.Op, flags uint32, state, payload []byte, meta ...string) abi.Result {
		t.Helper()
		return par.Check(name, op, wasmtest.Input(flags, state, payload, meta...))
	}
	for _, body := range []string{
		`{"model":"m","instructions":"s","input":[{"role":"user","content":[{"type":"input_text","text":"a"},{"type":"input_image","image_url":"data:image/png;base64,AAAA"}]},{"type":"reasoning","summary":[{"type":"summary_text","text":"r"}]},{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":"o"}],"tools":[{"type":"function","name":"f","parameters":{"type":"object"}}],"tool_choice":"auto","text":{"format":{"type":"json_schema","name":"n","schema":{"type":"object"}}},"reasoning":{"effort":"low"},"max_output_tokens":5,"stream":true,"temperature":0.2}`,
		`{"model":"m","input":"x","tools":[{"type":"web_search"}]}`,
		`{"model":"m","input":"x","previous_response_id":"resp_1"}`,
	} {
		check("decode "+body, abi.OpRequestDecode, 0, nil, []byte(body), routeMeta...)
		check("count "+body, abi.OpRequestDecode, 0, nil, []byte(body), countMeta...)
	}
	tc := canon.TokenCount{Count: 7}
	check("tokens", abi.OpTokensEncode, 0, nil, tc.AppendJSON(nil), countMeta...)
	for _, rc := range responseCases {
		check("response "+rc.name, abi.OpResponseEncode, 0, nil, rc.resp.AppendJSON(nil), gwMeta...)
	}
	for _, sc := range streamCases {
		var state []byte
		for i := range sc.chunks {
			flags := uint32(0)
			if i == 0 {
				flags = abi.FlagFirst
			}
			r := check(sc.name, abi.OpStreamEncode, flags, state, chunkList(sc.chunks[i:i+1]), gwMeta...)
			if r.Flags&abi.ResultStateKeep == 0 {
				state = r.State
			}
		}
		check(sc.name+" end", abi.OpStreamEncode, abi.FlagEnd, state, nil, gwMeta...)
	}
	check("corrupt state", abi.OpStreamEncode, 0, []byte{9, 9}, nil, gwMeta...)
	ce := canon.Error{Status: 502, Type: canon.ErrBackend, Message: "broken", RequestID: testID}
	check("error", abi.OpErrorEncode, 0, nil, ce.AppendJSON(nil), routeMeta...)
	check("stream error", abi.OpErrorEncode, 0, nil, ce.AppendJSON(nil), append(append([]string(nil), routeMeta...), abi.MetaStream, "1")...)
}

// BenchmarkWasm measures the per-chunk stream op inside wazero, where Go
// runs several times slower than natively, with the state of a short
// answer and of a long one (the blob is copied in and out of every call;
// see state.go).
func BenchmarkWasm(b *testing.B) {
	w := loadWasm(b)
	for _, size := range []int{1 << 10, 128 << 10} {
		state := longState(b, size)
		in := chunkList([]canon.ChatChunk{content(" world")})
		b.Run("stream_text/state="+itoaK(size), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(state)))
			for b.Loop() {
				if r := w.Result(b, abi.OpStreamEncode, wasmtest.Input(0, state, in, gwMeta...)); r.Status != abi.StatusOK {
					b.Fatal(r.Status, string(r.Error))
				}
			}
		})
	}
}
