//go:build !race

// The wasm parity test runs the .wasm build (wasmtest) in wazero; under the race
// detector wazero compiles about ten times slower, so it runs in the
// non-race pass of `make test`.

package bundle

import (
	"path/filepath"
	"testing"

	"github.com/mindrouter/mindrouter/plugins/internal/wasmtest"
	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
)

// TestWasm_MatchesNative runs fused and unfused ops through the bundle's
// .wasm and the native bundle and requires identical result areas.
func TestWasm_MatchesNative(t *testing.T) {
	w, m := wasmtest.LoadPlugin(t, "bundle", func(level int32, msg []byte) { t.Logf("plugin log %d: %s", level, msg) })
	if m.Kind != sdk.KindBundle || m.Name != Name || len(m.Components) != 6 || m.Components[VLLM].Name != "vllm" ||
		m.Components[VLLM].Framing != sdk.FramingSSE || m.Components[Ollama].Kind != sdk.KindAdapter {
		t.Fatalf("manifest %+v", m)
	}
	par := wasmtest.NewParity(t, w, New())
	check := par.Check
	reqMeta := metaList(append(append([]string{}, routeMeta...), abi.MetaContextLength, "8192")...)
	for _, f := range []string{"openai/testdata/requests/tools.req.json", "openai/testdata/requests/multimodal.req.json", "vllm/testdata/requests/json_schema.json"} {
		body := read(t, filepath.Join("..", f))
		for _, ai := range []uint16{VLLM, Ollama} {
			check(f+" fused × "+names[ai], abi.OpFusedRequest, input(OpenAI, ai, 0, nil, reqMeta, body))
		}
		check(f+" request_decode", abi.OpRequestDecode, input(OpenAI, 0, 0, nil, metaList(routeMeta...), body))
	}
	hdr := metaList(headerMeta...)
	for _, v := range []vec{
		{name: "vllm tool_calls", ai: VLLM, body: read(t, filepath.Join("..", "vllm/testdata/responses/tool_calls.json"))},
		{name: "ollama thinking", ai: Ollama, body: read(t, filepath.Join("..", "ollama/testdata/response/thinking.ollama.json"))},
		{name: "bad", ai: VLLM, body: []byte("{")},
	} {
		check(v.name+" fused response", abi.OpFusedResponse, input(OpenAI, v.ai, 0, nil, hdr, v.body))
		check(v.name+" response_decode", abi.OpResponseDecode, input(0, v.ai, 0, nil, nil, v.body))
	}
	smeta := metaList(append(append([]string{}, headerMeta...), abi.MetaIncludeUsage, "1")...)
	for _, v := range []vec{
		{name: "vllm tools.sse", ai: VLLM, events: frameSSE(read(t, filepath.Join("..", "vllm/testdata/streams/tools.sse")))},
		{name: "ollama thinking.ndjson", ai: Ollama, events: frameNDJSON(read(t, filepath.Join("..", "ollama/testdata/stream/thinking.ndjson")))},
	} {
		var state []byte
		for i := 0; i <= len(v.events); i++ {
			var f uint32
			if i == 0 {
				f |= abi.FlagFirst
			}
			var batch [][]byte
			if i == len(v.events) {
				f |= abi.FlagEnd
			} else {
				batch = v.events[i : i+1]
			}
			r := check(v.name+" fused stream", abi.OpFusedStream, input(OpenAI, v.ai, f, state, smeta, list(batch)))
			if r.Flags&abi.ResultStateKeep == 0 {
				state = r.State
			}
		}
	}
	check("wrong kind", abi.OpFusedStream, input(VLLM, OpenAI, 0, nil, nil, nil))
	check("out of range", abi.OpRequestEncode, input(0, 9, 0, nil, nil, []byte("{}")))
	check("corrupt fused state", abi.OpFusedStream, input(OpenAI, VLLM, 0, []byte{9, 9, 9}, smeta, nil))
	t.Logf("%d calls matched", par.Calls())
}
