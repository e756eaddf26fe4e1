package gateway

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/bench/fakellm"
)

// TestOllamaLatestName: a model an Ollama backend lists as "name:latest"
// answers to "name" too (Ollama's rule), and /v1/models lists it once.
// Before, "microsoft/phi-4" was a 404 while the backend served
// "microsoft/phi-4:latest".
func TestOllamaLatestName(t *testing.T) {
	t.Parallel()
	_, ourl := startFake(t, fakellm.Config{Engine: "ollama", Models: []string{"microsoft/phi-4:latest"}})
	h := startHostile(t, hostileOpts{backends: backendYAML("o", "ollama", ourl, 4), level: slog.LevelWarn})
	for _, model := range []string{"microsoft/phi-4", "microsoft/phi-4:latest"} {
		r := do(http.DefaultClient, "POST", h.base+"/v1/chat/completions", adminKey, strings.NewReader(chatJSON(model, false)))
		if r.status != 200 {
			t.Errorf("%s: %d %s", model, r.status, r.body)
			continue
		}
		var c struct {
			Object  string `json:"object"`
			Choices []struct {
				Message struct{ Content string } `json:"message"`
			} `json:"choices"`
		}
		if err := json.Unmarshal(r.body, &c); err != nil || c.Object != "chat.completion" || len(c.Choices) != 1 || c.Choices[0].Message.Content == "" {
			t.Errorf("%s: %s", model, r.body)
		}
	}
	if r := do(http.DefaultClient, "POST", h.base+"/v1/chat/completions", adminKey, strings.NewReader(chatJSON("microsoft/phi-4:14b", false))); r.status != 404 {
		t.Errorf("another tag: %d %s", r.status, r.body)
	}
	r := do(http.DefaultClient, "GET", h.base+"/v1/models", adminKey, nil)
	var list struct {
		Data []struct {
			ID       string
			Backends []string
		} `json:"data"`
	}
	if err := json.Unmarshal(r.body, &list); err != nil {
		t.Fatalf("%v: %s", err, r.body)
	}
	if len(list.Data) != 1 || list.Data[0].ID != "microsoft/phi-4:latest" || strings.Join(list.Data[0].Backends, ",") != "o" {
		t.Errorf("models: %s", r.body)
	}
}

// TestStatus: GET /status answers without a key in the reference's shape;
// model names only when status.models says so (counts by default).
func TestStatus(t *testing.T) {
	t.Parallel()
	_, ourl := startFake(t, fakellm.Config{Engine: "ollama", Models: []string{"qwen3:8b"}})
	backends := backendYAML("o", "ollama", ourl, 4) + backendYAML("dead", "vllm", "http://127.0.0.1:1", 4)
	anon := do(http.DefaultClient, "GET", startHostile(t, hostileOpts{backends: backends, level: slog.LevelError}).base+"/status", "", nil)
	if strings.Contains(string(anon.body), "qwen3") || !strings.Contains(string(anon.body), `"model_count":1`) {
		t.Errorf("default /status names models: %s", anon.body)
	}
	h := startHostile(t, hostileOpts{backends: backends, extra: "status: {models: true}\n", level: slog.LevelError})
	r := do(http.DefaultClient, "GET", h.base+"/status", "", nil)
	var st struct {
		Service   string   `json:"service"`
		Version   string   `json:"version"`
		Timestamp int64    `json:"timestamp"`
		Models    []string `json:"models"`
		Backends  struct {
			Total, Healthy int
		} `json:"backends"`
		Queue *struct {
			Waiting  *int64 `json:"waiting"`
			InFlight *int64 `json:"in_flight"`
		} `json:"queue"`
	}
	if err := json.Unmarshal(r.body, &st); err != nil || r.status != 200 {
		t.Fatalf("%d %v: %s", r.status, err, r.body)
	}
	if st.Service != "mindrouter" || st.Version == "" || st.Timestamp < time.Now().Add(-time.Minute).Unix() ||
		st.Backends.Total != 2 || st.Backends.Healthy != 1 || strings.Join(st.Models, ",") != "qwen3:8b" ||
		st.Queue == nil || st.Queue.Waiting == nil || *st.Queue.Waiting != 0 || st.Queue.InFlight == nil {
		t.Errorf("status: %s", r.body)
	}
}
