package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	"github.com/mindrouter/mindrouter/bench/fakellm"
	"github.com/mindrouter/mindrouter/core/internal/matrix"
)

// Chat Completions features end to end, with openai-go against a vLLM- and
// an Ollama-flavoured fakellm: what each engine can do comes back in
// OpenAI's shapes (https://platform.openai.com/docs/api-reference/chat),
// what it cannot is a 400 in OpenAI's error shape.

// wantBadRequest checks err is a 400 whose message contains msg.
func wantBadRequest(t *testing.T, err error, msg string) {
	t.Helper()
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) {
		t.Fatalf("err = %v, want an API error", err)
	}
	if apiErr.StatusCode != 400 || apiErr.Type != "invalid_request_error" || !strings.Contains(apiErr.Message, msg) {
		t.Fatalf("status %d type %q message %q, want 400 invalid_request_error containing %q", apiErr.StatusCode, apiErr.Type, apiErr.Message, msg)
	}
}

// streamAll runs a streamed request and returns the accumulated completion
// and the raw chunks' reasoning_content per choice.
func streamAll(t *testing.T, e *env, p openai.ChatCompletionNewParams) (openai.ChatCompletionAccumulator, map[int64]string, []openai.ChatCompletionChunk) {
	t.Helper()
	stream := e.client.Chat.Completions.NewStreaming(context.Background(), p)
	var acc openai.ChatCompletionAccumulator
	reasoning := map[int64]string{}
	var chunks []openai.ChatCompletionChunk
	for stream.Next() {
		c := stream.Current()
		if !acc.AddChunk(c) {
			t.Fatalf("accumulator rejected %s", c.RawJSON())
		}
		chunks = append(chunks, c)
		for _, ch := range c.Choices {
			reasoning[ch.Index] += extraString(t, ch.Delta.JSON.ExtraFields["reasoning_content"].Raw())
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	return acc, reasoning, chunks
}

// extraString decodes a raw JSON string field ("" when absent or null).
func extraString(t *testing.T, raw string) string {
	t.Helper()
	if raw == "" || raw == "null" {
		return ""
	}
	var s string
	if err := json.Unmarshal([]byte(raw), &s); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	return s
}

func TestOpenAISDK_N(t *testing.T) {
	t.Parallel()
	e := startEnv(t, fakellm.Config{Tokens: 5}, fakellm.Config{}, "")
	ctx := context.Background()
	p := chatParams(vllmModel, "Say hi")
	p.N = openai.Int(3)
	resp, err := e.client.Chat.Completions.New(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Choices) != 3 {
		t.Fatalf("%d choices", len(resp.Choices))
	}
	for i, c := range resp.Choices {
		if c.Index != int64(i) || c.Message.Content == "" || c.FinishReason != "stop" {
			t.Errorf("choice %d: %+v", i, c)
		}
	}
	if resp.Usage.CompletionTokens != 15 {
		t.Errorf("usage %+v, want 3 × 5 completion tokens", resp.Usage)
	}

	p.N = openai.Int(2)
	p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	acc, _, _ := streamAll(t, e, p)
	if len(acc.Choices) != 2 || acc.Choices[0].Message.Content != resp.Choices[0].Message.Content ||
		acc.Choices[1].Message.Content != resp.Choices[1].Message.Content || acc.Choices[1].FinishReason != "stop" {
		t.Errorf("streamed choices %+v", acc.Choices)
	}
	if acc.Usage.CompletionTokens != 10 {
		t.Errorf("streamed usage %+v", acc.Usage)
	}

	// Ollama gives one choice per request: refused, not silently one.
	p = chatParams(ollamaModel, "Say hi")
	p.N = openai.Int(2)
	_, err = e.client.Chat.Completions.New(ctx, p)
	wantBadRequest(t, err, "n > 1 is not supported by Ollama backends")
}

func TestOpenAISDK_Logprobs(t *testing.T) {
	t.Parallel()
	e := startEnv(t, fakellm.Config{Tokens: 4}, fakellm.Config{Tokens: 4}, "")
	ctx := context.Background()
	for _, model := range []string{vllmModel, ollamaModel} {
		t.Run(model, func(t *testing.T) {
			p := chatParams(model, "Say hi")
			p.Logprobs = openai.Bool(true)
			p.TopLogprobs = openai.Int(2)
			resp, err := e.client.Chat.Completions.New(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			lp := resp.Choices[0].Logprobs.Content
			text := ""
			for _, tok := range lp {
				text += tok.Token
				if tok.Logprob > 0 || len(tok.TopLogprobs) != 2 || len(tok.Bytes) != len(tok.Token) {
					t.Errorf("entry %+v", tok)
				}
			}
			if len(lp) != 4 || text != resp.Choices[0].Message.Content {
				t.Fatalf("logprobs tokens %q, content %q", text, resp.Choices[0].Message.Content)
			}

			_, _, chunks := streamAll(t, e, p)
			streamed := ""
			for _, c := range chunks {
				for _, ch := range c.Choices {
					for _, tok := range ch.Logprobs.Content {
						streamed += tok.Token
					}
				}
			}
			if streamed != text {
				t.Errorf("streamed logprobs tokens %q, want %q", streamed, text)
			}
		})
	}

	// Without logprobs the field is null, as OpenAI writes it.
	resp, err := e.client.Chat.Completions.New(ctx, chatParams(vllmModel, "Say hi"))
	if err != nil {
		t.Fatal(err)
	}
	if raw := resp.Choices[0].JSON.Logprobs.Raw(); raw != "null" {
		t.Errorf("logprobs = %s, want null", raw)
	}
	p := chatParams(vllmModel, "Say hi")
	p.TopLogprobs = openai.Int(2)
	_, err = e.client.Chat.Completions.New(ctx, p)
	wantBadRequest(t, err, "top_logprobs requires logprobs to be true")
}

// Stop and seed reach both engines and are accepted; fakellm's output is a
// function of the prompt, so a seeded request repeats itself.
func TestOpenAISDK_StopSeed(t *testing.T) {
	t.Parallel()
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, "")
	ctx := context.Background()
	for _, model := range []string{vllmModel, ollamaModel} {
		t.Run(model, func(t *testing.T) {
			var first string
			for i, stop := range []openai.ChatCompletionNewParamsStopUnion{
				{OfString: openai.String("\n\n")},
				{OfStringArray: []string{"END", "STOP"}},
			} {
				p := chatParams(model, "Count")
				p.Stop = stop
				p.Seed = openai.Int(42)
				p.User = openai.String("user-7")
				p.MaxCompletionTokens = openai.Int(8)
				resp, err := e.client.Chat.Completions.New(ctx, p)
				if err != nil {
					t.Fatal(err)
				}
				c := resp.Choices[0].Message.Content
				if i == 0 {
					first = c
				} else if c != first {
					t.Errorf("seeded request gave %q then %q", first, c)
				}
				if resp.Usage.CompletionTokens > 8 {
					t.Errorf("max_completion_tokens 8, got %d", resp.Usage.CompletionTokens)
				}
				checkSent(t, e, model, stop.OfStringArray)
			}
		})
	}
}

// checkSent checks that the backend got seed 42, the stop strings (stop;
// nil: the single "\n\n") and the token limit 8, in its engine's
// spelling (https://github.com/ollama/ollama/blob/main/docs/api.md: options).
func checkSent(t *testing.T, e *env, model string, stop []string) {
	t.Helper()
	if stop == nil {
		stop = []string{"\n\n"}
	}
	var got struct {
		Seed      *int64   `json:"seed"`
		Stop      []string `json:"stop"`
		MaxTokens int      `json:"max_tokens"`
		Options   *struct {
			Seed       *int64   `json:"seed"`
			Stop       []string `json:"stop"`
			NumPredict int      `json:"num_predict"`
		} `json:"options"`
	}
	body := e.vllm.LastBody("/v1/chat/completions")
	if model == ollamaModel {
		body = e.ollama.LastBody("/api/chat")
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	seed, sent, limit := got.Seed, got.Stop, got.MaxTokens
	if o := got.Options; o != nil {
		seed, sent, limit = o.Seed, o.Stop, o.NumPredict
	}
	if seed == nil || *seed != 42 || strings.Join(sent, "|") != strings.Join(stop, "|") || limit != 8 {
		t.Errorf("backend got %s", body)
	}
}

func TestOpenAISDK_JSONSchema(t *testing.T) {
	t.Parallel()
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, "")
	ctx := context.Background()
	schema := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"city":       map[string]any{"type": "string"},
			"population": map[string]any{"type": "integer"},
		},
		"required":             []string{"city", "population"},
		"additionalProperties": false,
	}
	for _, model := range []string{vllmModel, ollamaModel} {
		for _, stream := range []bool{false, true} {
			p := chatParams(model, "Largest city?")
			p.ResponseFormat = openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
				JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: "city", Schema: schema, Strict: openai.Bool(true)},
			}}
			var content string
			if stream {
				acc, _, _ := streamAll(t, e, p)
				content = acc.Choices[0].Message.Content
			} else {
				resp, err := e.client.Chat.Completions.New(ctx, p)
				if err != nil {
					t.Fatal(err)
				}
				content = resp.Choices[0].Message.Content
			}
			var got struct {
				City       *string `json:"city"`
				Population *int64  `json:"population"`
			}
			if err := json.Unmarshal([]byte(content), &got); err != nil || got.City == nil || got.Population == nil {
				t.Errorf("%s stream=%v: content %q does not follow the schema (%v)", model, stream, content, err)
			}
		}
		matrix.Mark(t, "openai", "json-schema", engineOf(model))
	}
}

func TestOpenAISDK_ReasoningEffort(t *testing.T) {
	t.Parallel()
	const ollamaThinker = "qwen3:8b"
	e := startEnv(t, fakellm.Config{}, fakellm.Config{Models: []string{ollamaThinker}}, "")
	ctx := context.Background()
	for _, model := range []string{vllmModel, ollamaThinker} {
		t.Run(model, func(t *testing.T) {
			for _, tc := range []struct {
				effort shared.ReasoningEffort
				think  bool
			}{{shared.ReasoningEffortHigh, true}, {shared.ReasoningEffortNone, false}} {
				p := chatParams(model, "Why is the sky blue?")
				p.ReasoningEffort = tc.effort
				resp, err := e.client.Chat.Completions.New(ctx, p)
				if err != nil {
					t.Fatal(err)
				}
				m := resp.Choices[0].Message
				r := extraString(t, m.JSON.ExtraFields["reasoning_content"].Raw())
				if (r != "") != tc.think || m.Content == "" {
					t.Errorf("effort %q: reasoning_content %q content %q", tc.effort, r, m.Content)
				}
				acc, sr, _ := streamAll(t, e, p)
				if sr[0] != r || acc.Choices[0].Message.Content != m.Content {
					t.Errorf("effort %q streamed: reasoning %q content %q; non-streamed %q, %q", tc.effort, sr[0], acc.Choices[0].Message.Content, r, m.Content)
				}
			}
			matrix.Mark(t, "openai", "thinking", matrix.Engine(model == ollamaThinker))
		})
	}
}

// A reasoning model whose <think> block arrives in content (vLLM without
// --reasoning-parser, Ollama not parsing it): clients get reasoning_content
// and clean content, streamed (tags cut between events) and not.
func TestOpenAISDK_ReasoningFromThinkTags(t *testing.T) {
	t.Parallel()
	const vModel, oModel = "deepseek-r1-distill-qwen-7b", "deepseek-r1:7b"
	cfg := fakellm.Config{DefaultThinking: true, ThinkInContent: true, Tokens: 6, ReasoningTokens: 5}
	fv, fo := cfg, cfg
	fv.Models, fo.Models = []string{vModel}, []string{oModel}
	e := startEnv(t, fv, fo, "")
	ctx := context.Background()
	for _, model := range []string{vModel, oModel} {
		t.Run(model, func(t *testing.T) {
			resp, err := e.client.Chat.Completions.New(ctx, chatParams(model, "Hello there"))
			if err != nil {
				t.Fatal(err)
			}
			m := resp.Choices[0].Message
			r := extraString(t, m.JSON.ExtraFields["reasoning_content"].Raw())
			if r == "" || strings.Contains(r+m.Content, "think>") || m.Content == "" || strings.HasPrefix(m.Content, "\n") {
				t.Fatalf("reasoning_content %q content %q", r, m.Content)
			}
			acc, sr, _ := streamAll(t, e, chatParams(model, "Hello there"))
			if sr[0] != r || acc.Choices[0].Message.Content != m.Content {
				t.Errorf("streamed reasoning %q content %q; non-streamed %q, %q", sr[0], acc.Choices[0].Message.Content, r, m.Content)
			}
			matrix.Mark(t, "openai", "thinking", matrix.Engine(model == oModel))
		})
	}
}
