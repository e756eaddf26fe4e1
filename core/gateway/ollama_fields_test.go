package gateway

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/mindrouter/mindrouter/bench/fakellm"
)

// TestOllamaAPI_EveryField: the answers carry every field real Ollama
// returns (docs.ollama.com/api: usage fields on /api/embed and on the final
// object of /api/chat and /api/generate, streamed or not), on both engines.
// ollama-ai-provider-v2 validates them and throws "Invalid JSON response"
// when one is missing; the request bodies are the shapes it sends
// (testdata/ollama_provider_*.json). The Go client cannot tell a missing
// field from 0 (omitempty), so the raw JSON is checked.
func TestOllamaAPI_EveryField(t *testing.T) {
	t.Parallel()
	e := startEnv(t, fakellm.Config{EmbeddingDim: 8}, fakellm.Config{EmbeddingDim: 8}, "")
	usage := []string{"total_duration", "load_duration", "prompt_eval_count", "prompt_eval_duration", "eval_count", "eval_duration"}
	for _, tc := range []struct {
		path, fixture string
		stream        bool
		want          []string
	}{
		{"/api/embed", "ollama_provider_embed.json", false, []string{"model", "embeddings", "total_duration", "load_duration", "prompt_eval_count"}},
		{"/api/chat", "ollama_provider_chat.json", false, append([]string{"model", "created_at", "message", "done", "done_reason"}, usage...)},
		{"/api/chat", "ollama_provider_chat.json", true, append([]string{"model", "created_at", "message", "done", "done_reason"}, usage...)},
		{"/api/generate", "ollama_provider_generate.json", false, append([]string{"model", "created_at", "response", "done", "done_reason"}, usage...)},
		{"/api/generate", "ollama_provider_generate.json", true, append([]string{"model", "created_at", "response", "done", "done_reason"}, usage...)},
	} {
		for _, model := range []string{vllmModel, ollamaModel} {
			name := tc.path + "/" + model
			if tc.stream {
				name += "/stream"
			}
			t.Run(name, func(t *testing.T) {
				raw, err := os.ReadFile("testdata/" + tc.fixture)
				if err != nil {
					t.Fatal(err)
				}
				body := strings.Replace(string(raw), "MODEL", model, 1)
				if tc.stream {
					body = strings.Replace(body, `"stream":false`, `"stream":true`, 1)
				}
				req, _ := http.NewRequest("POST", e.base+tc.path, strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+adminKey)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				var last []byte
				sc := bufio.NewScanner(resp.Body)
				sc.Buffer(nil, 1<<20)
				for sc.Scan() {
					if l := bytes.TrimSpace(sc.Bytes()); len(l) > 0 {
						last = append(last[:0], l...)
					}
				}
				if resp.StatusCode != 200 {
					t.Fatalf("status %d: %s", resp.StatusCode, last)
				}
				var obj map[string]json.RawMessage
				if err := json.Unmarshal(last, &obj); err != nil {
					t.Fatalf("%s: %v", last, err)
				}
				for _, k := range tc.want {
					if _, ok := obj[k]; !ok {
						t.Errorf("no %q in %s", k, last)
					}
				}
				if n := string(obj["prompt_eval_count"]); n == "0" || n == "" {
					t.Errorf("prompt_eval_count %q: the backend's count is lost", n)
				}
			})
		}
	}
}
