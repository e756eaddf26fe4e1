package gateway

import (
	"context"
	"errors"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/mindrouter/mindrouter/bench/fakellm"
)

// TestAnthropicSDK_CountTokens: count_tokens through the official client,
// on both routes: the gateway's count (as /v1/tokenize gives it), no
// backend call, an unknown model 404 in Anthropic's error shape.
func TestAnthropicSDK_CountTokens(t *testing.T) {
	t.Parallel()
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, "")
	ctx := context.Background()
	for _, prefixed := range []bool{false, true} {
		c := anthropicClient(e, prefixed, adminKey)
		for _, model := range []string{vllmModel, ollamaModel} {
			res, err := c.Messages.CountTokens(ctx, anthropic.MessageCountTokensParams{
				Model:    anthropic.Model(model),
				Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hello world"))},
			})
			// 3 for the reply + 3 for the message + "user" (1) + "hello world" (2).
			if err != nil || res.InputTokens != 9 {
				t.Fatalf("prefixed %v %s: %v %+v", prefixed, model, err, res)
			}
			// A system prompt and a tool count too.
			res2, err := c.Messages.CountTokens(ctx, anthropic.MessageCountTokensParams{
				Model:    anthropic.Model(model),
				System:   anthropic.MessageCountTokensParamsSystemUnion{OfString: anthropic.String("Be brief.")},
				Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hello world"))},
			})
			if err != nil || res2.InputTokens <= res.InputTokens {
				t.Fatalf("with a system prompt: %v %+v", err, res2)
			}
		}
		_, err := c.Messages.CountTokens(ctx, anthropic.MessageCountTokensParams{Model: "nope",
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("x"))}})
		var apiErr *anthropic.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 404 {
			t.Fatalf("unknown model: %v", err)
		}
	}
	if n := e.vllm.Stats().Requests["/v1/chat/completions"] + e.ollama.Stats().Requests["/api/chat"]; n != 0 {
		t.Fatalf("count_tokens called a backend %d times", n)
	}
}
