package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"github.com/mindrouter/mindrouter/bench/fakellm"
	"github.com/mindrouter/mindrouter/core/internal/matrix"
)

// TestResponsesSDK_ThinkingStreamedToolsImages: reasoning on both
// engines (streamed, the reasoning deltas adding up to the reasoning
// item), a function call streamed as argument deltas, and an inline
// image reaching each engine.
func TestResponsesSDK_ThinkingStreamedToolsImages(t *testing.T) {
	t.Parallel()
	const ollamaThinker = "qwen3:8b"
	e := startEnv(t, fakellm.Config{}, fakellm.Config{Models: []string{ollamaModel, ollamaThinker}}, "")
	ctx := context.Background()

	for _, model := range []string{vllmModel, ollamaThinker} {
		t.Run("thinking/"+model, func(t *testing.T) {
			p := respParams(model, "Why is the sky blue?")
			p.Reasoning = shared.ReasoningParam{Effort: shared.ReasoningEffortHigh}
			st := e.client.Responses.NewStreaming(ctx, p)
			var deltas strings.Builder
			var final responses.Response
			for st.Next() {
				ev := st.Current()
				switch ev.Type {
				case "response.reasoning_text.delta":
					deltas.WriteString(ev.Delta)
				case "response.completed":
					final = ev.Response
				}
			}
			if err := st.Err(); err != nil {
				t.Fatal(err)
			}
			if len(final.Output) < 2 || final.Output[0].Type != "reasoning" || deltas.Len() == 0 {
				t.Fatalf("reasoning deltas %q, output %+v", deltas.String(), final.Output)
			}
			raw, _ := json.Marshal(final.Output[0])
			if !strings.Contains(string(raw), jsonQuoted(t, deltas.String())) {
				t.Errorf("reasoning item %s does not hold the deltas %q", raw, deltas.String())
			}
			if final.OutputText() == "" || final.Usage.OutputTokensDetails.ReasoningTokens == 0 {
				t.Errorf("text %q, usage %+v", final.OutputText(), final.Usage)
			}
			matrix.Mark(t, "responses", "thinking", matrix.Engine(model == ollamaThinker))
		})
	}

	tool := responses.ToolParamOfFunction("get_weather", map[string]any{
		"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []string{"city"},
	}, false)
	for _, model := range []string{vllmModel, ollamaModel} {
		t.Run("streamed-tools/"+model, func(t *testing.T) {
			p := respParams(model, "Weather in Paris?")
			p.Tools = []responses.ToolUnionParam{tool}
			st := e.client.Responses.NewStreaming(ctx, p)
			var args strings.Builder
			done, name, call := "", "", ""
			for st.Next() {
				ev := st.Current()
				switch ev.Type {
				case "response.function_call_arguments.delta":
					args.WriteString(ev.Delta)
				case "response.function_call_arguments.done":
					done = ev.Arguments
				case "response.output_item.done":
					if ev.Item.Type == "function_call" {
						name, call = ev.Item.Name, ev.Item.CallID
					}
				}
			}
			if err := st.Err(); err != nil {
				t.Fatal(err)
			}
			var v map[string]any
			if name != "get_weather" || call == "" || done == "" || done != args.String() || json.Unmarshal([]byte(done), &v) != nil {
				t.Fatalf("streamed call %q %q: deltas %q, done %q", name, call, args.String(), done)
			}
			matrix.Mark(t, "responses", "streamed-tools", engineOf(model))
		})
	}

	for _, model := range []string{vllmModel, ollamaModel} {
		t.Run("images/"+model, func(t *testing.T) {
			p := responses.ResponseNewParams{Model: shared.ResponsesModel(model), Input: responses.ResponseNewParamsInputUnion{
				OfInputItemList: responses.ResponseInputParam{responses.ResponseInputItemParamOfMessage(
					responses.ResponseInputMessageContentListParam{
						responses.ResponseInputContentParamOfInputText("What is in this picture?"),
						{OfInputImage: &responses.ResponseInputImageParam{ImageURL: openai.String("data:image/png;base64," + onePixelPNG),
							Detail: responses.ResponseInputImageDetailAuto}},
					}, responses.EasyInputMessageRoleUser)}}}
			r, err := e.client.Responses.New(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			if r.OutputText() == "" {
				t.Fatalf("output %+v", r.Output)
			}
			if sent := string(lastBackendBody(e, model)); !strings.Contains(sent, onePixelPNG) {
				t.Fatalf("the image did not reach the backend: %s", sent)
			}
			matrix.Mark(t, "responses", "images", engineOf(model))
		})
	}
}

// jsonQuoted is s as it appears inside a JSON string.
func jsonQuoted(t *testing.T, s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b[1 : len(b)-1])
}

// TestResponsesSDK_Errors: an unknown model, a bad item and a backend
// failure come back as OpenAI errors the client decodes, with the right
// status.
func TestResponsesSDK_Errors(t *testing.T) {
	t.Parallel()
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, "")
	ctx := context.Background()
	for _, model := range []string{vllmModel, ollamaModel} {
		t.Run(model, func(t *testing.T) {
			var ae *openai.Error
			_, err := e.client.Responses.New(ctx, respParams("no-such-model", "hi"))
			if statusOf(err) != 404 {
				t.Fatalf("unknown model: %v", err)
			}
			// A tool type OpenAI does not have either (a hosted one, such
			// as web_search, is dropped: TestResponses_CodexExec).
			code, _, v := rawPost(t, e.base+"/v1/responses", adminKey,
				`{"model":"`+model+`","input":"hi","tools":[{"type":"hologram"}]}`)
			ev, _ := v["error"].(map[string]any)
			if code != 400 || ev["type"] != "invalid_request_error" || !strings.Contains(fmt.Sprint(ev["message"]), "tools[0]") {
				t.Fatalf("an unknown tool type: %d %v", code, v)
			}
			p := respParams(model, "hi")
			p.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
				{OfMessage: &responses.EasyInputMessageParam{Role: "user", Content: responses.EasyInputMessageContentUnionParam{OfString: openai.String("hi")}}},
				{OfItemReference: &responses.ResponseInputItemItemReferenceParam{ID: "msg_1"}}}}
			_, err = e.client.Responses.New(ctx, p)
			if statusOf(err) != 400 || !errorAs(err, &ae) || ae.Type != "invalid_request_error" || !strings.Contains(ae.Message, "input[1]") {
				t.Fatalf("an item reference: %v", err)
			}
			matrix.Mark(t, "responses", "errors", engineOf(model))
		})
	}
}

func errorAs(err error, ae **openai.Error) bool { return errors.As(err, ae) }

// A 32k-token answer streams to its end on the Responses API: its state
// (the text so far, which the .done and terminal events repeat) fits the
// plugins' state limit even for text of long words (fakellm's: about 6
// bytes a token, where 160 KiB ended the stream response.failed at 26.9k
// tokens).
func TestResponsesSDK_LongStreamCompletes(t *testing.T) {
	t.Parallel()
	const tokens = 32_000
	e := startEnv(t, fakellm.Config{Tokens: tokens, TPS: 1_000_000}, fakellm.Config{}, "")
	p := respParams(vllmModel, "Write a very long story")
	p.MaxOutputTokens = openai.Int(tokens)
	st := e.client.Responses.NewStreaming(context.Background(), p)
	var final responses.Response
	last := ""
	deltas := 0
	for st.Next() {
		ev := st.Current()
		last = ev.Type
		switch ev.Type {
		case "response.output_text.delta":
			deltas++
		case "response.completed", "response.incomplete", "response.failed":
			final = ev.Response
		}
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	if last != "response.completed" || final.Status != responses.ResponseStatusCompleted || final.Usage.OutputTokens != tokens {
		t.Fatalf("after %d deltas the stream ended with %s (status %q, %d output tokens, error %+v); want response.completed with %d",
			deltas, last, final.Status, final.Usage.OutputTokens, final.Error, tokens)
	}
	t.Logf("%d deltas, %d bytes of text", deltas, len(final.OutputText()))
}
