//go:build !race

// The wasm parity tests build ./wasm and run it in wazero; under the race
// detector wazero compiles about ten times slower, so they run in the
// non-race pass of `make test`.

package responses

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/mindrouter/mindrouter/plugins/internal/wasmtest"
	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
	"github.com/mindrouter/mindrouter/sdk/sdktest"
)

// wasmPlugin runs the built .wasm through the ABI exports.
type wasmPlugin struct {
	t testing.TB
	m *wasmtest.Module
}

func loadWasm(t testing.TB) *wasmPlugin {
	t.Helper()
	w := &wasmPlugin{t: t, m: wasmtest.Load(t, "responses", nil)}
	if v := w.m.ABIVersion(t); v != abi.Version {
		t.Fatalf("abi version %v", v)
	}
	res := w.parse(w.m.Init(t))
	var m sdk.Manifest
	if err := json.Unmarshal(res.Payload, &m); err != nil || m.Name != Name || m.Kind != sdk.KindTranslator ||
		m.StateVersion != stateVersion || len(m.Routes) != 2 || m.Routes[0].Kind != sdk.EndpointResponses {
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

// call runs op in the .wasm with the input laid out as the host does.
func (w *wasmPlugin) call(op abi.Op, flags uint32, state, payload []byte, meta ...string) abi.Result {
	var m []byte
	for i := 0; i+1 < len(meta); i += 2 {
		m = abi.AppendMeta(m, meta[i], meta[i+1])
	}
	in := make([]byte, abi.HeaderSize)
	abi.PutHeader(in, abi.Header{Flags: flags, StateLen: uint32(len(state)), MetaLen: uint32(len(m)), PayloadLen: uint32(len(payload))})
	in = append(append(append(in, state...), m...), payload...)
	return w.parse(w.m.Call(w.t, op, in))
}

func chunkList(chunks []canon.ChatChunk) []byte {
	var list []byte
	for _, it := range sdktest.Chunks(chunks...) {
		list = abi.AppendItem(list, it)
	}
	return list
}

// TestWasm_MatchesNative runs the decode, response, stream, error and
// count inputs of the native tests through the .wasm and the native
// plugin and requires identical results.
func TestWasm_MatchesNative(t *testing.T) {
	w := loadWasm(t)
	h := newHarness(t)
	check := func(name string, op abi.Op, flags uint32, state, payload []byte, meta ...string) sdktest.Result {
		t.Helper()
		want := h.Call(op, sdktest.NoDefaults(), sdktest.Flags(flags), sdktest.State(state), sdktest.Payload(payload), sdktest.Meta(meta...))
		got := w.call(op, flags, state, payload, meta...)
		wantState := want.State
		if want.Flags&abi.ResultStateKeep != 0 {
			wantState = nil
		}
		if got.Status != want.Status || !bytes.Equal(got.Payload, want.Payload) || string(got.Error) != want.Error ||
			got.Flags != want.Flags || !bytes.Equal(got.State, wantState) || !bytes.Equal(got.Meta, want.RawMeta) {
			t.Errorf("%s: wasm %s %q %q, native %s %q %q", name, got.Status, got.Payload, got.Error, want.Status, want.Payload, want.Error)
		}
		return want
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
				if r := w.call(abi.OpStreamEncode, 0, state, in, gwMeta...); r.Status != abi.StatusOK {
					b.Fatal(r.Status, string(r.Error))
				}
			}
		})
	}
}
