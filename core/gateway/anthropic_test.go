package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/mindrouter/mindrouter/bench/fakellm"
	"github.com/mindrouter/mindrouter/core/internal/matrix"
)

// The official anthropic-sdk-go v2 client against the gateway's Anthropic
// Messages routes, in front of the vLLM-flavoured and the Ollama-flavoured
// fakellm. The SDK sends x-api-key and anthropic-version, as against
// api.anthropic.com.

// anthropicClient is a client of the gateway's Anthropic routes: /v1/messages
// with prefixed false, /anthropic/v1/messages (and /anthropic/v1/models)
// with prefixed true.
func anthropicClient(e *env, prefixed bool, key string) anthropic.Client {
	base := e.base + "/"
	if prefixed {
		base = e.base + "/anthropic/"
	}
	return anthropic.NewClient(aoption.WithBaseURL(base), aoption.WithAPIKey(key), aoption.WithMaxRetries(0))
}

func anthropicParams(model, prompt string) anthropic.MessageNewParams {
	return anthropic.MessageNewParams{
		Model:     anthropic.Model(model),
		MaxTokens: 256,
		System:    []anthropic.TextBlockParam{{Text: "Be brief."}},
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(prompt))},
	}
}

// blocksOf splits a message's content by kind.
func blocksOf(m *anthropic.Message) (thinking, text string, calls []anthropic.ToolUseBlock) {
	for _, b := range m.Content {
		switch v := b.AsAny().(type) {
		case anthropic.ThinkingBlock:
			thinking += v.Thinking
		case anthropic.TextBlock:
			text += v.Text
		case anthropic.ToolUseBlock:
			calls = append(calls, v)
		}
	}
	return thinking, text, calls
}

// streamMessage runs p streamed and accumulates the events as the SDK's
// documentation shows, checking the event order on the way (the SDK
// consumes ping events itself).
func streamMessage(t *testing.T, c anthropic.Client, p anthropic.MessageNewParams) anthropic.Message {
	t.Helper()
	stream := c.Messages.NewStreaming(context.Background(), p)
	var acc anthropic.Message
	var types []string
	for stream.Next() {
		ev := stream.Current()
		types = append(types, ev.Type)
		if err := acc.Accumulate(ev); err != nil {
			t.Fatalf("accumulate %s: %v", ev.RawJSON(), err)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if n := len(types); n < 3 || types[0] != "message_start" || types[n-2] != "message_delta" || types[n-1] != "message_stop" {
		t.Fatalf("event order %v", types)
	}
	return acc
}

func TestAnthropicSDK_Text(t *testing.T) {
	t.Parallel()
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, "")
	for _, model := range []string{vllmModel, ollamaModel} {
		for _, prefixed := range []bool{false, true} {
			c := anthropicClient(e, prefixed, adminKey)
			msg, err := c.Messages.New(context.Background(), anthropicParams(model, "Tell me about gateways"))
			if err != nil {
				t.Fatalf("%s: %v", model, err)
			}
			_, text, calls := blocksOf(msg)
			if !strings.HasPrefix(msg.ID, "msg_") || string(msg.Model) != model || msg.Role != "assistant" ||
				text == "" || len(calls) != 0 || msg.StopReason != anthropic.StopReasonEndTurn {
				t.Fatalf("%s: message %s", model, msg.RawJSON())
			}
			if msg.Usage.InputTokens == 0 || msg.Usage.OutputTokens == 0 {
				t.Fatalf("%s: usage %s", model, msg.Usage.RawJSON())
			}
			// The system prompt reached the backend as the first message.
			if sent := string(lastBackendBody(e, model)); !strings.Contains(sent, `"system"`) || !strings.Contains(sent, "Be brief.") {
				t.Fatalf("%s: backend got %s", model, sent)
			}
		}
		matrix.Mark(t, "anthropic", "text", engineOf(model))
	}
}

// TestAnthropicSDK_Stream: the same prompt streamed gives the same text
// and the same usage (fakellm is deterministic); the input tokens, known
// only at the end of a backend stream, arrive in message_delta.
func TestAnthropicSDK_Stream(t *testing.T) {
	t.Parallel()
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, "")
	c := anthropicClient(e, true, adminKey)
	for _, model := range []string{vllmModel, ollamaModel} {
		t.Run(model, func(t *testing.T) {
			p := anthropicParams(model, "Tell me about streaming")
			msg, err := c.Messages.New(context.Background(), p)
			if err != nil {
				t.Fatal(err)
			}
			acc := streamMessage(t, c, p)
			_, want, _ := blocksOf(msg)
			_, got, _ := blocksOf(&acc)
			if got != want || got == "" {
				t.Fatalf("streamed %q, non-streamed %q", got, want)
			}
			if len(acc.Content) != 1 || acc.StopReason != msg.StopReason || !strings.HasPrefix(acc.ID, "msg_") || string(acc.Model) != model {
				t.Fatalf("streamed message %s", acc.RawJSON())
			}
			if acc.Usage.InputTokens != msg.Usage.InputTokens || acc.Usage.OutputTokens != msg.Usage.OutputTokens {
				t.Fatalf("streamed usage %s, non-streamed %s", acc.Usage.RawJSON(), msg.Usage.RawJSON())
			}
			matrix.Mark(t, "anthropic", "stream", engineOf(model))
		})
	}
}

func anthropicWeatherTool() anthropic.ToolUnionParam {
	tool := anthropic.ToolUnionParamOfTool(anthropic.ToolInputSchemaParam{
		Properties: map[string]any{"city": map[string]any{"type": "string"}, "days": map[string]any{"type": "integer"}},
		Required:   []string{"city", "days"},
	}, "get_weather")
	tool.OfTool.Description = anthropic.String("Weather for a city")
	return tool
}

// TestAnthropicSDK_Tools: the model calls the tool (tool_use, stop_reason
// tool_use), the client sends the turn back with a tool_result, and the
// backend gets the call and its result paired; streamed, the call's input
// arrives as input_json_delta fragments that accumulate to the same JSON.
func TestAnthropicSDK_Tools(t *testing.T) {
	t.Parallel()
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, "")
	c := anthropicClient(e, false, adminKey)
	for _, model := range []string{vllmModel, ollamaModel} {
		t.Run(model, func(t *testing.T) {
			p := anthropicParams(model, "Weather in Paris?")
			p.Tools = []anthropic.ToolUnionParam{anthropicWeatherTool()}
			msg, err := c.Messages.New(context.Background(), p)
			if err != nil {
				t.Fatal(err)
			}
			_, _, calls := blocksOf(msg)
			if len(calls) != 1 || calls[0].Name != "get_weather" || calls[0].ID == "" || msg.StopReason != anthropic.StopReasonToolUse {
				t.Fatalf("message %s", msg.RawJSON())
			}
			var args map[string]any
			if err := json.Unmarshal(calls[0].Input, &args); err != nil || args["city"] == nil {
				t.Fatalf("input %s: %v", calls[0].Input, err)
			}

			// The round trip: the assistant turn as the SDK gives it back,
			// then the tool's result.
			p.Messages = append(p.Messages, msg.ToParam(),
				anthropic.NewUserMessage(anthropic.NewToolResultBlock(calls[0].ID, `{"temp_c": 21}`, false)))
			final, err := c.Messages.New(context.Background(), p)
			if err != nil {
				t.Fatal(err)
			}
			if _, text, _ := blocksOf(final); final.StopReason == "" || (text == "" && final.StopReason != anthropic.StopReasonToolUse) {
				t.Fatalf("final %s", final.RawJSON())
			}
			sent := string(lastBackendBody(e, model))
			if !strings.Contains(sent, `"get_weather"`) || !strings.Contains(sent, "temp_c") {
				t.Fatalf("backend did not get the call and its result: %s", sent)
			}
			if model == vllmModel && !strings.Contains(sent, `"tool_call_id":"`+calls[0].ID+`"`) {
				t.Fatalf("vLLM body lacks the tool_call_id: %s", sent)
			}
			matrix.Mark(t, "anthropic", "tools", engineOf(model))

			p.Messages = p.Messages[:1]
			acc := streamMessage(t, c, p)
			_, _, scalls := blocksOf(&acc)
			if len(scalls) != 1 || scalls[0].Name != "get_weather" || scalls[0].ID == "" || acc.StopReason != anthropic.StopReasonToolUse {
				t.Fatalf("streamed %s", acc.RawJSON())
			}
			var sargs map[string]any
			if err := json.Unmarshal(scalls[0].Input, &sargs); err != nil || sargs["city"] != args["city"] {
				t.Fatalf("streamed input %s, non-streamed %s: %v", scalls[0].Input, calls[0].Input, err)
			}
			matrix.Mark(t, "anthropic", "streamed-tools", engineOf(model))
		})
	}
}

// TestAnthropicSDK_ToolChoice: tool_choice any and tool reach the backend
// as required and a named function, and a named tool still ends with
// stop_reason tool_use (vLLM finishes it with "stop").
func TestAnthropicSDK_ToolChoice(t *testing.T) {
	t.Parallel()
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, "")
	c := anthropicClient(e, false, adminKey)
	p := anthropicParams(vllmModel, "Weather in Paris?")
	p.Tools = []anthropic.ToolUnionParam{anthropicWeatherTool()}
	for _, tc := range []struct {
		choice anthropic.ToolChoiceUnionParam
		want   string
	}{
		{anthropic.ToolChoiceUnionParam{OfAny: &anthropic.ToolChoiceAnyParam{DisableParallelToolUse: anthropic.Bool(true)}}, `"tool_choice":"required"`},
		{anthropic.ToolChoiceParamOfTool("get_weather"), `"tool_choice":{"type":"function","function":{"name":"get_weather"}}`},
	} {
		p.ToolChoice = tc.choice
		msg, err := c.Messages.New(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		if msg.StopReason != anthropic.StopReasonToolUse {
			t.Fatalf("message %s", msg.RawJSON())
		}
		if sent := string(e.vllm.LastBody("/v1/chat/completions")); !strings.Contains(sent, tc.want) {
			t.Fatalf("backend got %s, want %s", sent, tc.want)
		}
	}
	if sent := string(e.vllm.LastBody("/v1/chat/completions")); strings.Contains(sent, `"parallel_tool_calls":true`) {
		t.Fatalf("backend got %s", sent)
	}
}

// TestAnthropicSDK_Thinking: thinking on gives a thinking block before the
// text, streamed and not; thinking disabled gives none. Both fakes serve a
// reasoning model (fakellm reasons for qwen3-like names when asked).
func TestAnthropicSDK_Thinking(t *testing.T) {
	t.Parallel()
	const ollamaThinker = "qwen3:4b"
	e := startEnv(t, fakellm.Config{}, fakellm.Config{Models: []string{ollamaThinker}}, "")
	c := anthropicClient(e, false, adminKey)
	for _, model := range []string{vllmModel, ollamaThinker} {
		t.Run(model, func(t *testing.T) {
			p := anthropicParams(model, "Why is the sky blue?")
			p.MaxTokens = 2048
			p.Thinking = anthropic.ThinkingConfigParamOfEnabled(1024)
			msg, err := c.Messages.New(context.Background(), p)
			if err != nil {
				t.Fatal(err)
			}
			thinking, text, _ := blocksOf(msg)
			if thinking == "" || text == "" || msg.Content[0].Type != "thinking" {
				t.Fatalf("message %s", msg.RawJSON())
			}
			acc := streamMessage(t, c, p)
			sthinking, stext, _ := blocksOf(&acc)
			if sthinking != thinking || stext != text || len(acc.Content) != 2 || acc.Content[0].Type != "thinking" {
				t.Fatalf("streamed %s, non-streamed %s", acc.RawJSON(), msg.RawJSON())
			}

			// The thinking block sent back in history is accepted (its
			// signature is empty) and reaches the backend as reasoning.
			p.Messages = append(p.Messages, msg.ToParam(), anthropic.NewUserMessage(anthropic.NewTextBlock("And at sunset?")))
			if _, err := c.Messages.New(context.Background(), p); err != nil {
				t.Fatal(err)
			}
			sent := e.vllm.LastBody("/v1/chat/completions")
			if model == ollamaThinker {
				sent = e.ollama.LastBody("/api/chat")
			}
			if !strings.Contains(string(sent), thinking) {
				t.Fatalf("backend did not get the reasoning %q: %s", thinking, sent)
			}

			p = anthropicParams(model, "Why is the sky blue?")
			p.Thinking = anthropic.ThinkingConfigParamUnion{OfDisabled: &anthropic.ThinkingConfigDisabledParam{}}
			off, err := c.Messages.New(context.Background(), p)
			if err != nil {
				t.Fatal(err)
			}
			if thinking, text, _ := blocksOf(off); thinking != "" || text == "" {
				t.Fatalf("thinking disabled: %s", off.RawJSON())
			}
			matrix.Mark(t, "anthropic", "thinking", matrix.Engine(model == ollamaThinker))
		})
	}
}

// TestAnthropicSDK_Images: a base64 image block reaches each engine in its
// own shape (vLLM: an image_url data URI; Ollama: base64 in images).
func TestAnthropicSDK_Images(t *testing.T) {
	t.Parallel()
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, "")
	c := anthropicClient(e, false, adminKey)
	for _, model := range []string{vllmModel, ollamaModel} {
		t.Run(model, func(t *testing.T) {
			p := anthropicParams(model, "")
			p.System = nil
			p.Messages = []anthropic.MessageParam{anthropic.NewUserMessage(
				anthropic.NewImageBlockBase64("image/png", onePixelPNG),
				anthropic.NewTextBlock("What is in this picture?"),
			)}
			msg, err := c.Messages.New(context.Background(), p)
			if err != nil {
				t.Fatal(err)
			}
			if _, text, _ := blocksOf(msg); text == "" {
				t.Fatalf("message %s", msg.RawJSON())
			}
			var sent struct {
				Messages []struct {
					Content json.RawMessage `json:"content"`
					Images  []string        `json:"images"`
				} `json:"messages"`
			}
			body := lastBackendBody(e, model)
			if err := json.Unmarshal(body, &sent); err != nil || len(sent.Messages) != 1 {
				t.Fatalf("backend got %s (%v)", body, err)
			}
			if model == ollamaModel {
				if len(sent.Messages[0].Images) != 1 || sent.Messages[0].Images[0] != onePixelPNG {
					t.Fatalf("Ollama got %s", body)
				}
			} else if !strings.Contains(string(sent.Messages[0].Content), `"url":"data:image/png;base64,`+onePixelPNG+`"`) {
				t.Fatalf("vLLM got %s", body)
			}
			matrix.Mark(t, "anthropic", "images", engineOf(model))
		})
	}
}

// TestAnthropicSDK_ImageURL: an image block with a url source reaches both
// engines inline, fetched by the gateway's guarded fetcher (the test
// server's loopback address allowed, as an operator allows an internal
// image store): vLLM as a data: URL, Ollama as base64 in images.
func TestAnthropicSDK_ImageURL(t *testing.T) {
	t.Parallel()
	img, hits := imageServer(t)
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, "images: {allow: [127.0.0.1/32]}\n")
	c := anthropicClient(e, false, adminKey)
	url := img.URL + "/cat.png"
	for _, model := range []string{vllmModel, ollamaModel} {
		p := anthropicParams(model, "")
		p.System = nil
		p.Messages = []anthropic.MessageParam{anthropic.NewUserMessage(
			anthropic.NewImageBlock(anthropic.URLImageSourceParam{URL: url}),
			anthropic.NewTextBlock("What is in this picture?"),
		)}
		if _, err := c.Messages.New(context.Background(), p); err != nil {
			t.Fatalf("%s: %v", model, err)
		}
		sent := string(lastBackendBody(e, model))
		if model == ollamaModel && !strings.Contains(sent, `"images":["`+onePixelPNG+`"]`) ||
			model == vllmModel && !strings.Contains(sent, `"url":"data:image/png;base64,`+onePixelPNG+`"`) {
			t.Fatalf("%s: backend got %s", model, sent)
		}
	}
	if hits.Load() != 2 {
		t.Fatalf("image server hits = %d, want 2 (one fetch per request)", hits.Load())
	}
}

// TestAnthropicSDK_JSONSchema: output_config.format reaches each engine
// as its structured-output switch, and the text is a JSON document with
// the schema's required property.
func TestAnthropicSDK_JSONSchema(t *testing.T) {
	t.Parallel()
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, "")
	c := anthropicClient(e, false, adminKey)
	for _, model := range []string{vllmModel, ollamaModel} {
		t.Run(model, func(t *testing.T) {
			p := anthropicParams(model, "Extract the name: John Smith wrote this.")
			p.OutputConfig = anthropic.OutputConfigParam{Format: anthropic.JSONOutputFormatParam{Schema: map[string]any{
				"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}, "required": []string{"name"},
			}}}
			msg, err := c.Messages.New(context.Background(), p)
			if err != nil {
				t.Fatal(err)
			}
			_, text, _ := blocksOf(msg)
			var doc map[string]any
			if err := json.Unmarshal([]byte(text), &doc); err != nil || doc["name"] == nil {
				t.Fatalf("text %q: %v", text, err)
			}
			matrix.Mark(t, "anthropic", "json-schema", engineOf(model))
		})
	}
}

// TestAnthropicSDK_Errors: the SDK gets *anthropic.Error with Anthropic's
// status and error type: a request without max_tokens or with an
// out-of-range temperature is a 400 invalid_request_error, an unknown
// model a 404 not_found_error, a bad key a 401 authentication_error; a
// stream the backend drops midway ends in an error event, which the SDK
// reports.
func TestAnthropicSDK_Errors(t *testing.T) {
	t.Parallel()
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, "")
	c := anthropicClient(e, false, adminKey)
	ctx := context.Background()
	want := func(err error, status int, typ string) {
		t.Helper()
		var ae *anthropic.Error
		if !errors.As(err, &ae) || ae.StatusCode != status || string(ae.Type()) != typ || ae.Message == "" {
			t.Fatalf("error %v (%T), want %d %s", err, err, status, typ)
		}
	}
	for _, model := range []string{vllmModel, ollamaModel} {
		_, err := c.Messages.New(ctx, anthropicParams(model, "hi"), aoption.WithJSONDel("max_tokens"))
		want(err, 400, "invalid_request_error")
		var ae *anthropic.Error
		if errors.As(err, &ae) && !strings.Contains(ae.Message, "max_tokens") {
			t.Fatalf("message %q does not name max_tokens", ae.Message)
		}
		// (this SDK version has no temperature field; the API still takes it)
		_, err = c.Messages.New(ctx, anthropicParams(model, "hi"), aoption.WithJSONSet("temperature", 1.5))
		want(err, 400, "invalid_request_error")
		matrix.Mark(t, "anthropic", "errors", engineOf(model))
	}
	_, err := c.Messages.New(ctx, anthropicParams("no-such-model", "hi"))
	want(err, 404, "not_found_error")
	bad := anthropicClient(e, true, "mr2_wrong")
	_, err = bad.Messages.New(ctx, anthropicParams(vllmModel, "hi"))
	want(err, 401, "authentication_error")
	_, err = bad.Models.List(ctx, anthropic.ModelListParams{})
	want(err, 401, "authentication_error")

	// Mid-stream failure: fakellm closes the connection after about half
	// of the tokens; the gateway ends the stream with an error event.
	drop := startEnv(t, fakellm.Config{DropRate: 1, Tokens: 40}, fakellm.Config{DropRate: 1, Tokens: 40}, "")
	dc := anthropicClient(drop, false, adminKey)
	for _, model := range []string{vllmModel, ollamaModel} {
		stream := dc.Messages.NewStreaming(ctx, anthropicParams(model, "hi"))
		var acc anthropic.Message
		var last string
		for stream.Next() {
			last = stream.Current().Type
			_ = acc.Accumulate(stream.Current())
		}
		if last == "message_stop" {
			t.Fatalf("%s: dropped stream ended cleanly", model)
		}
		want(stream.Err(), 200, "api_error")
	}
}

// TestAnthropicSDK_Models: GET /anthropic/v1/models lists both engines'
// models in Anthropic's page shape, and so does GET /v1/models for the SDK
// pointed at the gateway's root (issue 20, item 12: it sends
// anthropic-version, and got OpenAI's shape); GET .../v1/models/{id}
// retrieves one model, 404 not_found_error for an unknown one. Without
// anthropic-version, /v1/models stays OpenAI's.
func TestAnthropicSDK_Models(t *testing.T) {
	t.Parallel()
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, "")
	ctx := context.Background()
	for _, prefixed := range []bool{true, false} {
		c := anthropicClient(e, prefixed, adminKey)
		page, err := c.Models.List(ctx, anthropic.ModelListParams{})
		if err != nil {
			t.Fatalf("prefixed %v: %v", prefixed, err)
		}
		got := map[string]bool{}
		for _, m := range page.Data {
			got[m.ID] = true
			if m.Type != "model" || m.DisplayName == "" || !m.JSON.CreatedAt.Valid() {
				t.Fatalf("prefixed %v: model %s", prefixed, m.RawJSON())
			}
		}
		if !got[vllmModel] || !got[ollamaModel] || page.HasMore || page.FirstID != page.Data[0].ID || page.LastID != page.Data[len(page.Data)-1].ID {
			t.Fatalf("prefixed %v: page %s", prefixed, page.RawJSON())
		}
		for _, id := range []string{vllmModel, ollamaModel} {
			m, err := c.Models.Get(ctx, id, anthropic.ModelGetParams{})
			if err != nil || m.ID != id || m.Type != "model" || m.DisplayName != id || !m.JSON.CreatedAt.Valid() {
				t.Fatalf("prefixed %v: get %s: %v %s", prefixed, id, err, rawOf(m))
			}
		}
		_, err = c.Models.Get(ctx, "no-such-model", anthropic.ModelGetParams{})
		var ae *anthropic.Error
		if !errors.As(err, &ae) || ae.StatusCode != 404 || string(ae.Type()) != "not_found_error" {
			t.Fatalf("prefixed %v: unknown model: %v", prefixed, err)
		}
	}
	list, err := e.client.Models.List(ctx) // OpenAI's SDK: no anthropic-version
	if err != nil || len(list.Data) == 0 || list.Data[0].Object != "model" {
		t.Fatalf("OpenAI's /v1/models: %v %+v", err, list)
	}
}

func rawOf(m *anthropic.ModelInfo) string {
	if m == nil {
		return "<nil>"
	}
	return m.RawJSON()
}

// TestAnthropicSDK_PluginSets runs the Anthropic SDK tests against every
// way of loading the first-party plugins (separate modules and the bundle,
// as WebAssembly and natively): the bundle serves them by fused calls.
func TestAnthropicSDK_PluginSets(t *testing.T) {
	t.Parallel()
	for _, ps := range pluginSets(t) {
		if ps.name == "separate" {
			continue // the other TestAnthropicSDK_ tests
		}
		t.Run(ps.name, func(t *testing.T) {
			t.Parallel()
			withPlugins(t, ps.set, func() {
				t.Run("Text", TestAnthropicSDK_Text)
				t.Run("Stream", TestAnthropicSDK_Stream)
				t.Run("Tools", TestAnthropicSDK_Tools)
				t.Run("Thinking", TestAnthropicSDK_Thinking)
				t.Run("Images", TestAnthropicSDK_Images)
				t.Run("Errors", TestAnthropicSDK_Errors)
				t.Run("Models", TestAnthropicSDK_Models)
				if ps.fused {
					t.Run("Fused", checkAnthropicFused)
				}
			})
		})
	}
}

// checkAnthropicFused serves a plain and a streamed message on each engine
// and checks, from the plugin metrics, that fused calls served them.
func checkAnthropicFused(t *testing.T) {
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, "")
	c := anthropicClient(e, false, adminKey)
	for _, model := range []string{vllmModel, ollamaModel} {
		p := anthropicParams(model, "which path?")
		if _, err := c.Messages.New(context.Background(), p); err != nil {
			t.Fatal(err)
		}
		streamMessage(t, c, p)
	}
	var b strings.Builder
	e.gw.Host.WriteMetrics(&b)
	for _, pair := range []string{"anthropic+vllm", "anthropic+ollama"} {
		for _, op := range []string{"fused_request", "fused_response", "fused_stream"} {
			if !strings.Contains(b.String(), `component="`+pair+`",op="`+op+`"}`) {
				t.Errorf("no %s call counted for %s", op, pair)
			}
		}
	}
}
