package ollamaapi

import (
	"strings"
	"testing"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

func embedMeta(route string) []string {
	return []string{abi.MetaRoute, route, abi.MetaKind, "embedding"}
}

// TestDecodeEmbeddingRequest runs /api/embed and /api/embeddings bodies
// (docs/api.md, "Generate Embeddings" and its deprecated predecessor)
// through the SDK dispatcher.
func TestDecodeEmbeddingRequest(t *testing.T) {
	p := newPlugin()
	for _, tc := range []struct {
		route, body, want string
	}{
		{RouteEmbed, `{"model":"all-minilm","input":"Why is the sky blue?"}`,
			`{"model":"all-minilm","input":["Why is the sky blue?"]}`},
		{RouteEmbed, `{"model":"all-minilm","input":["Why is the sky blue?","Why is the grass green?"],"truncate":false,"keep_alive":"10m","dimensions":256,"options":{"temperature":0}}`,
			`{"model":"all-minilm","input":["Why is the sky blue?","Why is the grass green?"],"dimensions":256}`},
		{RouteEmbeddings, `{"model":"all-minilm","prompt":"Here is an article about llamas...","options":null}`,
			`{"model":"all-minilm","input":["Here is an article about llamas..."]}`},
	} {
		r := call(t, p, abi.OpEmbedRequestDecode, 0, nil, []byte(tc.body), embedMeta(tc.route)...)
		if r.Status != abi.StatusOK || string(r.Payload) != tc.want || r.Meta[abi.MetaModel] != "all-minilm" {
			t.Errorf("%s %s: %s %s %q meta %v, want %s", tc.route, tc.body, r.Status, r.Payload, r.Error, r.Meta, tc.want)
		}
	}
}

func TestDecodeEmbeddingRequest_Errors(t *testing.T) {
	p := newPlugin()
	for _, tc := range []struct {
		route, body, want string
	}{
		{RouteEmbed, `{"input":"x"}`, "model is required"},
		{RouteEmbed, `{"model":"m"}`, "input is required"},
		{RouteEmbed, `{"model":"m","input":""}`, "load-only"},
		{RouteEmbed, `{"model":"m","input":[]}`, "load-only"},
		{RouteEmbed, `{"model":"m","input":["a",2]}`, "input[1] must be a string"},
		{RouteEmbed, `{"model":"m","input":{"a":1}}`, "input must be a string or an array of strings"},
		{RouteEmbed, `{"model":"m","input":"x","dimensions":-1}`, "dimensions must be a non-negative integer"},
		{RouteEmbed, `{"model":"m","input":"x","truncate":"yes"}`, "truncate must be a boolean"},
		{RouteEmbeddings, `{"model":"m"}`, "prompt is required"},
		{RouteEmbeddings, `{"model":"m","prompt":""}`, "load-only"},
		{RouteEmbeddings, `{"model":"m","prompt":["x"]}`, "prompt must be a string"},
		{RouteChat, `{"model":"m","input":"x"}`, "has no embedding request"},
	} {
		r := call(t, p, abi.OpEmbedRequestDecode, 0, nil, []byte(tc.body), embedMeta(tc.route)...)
		if r.Status != abi.StatusBadInput || !strings.Contains(r.Error, tc.want) {
			t.Errorf("%s %s: %s %q, want %q", tc.route, tc.body, r.Status, r.Error, tc.want)
		}
	}
}

func TestEncodeEmbeddingResponse(t *testing.T) {
	p := newPlugin()
	resp := `{"model":"backend","vectors":[[0.010071029,-0.0017594862,0.05007221],[1e-7,0.5,-2]],"usage":{"prompt_tokens":8,"completion_tokens":0,"total_tokens":8}}`
	for _, tc := range []struct {
		route string
		meta  []string
		want  string
	}{
		{RouteEmbed, []string{abi.MetaModel, "all-minilm"},
			`{"model":"all-minilm","embeddings":[[0.010071029,-0.0017594862,0.05007221],[1e-7,0.5,-2]],"total_duration":0,"load_duration":0,"prompt_eval_count":8}`},
		{RouteEmbed, nil,
			`{"model":"backend","embeddings":[[0.010071029,-0.0017594862,0.05007221],[1e-7,0.5,-2]],"total_duration":0,"load_duration":0,"prompt_eval_count":8}`},
		{RouteEmbeddings, []string{abi.MetaModel, "all-minilm"}, `{"embedding":[0.010071029,-0.0017594862,0.05007221]}`},
	} {
		r := call(t, p, abi.OpEmbedResponseEncode, 0, nil, []byte(resp), append(embedMeta(tc.route), tc.meta...)...)
		if r.Status != abi.StatusOK || string(r.Payload) != tc.want {
			t.Errorf("%s: %s %s %q, want %s", tc.route, r.Status, r.Payload, r.Error, tc.want)
		}
	}
}

// TestEncodeEmbeddingResponse_Native calls the method directly, as a host
// without the 2.2 dispatcher could not: an empty response and a
// non-finite value (which JSON cannot carry) still give valid JSON.
func TestEncodeEmbeddingResponse_Native(t *testing.T) {
	var out sdk.Output
	zero := float32(0)
	resp := canon.EmbeddingResponse{Model: "m", Vectors: [][]float32{{1 / zero}}}
	if err := New().EncodeEmbeddingResponse(&sdk.Call{}, &resp, &out); err != nil {
		t.Fatal(err)
	}
	// Every field of real Ollama's answer, without usage too.
	if string(out.Body) != `{"model":"m","embeddings":[[0]],"total_duration":0,"load_duration":0,"prompt_eval_count":0}` {
		t.Fatalf("%s", out.Body)
	}
}
