package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/ollama/ollama/api"
	"github.com/openai/openai-go/v3"

	"github.com/mindrouter/mindrouter/bench/fakellm"
	"github.com/mindrouter/mindrouter/core/internal/matrix"
)

// TestOpenAISDK_Completions: the legacy /v1/completions through the
// official client, streamed and not, on both engines: answered as
// text_completion objects, sent to vLLM's /v1/completions and to Ollama's
// raw /api/generate, never converted to chat.
func TestOpenAISDK_Completions(t *testing.T) {
	t.Parallel()
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, "")
	ctx := context.Background()
	for _, model := range []string{vllmModel, ollamaModel} {
		t.Run(model, func(t *testing.T) {
			p := openai.CompletionNewParams{
				Model:     openai.CompletionNewParamsModel(model),
				Prompt:    openai.CompletionNewParamsPromptUnion{OfString: openai.String("Once upon a time")},
				MaxTokens: openai.Int(12),
			}
			resp, err := e.client.Completions.New(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Object != "text_completion" || !strings.HasPrefix(resp.ID, "cmpl-") || len(resp.Choices) != 1 ||
				resp.Choices[0].Text == "" || resp.Usage.CompletionTokens == 0 {
				t.Fatalf("response %s", resp.RawJSON())
			}
			// The backend got a raw completion, not a chat.
			if model == vllmModel {
				var sent map[string]any
				if err := json.Unmarshal(e.vllm.LastBody("/v1/completions"), &sent); err != nil || sent["prompt"] != "Once upon a time" || sent["messages"] != nil {
					t.Fatalf("vLLM got %s", e.vllm.LastBody("/v1/completions"))
				}
			} else {
				var sent map[string]any
				if err := json.Unmarshal(e.ollama.LastBody("/api/generate"), &sent); err != nil || sent["prompt"] != "Once upon a time" || sent["raw"] != true {
					t.Fatalf("Ollama got %s", e.ollama.LastBody("/api/generate"))
				}
			}

			p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
			stream := e.client.Completions.NewStreaming(ctx, p)
			var text strings.Builder
			finish := ""
			usage := int64(0)
			for stream.Next() {
				c := stream.Current()
				if c.Object != "text_completion" {
					t.Fatalf("chunk %s", c.RawJSON())
				}
				for _, ch := range c.Choices {
					text.WriteString(ch.Text)
					if ch.FinishReason != "" {
						finish = string(ch.FinishReason)
					}
				}
				if c.Usage.TotalTokens > 0 {
					usage = c.Usage.CompletionTokens
				}
			}
			if err := stream.Err(); err != nil {
				t.Fatal(err)
			}
			if text.String() != resp.Choices[0].Text || finish != string(resp.Choices[0].FinishReason) || usage != resp.Usage.CompletionTokens {
				t.Fatalf("streamed %q finish %q usage %d; non-streamed %q %q %d", text.String(), finish, usage,
					resp.Choices[0].Text, resp.Choices[0].FinishReason, resp.Usage.CompletionTokens)
			}
			matrix.Mark(t, "openai", "completions", engineOf(model))
		})
	}
	// Two prompts: vLLM completes both; Ollama refuses in OpenAI's shape.
	p := openai.CompletionNewParams{Model: openai.CompletionNewParamsModel(vllmModel),
		Prompt: openai.CompletionNewParamsPromptUnion{OfArrayOfStrings: []string{"a", "b"}}, MaxTokens: openai.Int(4)}
	resp, err := e.client.Completions.New(ctx, p)
	if err != nil || len(resp.Choices) != 2 || resp.Choices[1].Index != 1 {
		t.Fatalf("two prompts: %v %+v", err, resp)
	}
	p.Model = openai.CompletionNewParamsModel(ollamaModel)
	_, err = e.client.Completions.New(ctx, p)
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || !strings.Contains(apiErr.Message, "one prompt") {
		t.Fatalf("Ollama, two prompts: %v", err)
	}
}

// TestOllamaSDK_GenerateRaw: Ollama's raw generate through the official
// client is a text completion on both engines: vLLM's /v1/completions,
// Ollama's raw /api/generate, the prompt untouched.
func TestOllamaSDK_GenerateRaw(t *testing.T) {
	t.Parallel()
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, "")
	c := ollamaClient(t, e)
	for _, model := range []string{vllmModel, ollamaModel} {
		t.Run(model, func(t *testing.T) {
			var texts [2]string
			for i, stream := range []bool{false, true} {
				req := api.GenerateRequest{Model: model, Prompt: "<|user|>hi<|assistant|>", Raw: true, Stream: &stream,
					Options: map[string]any{"num_predict": 8}}
				var last api.GenerateResponse
				err := c.Generate(context.Background(), &req, func(r api.GenerateResponse) error {
					texts[i] += r.Response
					last = r
					return nil
				})
				if err != nil || !last.Done || last.EvalCount == 0 || texts[i] == "" {
					t.Fatalf("stream %v: %v %+v %q", stream, err, last, texts[i])
				}
				path, srv := "/v1/completions", e.vllm
				if model == ollamaModel {
					path, srv = "/api/generate", e.ollama
				}
				var sent map[string]any
				if err := json.Unmarshal(srv.LastBody(path), &sent); err != nil || sent["prompt"] != "<|user|>hi<|assistant|>" || sent["messages"] != nil {
					t.Fatalf("backend got %s", srv.LastBody(path))
				}
			}
			if texts[0] != texts[1] {
				t.Fatalf("streamed %q, non-streamed %q", texts[1], texts[0])
			}
			matrix.Mark(t, "ollama", "completions", engineOf(model))
		})
	}
}
