package gateway

import (
	"context"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/mindrouter/mindrouter/bench/fakellm"
)

// TestContextCap_Responses: /v1/responses caps max_output_tokens to what
// the context window leaves, like the chat routes, instead of passing on
// an output the backend refuses (400 context_length_exceeded). The request
// is Qwen Code's Responses mode: max_output_tokens the whole window.
func TestContextCap_Responses(t *testing.T) {
	t.Parallel()
	e := startEnv(t, fakellm.Config{MaxModelLen: ctxWindow, Tokens: 5000}, fakellm.Config{}, "")
	resp, err := e.client.Responses.New(context.Background(), responses.ResponseNewParams{
		Model:           vllmModel,
		Instructions:    openai.String("Be brief."),
		Input:           responses.ResponseNewParamsInputUnion{OfString: openai.String("Write a long story.")},
		MaxOutputTokens: openai.Int(ctxWindow),
	})
	if err != nil {
		t.Fatalf("max_output_tokens = the window: %v", err)
	}
	got := sentMaxTokens(t, e.vllm.LastBody(chatPath))
	if got <= 0 || got >= ctxWindow {
		t.Fatalf("max_tokens sent = %d, want the room the window leaves (< %d)", got, ctxWindow)
	}
	if resp.Usage.InputTokens+resp.Usage.OutputTokens > ctxWindow {
		t.Fatalf("usage %+v over the window", resp.Usage)
	}
}
