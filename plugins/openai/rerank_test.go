package openai

import (
	"strings"
	"testing"

	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// Shapes: vLLM's OpenAI-compatible server, "Re-rank API" and "Score API"
// (https://docs.vllm.ai/en/latest/serving/openai_compatible_server.html).

func TestRerank_Decode(t *testing.T) {
	p := newPlugin()
	r := call(t, p, abi.OpRerankRequestDecode, 0, nil, []byte(`{"model":"m","query":"q","documents":["a",{"text":"b"}],"top_n":1,"return_documents":false}`), "route", RouteRerank)
	var req canon.RerankRequest
	if r.Status != abi.StatusOK || req.DecodeJSON(r.Payload) != nil {
		t.Fatalf("%s %s", r.Status, r.Error)
	}
	if req.Model != "m" || req.Query != "q" || strings.Join(req.Documents, ",") != "a,b" || req.TopN != 1 || req.ReturnDocuments || req.Score() {
		t.Fatalf("%+v", req)
	}
	r = call(t, p, abi.OpRerankRequestDecode, 0, nil, []byte(`{"model":"m","text_1":"q","text_2":["a","b"]}`), "route", RouteScore)
	if r.Status != abi.StatusOK || req.DecodeJSON(r.Payload) != nil || !req.Score() || len(req.Text1) != 1 || len(req.Text2) != 2 {
		t.Fatalf("score: %s %s %+v", r.Status, r.Error, req)
	}
	for body, want := range map[string]string{
		`{"model":"m","documents":["a"]}`:                        "query is required",
		`{"model":"m","query":1,"documents":["a"]}`:              "query must be a string",
		`{"model":"m","query":"q","documents":[]}`:               "documents must hold between 1 and 1024",
		`{"model":"m","query":"q","documents":["a",2]}`:          "documents[1]: expected a string",
		`{"model":"m","query":"q","documents":["a"],"top_n":-1}`: "top_n must be",
		`{"query":"q","documents":["a"]}`:                        "model is required",
	} {
		if r := call(t, p, abi.OpRerankRequestDecode, 0, nil, []byte(body), "route", RouteRerank); r.Status != abi.StatusBadInput || !strings.Contains(r.Error, want) {
			t.Errorf("%s: %s %q, want %q", body, r.Status, r.Error, want)
		}
	}
	if r := call(t, p, abi.OpRerankRequestDecode, 0, nil, []byte(`{"model":"m","text_1":["a","b"],"text_2":["c"]}`), "route", RouteScore); r.Status != abi.StatusBadInput {
		t.Errorf("score length mismatch: %s", r.Status)
	}
}

func TestRerank_Encode(t *testing.T) {
	resp := canon.RerankResponse{Model: "b", Results: []canon.RerankResult{{Index: 2, Score: 0.9, Document: "x"}, {Index: 0, Score: 0.1, Document: "y"}},
		Usage: &canon.Usage{PromptTokens: 7}}
	meta := []string{"route", RouteRerank, "id", "chatcmpl-ab", "model", "m", "created", "5"}
	r := call(t, newPlugin(), abi.OpRerankResponseEncode, 0, nil, resp.AppendJSON(nil), meta...)
	want := `{"id":"rerank-ab","model":"m","results":[{"index":2,"document":{"text":"x"},"relevance_score":0.9},{"index":0,"document":{"text":"y"},"relevance_score":0.1}],"usage":{"prompt_tokens":7,"total_tokens":7}}`
	if r.Status != abi.StatusOK || string(r.Payload) != want {
		t.Fatalf("rerank:\n got %s\nwant %s", r.Payload, want)
	}
	r = call(t, newPlugin(), abi.OpRerankResponseEncode, 0, nil, resp.AppendJSON(nil), append(meta, abi.MetaEncodingFormat, abi.NoDocuments)...)
	if strings.Contains(string(r.Payload), "document") {
		t.Fatalf("no_documents: %s", r.Payload)
	}
	meta[1] = RouteScore
	r = call(t, newPlugin(), abi.OpRerankResponseEncode, 0, nil, resp.AppendJSON(nil), meta...)
	want = `{"id":"score-ab","object":"list","created":5,"model":"m","data":[{"index":2,"object":"score","score":0.9},{"index":0,"object":"score","score":0.1}],"usage":{"prompt_tokens":7,"total_tokens":7}}`
	if r.Status != abi.StatusOK || string(r.Payload) != want {
		t.Fatalf("score:\n got %s\nwant %s", r.Payload, want)
	}
}
