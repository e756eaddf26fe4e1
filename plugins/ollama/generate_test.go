package ollama

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// Wire format: https://github.com/ollama/ollama/blob/main/docs/api.md,
// "Generate a completion" (raw mode, streamed and not).

func TestGenerate_Request(t *testing.T) {
	temp := 0.25
	req := canon.ChatRequest{Model: "llama3.2:3b", Prompt: []string{"Once upon"}, MaxTokens: 8, Temperature: &temp,
		Stop: []string{"\n"}, ContextLength: 4096}
	h := newHarness()
	r := h.call(t, abi.OpRequestEncode, 0, nil, req.AppendJSON(nil))
	if r.Status != abi.StatusOK || r.meta(abi.MetaPath) != "/api/generate" {
		t.Fatalf("%s %s %s", r.Status, r.Error, r.meta(abi.MetaPath))
	}
	var body struct {
		Model, Prompt string
		Raw, Stream   bool
		Options       map[string]any
	}
	if err := json.Unmarshal(r.Payload, &body); err != nil || body.Prompt != "Once upon" || !body.Raw || body.Stream ||
		body.Options["num_predict"] != 8.0 || body.Options["temperature"] != 0.25 || body.Options["num_ctx"] != 4096.0 {
		t.Fatalf("%s (%v)", r.Payload, err)
	}
	for _, bad := range []canon.ChatRequest{
		{Model: "m", Prompt: []string{"a", "b"}},
		{Model: "m", Prompt: []string{"a"}, Logprobs: true},
		{Model: "m", Prompt: []string{"a"}, Tools: []canon.Tool{{Name: "f"}}},
		{Model: "m", Prompt: []string{"a"}, N: 2},
	} {
		if r := h.call(t, abi.OpRequestEncode, 0, nil, bad.AppendJSON(nil)); r.Status != abi.StatusBadInput {
			t.Errorf("%+v: %s", bad, r.Status)
		}
	}
}

func TestGenerate_Response(t *testing.T) {
	body := `{"model":"llama3.2:3b","created_at":"2026-11-30T10:00:00.123456Z","response":" there <think>kept</think>","done":true,` +
		`"done_reason":"length","context":[1,2,3],"total_duration":5,"prompt_eval_count":3,"eval_count":8}`
	r := newHarness().call(t, abi.OpResponseDecode, 0, nil, []byte(body))
	var resp canon.ChatResponse
	if r.Status != abi.StatusOK || resp.DecodeJSON(r.Payload) != nil {
		t.Fatalf("%s %s", r.Status, r.Error)
	}
	if c := resp.Choices[0]; c.Message.Text() != " there <think>kept</think>" || c.Message.Reasoning != "" ||
		c.FinishReason != canon.FinishLength || resp.Usage.PromptTokens != 3 || resp.Usage.CompletionTokens != 8 {
		t.Fatalf("%+v", resp)
	}
}

func TestGenerate_Stream(t *testing.T) {
	lines := []string{
		`{"model":"m","created_at":"2026-11-30T10:00:00Z","response":"Hel","done":false}`,
		`{"model":"m","created_at":"2026-11-30T10:00:00Z","response":"lo","done":false}`,
		`{"model":"m","created_at":"2026-11-30T10:00:00Z","response":"","done":true,"done_reason":"stop","prompt_eval_count":2,"eval_count":2}`,
	}
	var events []byte
	for _, l := range lines {
		events = abi.AppendItem(events, []byte(l))
	}
	r := newHarness().call(t, abi.OpStreamDecode, abi.FlagFirst|abi.FlagEnd, nil, events)
	if r.Status != abi.StatusOK || !r.done() {
		t.Fatalf("%s %s done=%v", r.Status, r.Error, r.done())
	}
	var text strings.Builder
	finish := canon.FinishNone
	var usage *canon.Usage
	for _, it := range splitItems(t, r.Payload) {
		var ch canon.ChatChunk
		if err := ch.DecodeJSON(it); err != nil {
			t.Fatal(err)
		}
		for _, c := range ch.Choices {
			text.WriteString(c.Delta.Content)
			if c.FinishReason != canon.FinishNone {
				finish = c.FinishReason
			}
		}
		if ch.Usage != nil {
			usage = ch.Usage
		}
	}
	if text.String() != "Hello" || finish != canon.FinishStop || usage == nil || usage.CompletionTokens != 2 {
		t.Fatalf("text %q finish %q usage %+v", text.String(), finish, usage)
	}
}
