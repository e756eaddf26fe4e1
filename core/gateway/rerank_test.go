package gateway

import (
	"testing"

	"github.com/mindrouter/mindrouter/bench/fakellm"
	"github.com/mindrouter/mindrouter/core/internal/matrix"
)

// TestOpenAIRaw_RerankScore: /v1/rerank and /v1/score in vLLM's shapes (there is
// no official SDK for them: raw HTTP, as the reference's users call them)
// through a vLLM backend; an Ollama backend, which has neither, is the
// client's 400 saying so; bad input is an OpenAI-shaped 400.
func TestOpenAIRaw_RerankScore(t *testing.T) {
	t.Parallel()
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, "")
	status, _, v := rawPost(t, e.base+"/v1/rerank", adminKey, `{"model":"`+vllmModel+`","query":"capital of France",
		"documents":["Paris is the capital of France.","Bananas are yellow.",{"text":"France's capital city is Paris."}],"top_n":2}`)
	results, _ := v["results"].([]any)
	if status != 200 || len(results) != 2 || v["model"] != vllmModel {
		t.Fatalf("rerank: %d %v", status, v)
	}
	r0, r1 := results[0].(map[string]any), results[1].(map[string]any)
	if r0["relevance_score"].(float64) < r1["relevance_score"].(float64) || r0["document"] == nil {
		t.Fatalf("rerank results not best first, or without documents: %v", results)
	}
	if u, _ := v["usage"].(map[string]any); u == nil || u["prompt_tokens"].(float64) == 0 {
		t.Fatalf("rerank usage: %v", v["usage"])
	}
	// return_documents false: the results carry none.
	_, _, v = rawPost(t, e.base+"/v1/rerank", adminKey, `{"model":"`+vllmModel+`","query":"q","documents":["a","b"],"return_documents":false}`)
	for _, r := range v["results"].([]any) {
		if r.(map[string]any)["document"] != nil {
			t.Fatalf("documents returned: %v", v)
		}
	}

	status, _, v = rawPost(t, e.base+"/v1/score", adminKey, `{"model":"`+vllmModel+`","text_1":"capital of France","text_2":["Paris","Bananas"]}`)
	data, _ := v["data"].([]any)
	if status != 200 || v["object"] != "list" || len(data) != 2 || data[1].(map[string]any)["index"] != 1.0 ||
		data[0].(map[string]any)["object"] != "score" {
		t.Fatalf("score: %d %v", status, v)
	}
	matrix.Mark(t, "openai", "rerank", "vllm")

	for _, tc := range []struct{ path, body, code string }{
		{"/v1/rerank", `{"model":"` + ollamaModel + `","query":"q","documents":["a"]}`, "rerank_unsupported"},
		{"/v1/score", `{"model":"` + ollamaModel + `","text_1":"a","text_2":"b"}`, "rerank_unsupported"},
		{"/v1/rerank", `{"model":"` + vllmModel + `","documents":["a"]}`, ""},
		{"/v1/rerank", `{"model":"` + vllmModel + `","query":"q","documents":[]}`, ""},
		{"/v1/score", `{"model":"` + vllmModel + `","text_1":["a","b"],"text_2":["c","d","e"]}`, ""},
	} {
		status, _, v := rawPost(t, e.base+tc.path, adminKey, tc.body)
		eo, _ := v["error"].(map[string]any)
		if status != 400 || eo == nil || eo["type"] != "invalid_request_error" || tc.code != "" && eo["code"] != tc.code {
			t.Fatalf("%s %s: %d %v", tc.path, tc.body, status, v)
		}
	}
	matrix.Mark(t, "openai", "rerank", "ollama") // a clear 400: the engine has no reranking
}
