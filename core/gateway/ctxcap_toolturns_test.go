package gateway

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/mindrouter/mindrouter/bench/fakellm"
)

// TestContextCap_VLLMToolCallTurns (issue 20, item 14): an agent's
// conversation near the context limit, with many tool-call turns (Claude
// Code's shape), is capped by vLLM's own count and the backend takes it.
// fakellm's /tokenize used to count one token less per assistant
// tool-call message than its chat path, so eight turns overran the exact
// count's 4-token margin and the backend refused max_tokens (400).
func TestContextCap_VLLMToolCallTurns(t *testing.T) {
	e := startEnv(t, fakellm.Config{MaxModelLen: ctxWindow, Tokens: 5000}, fakellm.Config{}, "")
	msgs := []any{
		map[string]any{"role": "system", "content": "Be brief."},
		map[string]any{"role": "user", "content": strings.Repeat(nonsenseW, capWords)},
	}
	for i := range 8 {
		id := "call_" + strconv.Itoa(i)
		msgs = append(msgs,
			map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
				"id": id, "type": "function", "function": map[string]any{"name": "get_weather", "arguments": `{"city":"Paris"}`}}}},
			map[string]any{"role": "tool", "tool_call_id": id, "content": "sunny"})
	}
	body, _ := json.Marshal(map[string]any{"model": vllmModel, "max_tokens": bigOutput, "messages": msgs,
		"tools": []any{map[string]any{"type": "function", "function": map[string]any{"name": "get_weather",
			"parameters": map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}}}}}})
	status, _, v := rawPost(t, e.base+"/v1/chat/completions", adminKey, string(body))
	if status != 200 {
		t.Fatalf("status %d: %v", status, v)
	}
	usage, _ := v["usage"].(map[string]any)
	prompt, _ := usage["prompt_tokens"].(float64)
	sent := sentMaxTokens(t, e.vllm.LastBody(chatPath))
	if int(prompt)+sent+4 != ctxWindow {
		t.Errorf("prompt %v + max_tokens sent %d + 4 != window %d", prompt, sent, ctxWindow)
	}
	if n := e.vllm.Stats().Requests[tokenizeAt]; n != 1 {
		t.Errorf("/tokenize called %d times, want 1", n)
	}
}
