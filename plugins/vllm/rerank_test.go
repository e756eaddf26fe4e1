package vllm

import (
	"testing"

	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// Shapes: vLLM's OpenAI-compatible server, "Re-rank API" and "Score API"
// (https://docs.vllm.ai/en/latest/serving/openai_compatible_server.html).

func TestRerank_Request(t *testing.T) {
	for _, tc := range []struct {
		req        canon.RerankRequest
		path, want string
	}{
		{canon.RerankRequest{Model: "m", Query: "q", Documents: []string{"a", "b"}, TopN: 1}, "/v1/rerank",
			`{"model":"m","query":"q","documents":["a","b"],"top_n":1}`},
		{canon.RerankRequest{Model: "m", Text1: []string{"q"}, Text2: []string{"a", "b"}}, "/v1/score",
			`{"model":"m","text_1":"q","text_2":["a","b"]}`},
		{canon.RerankRequest{Model: "m", Text1: []string{"q", "r"}, Text2: []string{"a", "b"}}, "/v1/score",
			`{"model":"m","text_1":["q","r"],"text_2":["a","b"]}`},
	} {
		r := callOp(t, newPlugin(), abi.OpRerankRequestEncode, 0, nil, nil, tc.req.AppendJSON(nil))
		if r.Status != abi.StatusOK || string(r.Payload) != tc.want || r.meta(abi.MetaPath) != tc.path {
			t.Errorf("%+v: %s %s %s", tc.req, r.Status, r.Payload, r.meta(abi.MetaPath))
		}
	}
}

func TestRerank_Response(t *testing.T) {
	rerank := `{"id":"rerank-1","model":"m","usage":{"total_tokens":9},"results":[{"index":1,"document":{"text":"b"},"relevance_score":0.25},{"index":0,"document":{"text":"a"},"relevance_score":0.75}]}`
	r := callOp(t, newPlugin(), abi.OpRerankResponseDecode, 0, nil, nil, []byte(rerank))
	var resp canon.RerankResponse
	if r.Status != abi.StatusOK || resp.DecodeJSON(r.Payload) != nil {
		t.Fatalf("%s %s", r.Status, r.Error)
	}
	if len(resp.Results) != 2 || resp.Results[0].Index != 0 || resp.Results[0].Score != 0.75 || resp.Results[0].Document != "a" ||
		resp.Usage == nil || resp.Usage.PromptTokens != 9 {
		t.Fatalf("rerank: %+v", resp)
	}
	score := `{"id":"score-1","object":"list","created":1,"model":"m","data":[{"index":0,"object":"score","score":0.5},{"index":1,"object":"score","score":0.9}],"usage":{"prompt_tokens":4,"total_tokens":4,"completion_tokens":0}}`
	r = callOp(t, newPlugin(), abi.OpRerankResponseDecode, 0, nil, nil, []byte(score))
	if r.Status != abi.StatusOK || resp.DecodeJSON(r.Payload) != nil || len(resp.Results) != 2 || resp.Results[1].Score != 0.9 || resp.Results[1].Index != 1 {
		t.Fatalf("score: %s %+v", r.Status, resp)
	}
	for _, bad := range []string{`[]`, `{"x":1}`, `{"results":[1]}`, `{"error":{"message":"no"}}`} {
		if r := callOp(t, newPlugin(), abi.OpRerankResponseDecode, 0, nil, nil, []byte(bad)); r.Status != abi.StatusBadInput {
			t.Errorf("%s: %s", bad, r.Status)
		}
	}
}
