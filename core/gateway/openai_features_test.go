package gateway

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	"github.com/mindrouter/mindrouter/bench/fakellm"
	"github.com/mindrouter/mindrouter/core/internal/matrix"
)

// weatherTool is the function tool the tool tests offer.
func weatherTool() openai.ChatCompletionToolUnionParam {
	return openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
		Name:        "get_weather",
		Description: openai.String("Weather for a city"),
		Parameters: shared.FunctionParameters{
			"type":       "object",
			"properties": map[string]any{"city": map[string]any{"type": "string"}},
			"required":   []string{"city"},
		},
	})
}

// TestOpenAISDK_Tools: a non-streamed tool call, then the tool's result
// sent back, reaches each engine in its own shape and ends in text.
func TestOpenAISDK_Tools(t *testing.T) {
	t.Parallel()
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, "")
	ctx := context.Background()
	for _, model := range []string{vllmModel, ollamaModel} {
		t.Run(model, func(t *testing.T) {
			p := chatParams(model, "Weather in Paris?")
			p.Tools = []openai.ChatCompletionToolUnionParam{weatherTool()}
			resp, err := e.client.Chat.Completions.New(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			ch := resp.Choices[0]
			if ch.FinishReason != "tool_calls" || len(ch.Message.ToolCalls) != 1 {
				t.Fatalf("choice = %+v", ch)
			}
			call := ch.Message.ToolCalls[0]
			var args map[string]any
			if call.ID == "" || call.Function.Name != "get_weather" || json.Unmarshal([]byte(call.Function.Arguments), &args) != nil {
				t.Fatalf("tool call = %+v", call)
			}

			// The round trip: the assistant's call and the tool's answer.
			p.Messages = append(p.Messages, ch.Message.ToParam(), openai.ToolMessage(`{"temp_c":21}`, call.ID))
			resp, err = e.client.Chat.Completions.New(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Choices[0].Message.Content == "" {
				t.Fatalf("after the tool result: %+v", resp.Choices[0])
			}
			path, srv := "/v1/chat/completions", e.vllm
			if model == ollamaModel {
				path, srv = "/api/chat", e.ollama
			}
			sent := string(srv.LastBody(path))
			if !strings.Contains(sent, `"get_weather"`) || !strings.Contains(sent, `temp_c`) {
				t.Fatalf("backend did not get the call and its result: %s", sent)
			}
			if model == vllmModel && !strings.Contains(sent, `"tool_call_id":"`+call.ID+`"`) {
				t.Fatalf("vLLM body lacks the tool_call_id: %s", sent)
			}
			matrix.Mark(t, "openai", "tools", engineOf(model))
		})
	}
}

// onePixelPNG is a 1×1 PNG.
const onePixelPNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="

// TestOpenAISDK_Images: an inline image reaches each engine in its own
// shape (vLLM: an image_url part; Ollama: base64 in images).
func TestOpenAISDK_Images(t *testing.T) {
	t.Parallel()
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, "")
	for _, model := range []string{vllmModel, ollamaModel} {
		t.Run(model, func(t *testing.T) {
			p := openai.ChatCompletionNewParams{Model: model, Messages: []openai.ChatCompletionMessageParamUnion{
				openai.UserMessage([]openai.ChatCompletionContentPartUnionParam{
					openai.TextContentPart("What is in this picture?"),
					openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: "data:image/png;base64," + onePixelPNG}),
				}),
			}}
			resp, err := e.client.Chat.Completions.New(context.Background(), p)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Choices[0].Message.Content == "" {
				t.Fatalf("choice = %+v", resp.Choices[0])
			}
			var sent struct {
				Messages []struct {
					Content json.RawMessage `json:"content"`
					Images  []string        `json:"images"`
				} `json:"messages"`
			}
			if model == ollamaModel {
				if err := json.Unmarshal(e.ollama.LastBody("/api/chat"), &sent); err != nil || len(sent.Messages) != 1 ||
					len(sent.Messages[0].Images) != 1 || sent.Messages[0].Images[0] != onePixelPNG {
					t.Fatalf("Ollama got %s (%v)", e.ollama.LastBody("/api/chat"), err)
				}
			} else {
				body := e.vllm.LastBody("/v1/chat/completions")
				if err := json.Unmarshal(body, &sent); err != nil || len(sent.Messages) != 1 ||
					!strings.Contains(string(sent.Messages[0].Content), `"url":"data:image/png;base64,`+onePixelPNG+`"`) {
					t.Fatalf("vLLM got %s (%v)", body, err)
				}
			}
			matrix.Mark(t, "openai", "images", engineOf(model))
		})
	}
}
