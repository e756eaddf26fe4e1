package bundle

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/mindrouter/mindrouter/sdk/abi"
)

// gatewayChat is the body the gateway's benchmarks send
// (core/gateway BenchmarkChatPlugins), with the model the host rewrites.
const gatewayChat = `{"model":"served-model","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Tell me about gateways"}],"temperature":0.7,"max_tokens":64}`

// defaultPathCall is one fused call of a default-configuration request.
type defaultPathCall struct {
	name  string
	op    abi.Op
	ai    uint16
	flags uint32
	state []byte
	meta  []byte
	body  []byte
}

// defaultPathCalls are the fused calls a plain and a streamed OpenAI chat
// request makes on the default plugins.yaml (the bundle), on vLLM (the
// patch) and on Ollama (the openai×ollama patch): request, response, a whole
// 3-line stream and, on both, a 20-event mid-stream batch (vLLM's also
// one event a call: a slow stream's). vLLM's
// response-compact is the body fakellm sends the gateway's benchmarks (as
// vLLM, compact), plain.json the pretty-printed golden file.
func defaultPathCalls(b testing.TB) []defaultPathCall {
	reqMeta := metaList(append(append([]string{}, routeMeta...), abi.MetaContextLength, "32768")...)
	hdr := metaList(headerMeta...)
	events, _, _, fstate := streamBatch(b)
	ollama20, ollamaState := ollamaStreamBatch(b)
	var ollamaEvents [][]byte
	for _, l := range bytes.Split(read(b, filepath.Join("..", "ollama/testdata/stream/length.ndjson")), []byte("\n")) {
		if len(bytes.TrimSpace(l)) > 0 {
			ollamaEvents = append(ollamaEvents, l)
		}
	}
	return []defaultPathCall{
		{"vllm/request", abi.OpFusedRequest, VLLM, 0, nil, reqMeta, []byte(gatewayChat)},
		{"vllm/response", abi.OpFusedResponse, VLLM, 0, nil, hdr, read(b, filepath.Join("..", "vllm/testdata/responses/plain.json"))},
		{"vllm/response-compact", abi.OpFusedResponse, VLLM, 0, nil, hdr, read(b, filepath.Join("testdata", "fakellm-vllm-response.json"))},
		{"vllm/stream20", abi.OpFusedStream, VLLM, 0, fstate, hdr, events},
		{"vllm/stream1", abi.OpFusedStream, VLLM, 0, fstate, hdr, firstItem(b, events)},
		{"ollama/request", abi.OpFusedRequest, Ollama, 0, nil, reqMeta, []byte(gatewayChat)},
		{"ollama/response", abi.OpFusedResponse, Ollama, 0, nil, hdr, read(b, filepath.Join("..", "ollama/testdata/response/text.ollama.json"))},
		{"ollama/stream3", abi.OpFusedStream, Ollama, abi.FlagFirst, nil, hdr, list(ollamaEvents)},
		{"ollama/stream20", abi.OpFusedStream, Ollama, 0, ollamaState, hdr, ollama20},
	}
}

// BenchmarkDefaultPath runs defaultPathCalls natively, or inside
// WebAssembly for a guest profile (bench/README.md, "Guest profiles").
func BenchmarkDefaultPath(b *testing.B) {
	for _, c := range defaultPathCalls(b) {
		b.Run(c.name, func(b *testing.B) {
			p := New()
			in := input(OpenAI, c.ai, c.flags, c.state, c.meta, c.body)
			checkOK(b, c.name, p.Call(c.op, in))
			b.ReportAllocs()
			for b.Loop() {
				p.Call(c.op, in)
			}
		})
	}
}

func checkOK(b testing.TB, name string, area []byte) {
	b.Helper()
	if r, err := abi.ParseResult(area); err != nil || r.Status != abi.StatusOK {
		b.Fatalf("%s: %v %s %s", name, err, r.Status, r.Error)
	}
}

// firstItem is the first item of an abi list, as a list of one.
func firstItem(b testing.TB, list []byte) []byte {
	first, _, ok, err := abi.NextItem(list)
	if err != nil || !ok {
		b.Fatalf("first item: %v", err)
	}
	return abi.AppendItem(nil, first)
}
