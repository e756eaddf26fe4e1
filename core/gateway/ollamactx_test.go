package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/mindrouter/mindrouter/bench/fakellm"
	"github.com/mindrouter/mindrouter/core/backend"
)

// TestClaudeCode_OllamaContextWindow (issue 20, item 7): with the model
// loaded at Ollama's default num_ctx 4096 (/api/ps says so), a Claude Code
// turn of about 10k tokens (system prompt and tools) was refused "window
// is 4096". The window is the model's own (/api/show model_info
// <arch>.context_length: 131072 here) bounded by the backend's max_num_ctx
// (default 32768), sent as options.num_ctx on the request, so Ollama
// reloads the model with room for it; only an input beyond that window is
// refused, in Anthropic's words.
func TestClaudeCode_OllamaContextWindow(t *testing.T) {
	e := startEnv(t, fakellm.Config{}, fakellm.Config{MaxModelLen: 131072},
		"discovery: {interval: 100ms, timeout: 500ms}\n")
	ctx := context.Background()
	// Someone (Ollama's own CLI, say) loaded the model at the default 4096.
	resp, err := http.Post(e.ollamaURL+"/api/chat", "application/json",
		strings.NewReader(`{"model":"`+ollamaModel+`","stream":false,"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	window := func() int {
		models, err := e.client.Models.List(ctx)
		if err != nil {
			return 0
		}
		for _, m := range models.Data {
			var x struct {
				ContextLength int `json:"context_length"`
			}
			if m.ID == ollamaModel && json.Unmarshal([]byte(m.RawJSON()), &x) == nil {
				return x.ContextLength
			}
		}
		return 0
	}
	// Wait for the per-model probe; on the old code the window stays the
	// loaded 4096 and the request below is refused.
	waitFor(5*time.Second, func() bool { return window() > 4096 })

	c := anthropicClient(e, false, adminKey)
	p := claudeCodeParams(ollamaModel)
	p.System = append(p.System, anthropic.BetaTextBlockParam{Text: strings.Repeat("word ", 9000)})
	p.Tools = []anthropic.BetaToolUnionParam{{OfTool: &anthropic.BetaToolParam{
		Name: "Bash", Description: anthropic.String(strings.Repeat("run ", 800)),
		InputSchema: anthropic.BetaToolInputSchemaParam{Properties: map[string]any{"command": map[string]any{"type": "string"}}}}}}
	msg, err := c.Beta.Messages.New(ctx, p)
	if err != nil {
		t.Fatalf("a 10k-token Claude Code turn: %v (window %d)", err, window())
	}
	if msg.Usage.InputTokens < 9000 { // fakellm (words of the messages) cuts a prompt longer than num_ctx
		t.Errorf("input_tokens %d: the backend cut the prompt", msg.Usage.InputTokens)
	}
	var sent struct {
		Options struct {
			NumCtx int `json:"num_ctx"`
		} `json:"options"`
	}
	if err := json.Unmarshal(e.ollama.LastBody("/api/chat"), &sent); err != nil || sent.Options.NumCtx != backend.DefaultMaxNumCtx {
		t.Errorf("num_ctx %d (%v), want %d (the trained 131072 bounded by max_num_ctx)", sent.Options.NumCtx, err, backend.DefaultMaxNumCtx)
	}
	if w := window(); w != backend.DefaultMaxNumCtx {
		t.Errorf("/v1/models context_length %d, want %d", w, backend.DefaultMaxNumCtx)
	}

	// Beyond the window: refused before the backend, as Claude Code expects.
	p.System = append(p.System, anthropic.BetaTextBlockParam{Text: strings.Repeat("word ", 30000)})
	_, err = c.Beta.Messages.New(ctx, p)
	var ae *anthropic.Error
	if !errors.As(err, &ae) || ae.StatusCode != 400 || !strings.HasPrefix(ae.Message, "prompt is too long: ") ||
		!strings.HasSuffix(ae.Message, " tokens > 32768 maximum") {
		t.Fatalf("beyond the window: %v, want 400 prompt is too long: N tokens > 32768 maximum", err)
	}
}
