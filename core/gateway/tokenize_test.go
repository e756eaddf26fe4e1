package gateway

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mindrouter/mindrouter/bench/fakellm"
)

// TestTokenize: /v1/tokenize counts a request's tokens with the gateway's
// generic tokenizer (an estimate, said so), reports the model's context
// window from discovery, and answers an unknown model 404 and an over-long
// input 413, in OpenAI's error shape; no backend is called.
func TestTokenize(t *testing.T) {
	t.Parallel()
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, "limits: {tokenize_max_chars: 2048}\n")
	url := e.base + "/v1/tokenize"
	backendCalls := func() int64 {
		return e.vllm.Stats().Requests["/v1/chat/completions"] + e.vllm.Stats().Requests["/tokenize"] +
			e.ollama.Stats().Requests["/api/chat"]
	}
	before := backendCalls()
	ctxLen := map[string]int64{}
	models, err := e.client.Models.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range models.Data {
		var x struct {
			ContextLength int64 `json:"context_length"`
		}
		if json.Unmarshal([]byte(m.RawJSON()), &x) == nil && x.ContextLength > 0 {
			ctxLen[m.ID] = x.ContextLength
		}
	}
	for _, model := range []string{vllmModel, ollamaModel} {
		// 3 for the reply + 3 for the message + "user" (1) + "hello world" (2).
		for _, body := range []string{
			`{"model":"` + model + `","prompt":"hello world"}`,
			`{"model":"` + model + `","messages":[{"role":"user","content":"hello world"}]}`,
		} {
			status, _, v := rawPost(t, url, adminKey, body)
			if status != 200 || v["count"] != 9.0 || v["is_estimate"] != true {
				t.Fatalf("%s: %d %v", body, status, v)
			}
			if want, ok := ctxLen[model]; ok && v["max_model_len"] != float64(want) {
				t.Fatalf("%s: max_model_len %v, /v1/models says %v", model, v["max_model_len"], want)
			}
		}
	}
	if status, _, v := rawPost(t, url, adminKey, `{"model":"nope","prompt":"x"}`); status != 404 || v["error"] == nil {
		t.Fatalf("unknown model: %d %v", status, v)
	}
	long := `{"model":"` + vllmModel + `","prompt":"` + strings.Repeat("a ", 2000) + `"}`
	if status, _, v := rawPost(t, url, adminKey, long); status != 413 || v["error"] == nil {
		t.Fatalf("over-long: %d %v", status, v)
	}
	if status, _, _ := rawPost(t, url, "", `{"model":"x","prompt":"x"}`); status != 401 {
		t.Fatalf("no key: %d", status)
	}
	if after := backendCalls(); after != before {
		t.Fatalf("tokenize called the backend (%d → %d requests)", before, after)
	}
}
