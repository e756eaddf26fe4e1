package gateway

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"

	"github.com/mindrouter/mindrouter/bench/fakellm"
)

// Context capping: an input longer than the model's window is a 400 in
// the client's dialect and never reaches the backend; a request whose
// max_tokens does not fit beside its input is capped instead of refused
// by the backend (fakellm refuses as vLLM does).
func TestContextCapping(t *testing.T) {
	t.Parallel()
	e := startEnv(t, fakellm.Config{MaxModelLen: 1000, Tokens: 5000}, fakellm.Config{}, "")
	ctx := context.Background()
	words := func(n int) string { return strings.Repeat("word ", n) }

	before := e.vllm.Stats().Requests["/v1/chat/completions"]
	_, err := e.client.Chat.Completions.New(ctx, chatParams(vllmModel, words(2000)))
	var oe *openai.Error
	if !errors.As(err, &oe) || oe.StatusCode != 400 || oe.Code != "context_length_exceeded" {
		t.Fatalf("over-long input: %v", err)
	}
	ac := anthropicClient(e, false, adminKey)
	_, err = ac.Messages.New(ctx, anthropicParams(vllmModel, words(2000)))
	var ae *anthropic.Error
	if !errors.As(err, &ae) || ae.StatusCode != 400 || !strings.Contains(ae.Message, "prompt is too long: ") { // Anthropic's words (plugins/anthropic errors.go)
		t.Fatalf("over-long input, Anthropic: %v", err)
	}
	if got := e.vllm.Stats().Requests["/v1/chat/completions"]; got != before {
		t.Fatalf("the backend was called %d times for inputs that cannot fit", got-before)
	}

	p := chatParams(vllmModel, words(700))
	p.MaxTokens = openai.Int(500)
	resp, err := e.client.Chat.Completions.New(ctx, p)
	if err != nil {
		t.Fatalf("a max_tokens that does not fit beside the input: %v", err)
	}
	if resp.Choices[0].FinishReason != "length" || resp.Usage.PromptTokens+resp.Usage.CompletionTokens > 1000 {
		t.Errorf("finish %q usage %+v", resp.Choices[0].FinishReason, resp.Usage)
	}
	// Far from the limit nothing changes: the client's max_tokens stands.
	p = chatParams(vllmModel, "hi")
	p.MaxTokens = openai.Int(7)
	resp, err = e.client.Chat.Completions.New(ctx, p)
	if err != nil || resp.Usage.CompletionTokens != 7 {
		t.Errorf("short request: %v %+v", err, resp.Usage)
	}
}
