package conformance

import (
	"github.com/mindrouter/mindrouter/core/pluginhost"
	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// input is one call's input.
type input struct {
	op abi.Op
	in pluginhost.CallInput
}

// translatorOps and adapterOps are the ops of each kind.
var (
	translatorOps = []abi.Op{abi.OpRequestDecode, abi.OpResponseEncode, abi.OpStreamEncode, abi.OpErrorEncode, abi.OpModelsEncode,
		abi.OpEmbedRequestDecode, abi.OpEmbedResponseEncode}
	adapterOps = []abi.Op{abi.OpRequestEncode, abi.OpResponseDecode, abi.OpStreamDecode, abi.OpErrorDecode, abi.OpProbeDecode,
		abi.OpEmbedRequestEncode, abi.OpEmbedResponseDecode, abi.OpCountRequestEncode, abi.OpCountResponseDecode}
)

func opsOf(k sdk.Kind) []abi.Op {
	if k == sdk.KindAdapter {
		return adapterOps
	}
	return translatorOps
}

// samples are plausible inputs for every op of the kind: canonical JSON
// from package canon, and generic client or backend bodies. Some may be
// refused by a given plugin (bad_input); they are seeds for the fuzzer and
// inputs for the determinism and budget checks.
func samples(m *sdk.Manifest) []input {
	req := canon.ChatRequest{Model: "m", Messages: []canon.Message{
		{Role: canon.RoleSystem, Content: []canon.Part{{Type: canon.PartText, Text: "be brief"}}},
		{Role: canon.RoleUser, Content: []canon.Part{{Type: canon.PartText, Text: "hello \"world\" é"}}},
	}}
	resp := canon.ChatResponse{ID: "r1", Model: "m", Created: 1700000000, Choices: []canon.Choice{{
		Message:      canon.Message{Role: canon.RoleAssistant, Content: []canon.Part{{Type: canon.PartText, Text: "hi"}}},
		FinishReason: canon.FinishStop}}, Usage: &canon.Usage{PromptTokens: 3, CompletionTokens: 1, TotalTokens: 4}}
	chunk := canon.ChatChunk{ID: "r1", Model: "m", Created: 1700000000, Choices: []canon.ChunkChoice{{
		Delta: canon.Delta{Role: canon.RoleAssistant, Content: "hi"}}}}
	last := canon.ChatChunk{ID: "r1", Model: "m", Created: 1700000000, Choices: []canon.ChunkChoice{{FinishReason: canon.FinishStop}}}
	cerr := canon.Error{Status: 404, Type: canon.ErrNotFound, Code: "model_not_found", Message: "no such model"}
	models := canon.ModelList{Models: []canon.Model{{ID: "m", OwnedBy: "me", Created: 1700000000}}}
	// Embedding ops (2.2) are optional: a plugin without them answers
	// unsupported, which the checks accept as any other status.
	ereq := canon.EmbeddingRequest{Model: "m", Input: []string{"hello", "wörld"}, Dimensions: 8}
	eresp := canon.EmbeddingResponse{Model: "m", Vectors: [][]float32{{0.5, -0.25, 1e-7}, {1, 0, 0}}, Usage: &canon.Usage{PromptTokens: 2, TotalTokens: 2}}

	meta := func(kv ...string) []byte {
		var b []byte
		for i := 0; i+1 < len(kv); i += 2 {
			b = abi.AppendMeta(b, kv[i], kv[i+1])
		}
		return b
	}
	list := func(items ...[]byte) []byte {
		var b []byte
		for _, it := range items {
			b = abi.AppendItem(b, it)
		}
		return b
	}
	in := func(op abi.Op, flags uint32, md, payload []byte) input {
		return input{op, pluginhost.CallInput{Flags: flags, Meta: md, Payload: payload, RequestID: 7}}
	}
	if m.Kind == sdk.KindAdapter {
		probe := "models"
		if len(m.Probes) > 0 {
			probe = m.Probes[0].Name
		}
		return []input{
			in(abi.OpRequestEncode, 0, nil, req.AppendJSON(nil)),
			in(abi.OpResponseDecode, 0, nil, []byte(`{"id":"r1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}`)),
			in(abi.OpStreamDecode, abi.FlagFirst, nil, list([]byte(`{"id":"r1","choices":[{"index":0,"delta":{"content":"hi"}}]}`))),
			in(abi.OpStreamDecode, abi.FlagEnd, nil, list([]byte(`[DONE]`))),
			in(abi.OpErrorDecode, 0, meta("status", "500"), []byte(`{"error":{"message":"boom"}}`)),
			in(abi.OpProbeDecode, 0, meta("probe", probe), []byte(`{"data":[{"id":"m"}]}`)),
			in(abi.OpEmbedRequestEncode, 0, nil, ereq.AppendJSON(nil)),
			in(abi.OpEmbedResponseDecode, 0, nil, []byte(`{"model":"m","data":[{"index":0,"embedding":[0.5,-0.25]}],"embeddings":[[0.5,-0.25]],"usage":{"prompt_tokens":2}}`)),
			// The count ops (2.7) are optional as the embedding ops are.
			in(abi.OpCountRequestEncode, 0, meta("context_length", "4096"), req.AppendJSON(nil)),
			in(abi.OpCountResponseDecode, 0, nil, []byte(`{"count":12,"max_model_len":4096,"tokens":[1,2]}`)),
		}
	}
	route, id := "chat", "r1"
	return []input{
		in(abi.OpRequestDecode, 0, meta("route", route), []byte(`{"model":"m","messages":[{"role":"user","content":"hello"}],"max_tokens":16}`)),
		in(abi.OpResponseEncode, 0, meta("route", route, "id", id, "model", "m"), resp.AppendJSON(nil)),
		in(abi.OpStreamEncode, abi.FlagFirst, meta("route", route, "id", id, "model", "m"), list(chunk.AppendJSON(nil))),
		in(abi.OpStreamEncode, abi.FlagEnd, meta("route", route, "id", id, "model", "m"), list(last.AppendJSON(nil))),
		in(abi.OpErrorEncode, 0, meta("route", route), cerr.AppendJSON(nil)),
		in(abi.OpModelsEncode, 0, meta("route", "models"), models.AppendJSON(nil)),
		in(abi.OpEmbedRequestDecode, 0, meta("route", "embeddings"), []byte(`{"model":"m","input":["hello","wörld"],"encoding_format":"base64"}`)),
		in(abi.OpEmbedResponseEncode, 0, meta("route", "embeddings", "id", id, "model", "m", "encoding_format", "base64"), eresp.AppendJSON(nil)),
	}
}

// inputs are the component's golden vectors' single calls followed by the
// samples, addressed to the component.
func (s *session) inputs() []input { return partInputs(s.part) }

// partInputs are p's golden vectors' single calls followed by the samples
// of its kind, addressed to p.
func partInputs(p *part) []input {
	var out []input
	for _, v := range p.vectors {
		for _, st := range v.steps {
			out = append(out, input{st.op, pluginhost.CallInput{Flags: st.flags, Meta: st.meta, Payload: st.in}})
		}
	}
	out = append(out, samples(&p.m)...)
	for i := range out {
		out[i].in = addrTo(p.idx, out[i].op, out[i].in)
	}
	return out
}
