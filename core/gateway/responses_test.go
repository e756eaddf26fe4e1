package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/conversations"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"github.com/mindrouter/mindrouter/bench/fakellm"
	"github.com/mindrouter/mindrouter/core/internal/matrix"
)

// respParams is a plain Responses request.
func respParams(model, input string) responses.ResponseNewParams {
	return responses.ResponseNewParams{
		Model:        shared.ResponsesModel(model),
		Input:        responses.ResponseNewParamsInputUnion{OfString: openai.String(input)},
		Instructions: openai.String("Be brief."),
	}
}

// TestResponsesSDK_Create: plain, JSON schema and reasoning requests
// through the official client, each engine; the answer is a completed
// Response with a message item and usage.
func TestResponsesSDK_Create(t *testing.T) {
	t.Parallel()
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, "")
	ctx := context.Background()
	for _, model := range []string{vllmModel, ollamaModel} {
		t.Run(model, func(t *testing.T) {
			r, err := e.client.Responses.New(ctx, respParams(model, "Tell me about gateways"))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(r.ID, "resp_") || r.Status != responses.ResponseStatusCompleted || r.OutputText() == "" {
				t.Fatalf("response = %+v", r)
			}
			if r.Usage.InputTokens == 0 || r.Usage.OutputTokens == 0 || r.Usage.TotalTokens != r.Usage.InputTokens+r.Usage.OutputTokens {
				t.Errorf("usage = %+v", r.Usage)
			}
			if sent := string(lastBackendBody(e, model)); !strings.Contains(sent, "Be brief.") || !strings.Contains(sent, "Tell me about gateways") {
				t.Errorf("instructions and input did not reach the backend: %s", sent)
			}

			p := respParams(model, "Give me a city")
			p.Text = responses.ResponseTextConfigParam{Format: responses.ResponseFormatTextConfigUnionParam{
				OfJSONSchema: &responses.ResponseFormatTextJSONSchemaConfigParam{Name: "city", Schema: map[string]any{
					"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}, "required": []string{"name"}}},
			}}
			r, err = e.client.Responses.New(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			var city struct{ Name string }
			if err := json.Unmarshal([]byte(r.OutputText()), &city); err != nil || city.Name == "" {
				t.Fatalf("json_schema output %q: %v", r.OutputText(), err)
			}
			matrix.Mark(t, "responses", "json-schema", engineOf(model))
			matrix.Mark(t, "responses", "text", engineOf(model))
		})
	}

	t.Run("reasoning", func(t *testing.T) {
		p := respParams(vllmModel, "Think about gateways")
		p.Reasoning = shared.ReasoningParam{Effort: shared.ReasoningEffortHigh}
		r, err := e.client.Responses.New(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		var kinds []string
		for _, it := range r.Output {
			kinds = append(kinds, it.Type)
		}
		if len(kinds) < 2 || kinds[0] != "reasoning" || kinds[len(kinds)-1] != "message" || r.Usage.OutputTokensDetails.ReasoningTokens == 0 {
			t.Fatalf("output items %v, usage %+v", kinds, r.Usage)
		}
		matrix.Mark(t, "responses", "thinking", engineOf(vllmModel))
	})
}

// TestResponsesSDK_FunctionCallRoundTrip: a function_call item, its
// function_call_output sent back, then a text answer; the backend sees
// the call and its result.
func TestResponsesSDK_FunctionCallRoundTrip(t *testing.T) {
	t.Parallel()
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, "")
	ctx := context.Background()
	tool := responses.ToolParamOfFunction("get_weather", map[string]any{
		"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []string{"city"},
	}, false)
	for _, model := range []string{vllmModel, ollamaModel} {
		t.Run(model, func(t *testing.T) {
			p := respParams(model, "Weather in Paris?")
			p.Tools = []responses.ToolUnionParam{tool}
			r, err := e.client.Responses.New(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			var call *responses.ResponseOutputItemUnion
			for i := range r.Output {
				if r.Output[i].Type == "function_call" {
					call = &r.Output[i]
				}
			}
			if call == nil || call.Name != "get_weather" || call.CallID == "" {
				t.Fatalf("no function call: %+v", r.Output)
			}
			var args map[string]any
			if err := json.Unmarshal([]byte(call.Arguments.OfString), &args); err != nil {
				t.Fatalf("arguments %q: %v", call.Arguments.OfString, err)
			}
			// Stateless round trip: the history is sent back whole.
			out := responses.ResponseInputItemParamOfFunctionCallOutput(`{"temp_c":21}`)
			out.OfFunctionCallOutput.CallID = openai.String(call.CallID)
			p2 := responses.ResponseNewParams{Model: shared.ResponsesModel(model), Tools: p.Tools, Store: openai.Bool(false),
				Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
					responses.ResponseInputItemParamOfMessage("Weather in Paris?", responses.EasyInputMessageRoleUser),
					responses.ResponseInputItemParamOfFunctionCall(call.Arguments.OfString, call.CallID, call.Name),
					out,
				}}}
			r2, err := e.client.Responses.New(ctx, p2)
			if err != nil {
				t.Fatal(err)
			}
			if r2.OutputText() == "" {
				t.Fatalf("after the function output: %+v", r2.Output)
			}
			sent := string(lastBackendBody(e, model))
			if !strings.Contains(sent, "get_weather") || !strings.Contains(sent, "temp_c") {
				t.Fatalf("backend did not get the call and its output: %s", sent)
			}
			if model == vllmModel && !strings.Contains(sent, `"tool_call_id":"`+call.CallID+`"`) {
				t.Fatalf("vLLM body lacks the tool_call_id: %s", sent)
			}
			// store: false keeps nothing.
			if _, err := e.client.Responses.Get(ctx, r2.ID, responses.ResponseGetParams{}); statusOf(err) != 404 {
				t.Errorf("a store:false response was kept: %v", err)
			}
			matrix.Mark(t, "responses", "tools", engineOf(model))
		})
	}
}

// TestResponsesSDK_Stream: the typed event sequence, in order, with
// strictly increasing sequence numbers and exactly one terminal event.
func TestResponsesSDK_Stream(t *testing.T) {
	t.Parallel()
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, "")
	ctx := context.Background()
	for _, model := range []string{vllmModel, ollamaModel} {
		t.Run(model, func(t *testing.T) {
			st := e.client.Responses.NewStreaming(ctx, respParams(model, "Stream about gateways"))
			var types []string
			var text strings.Builder
			var final responses.Response
			seq := int64(-1)
			terminal := 0
			for st.Next() {
				ev := st.Current()
				if ev.SequenceNumber <= seq {
					t.Fatalf("sequence_number %d after %d (%s)", ev.SequenceNumber, seq, ev.Type)
				}
				seq = ev.SequenceNumber
				types = append(types, ev.Type)
				switch ev.Type {
				case "response.output_text.delta":
					text.WriteString(ev.Delta)
				case "response.completed", "response.incomplete", "response.failed":
					terminal++
					final = ev.Response
				}
			}
			if err := st.Err(); err != nil {
				t.Fatal(err)
			}
			want := []string{"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added",
				"response.output_text.delta", "response.output_text.done", "response.content_part.done", "response.output_item.done", "response.completed"}
			if got := dedupe(types); !slicesEqual(got, want) {
				t.Fatalf("events %v, want %v", got, want)
			}
			if terminal != 1 || final.Status != responses.ResponseStatusCompleted || final.OutputText() != text.String() || text.Len() == 0 {
				t.Fatalf("terminal %d, final %q vs deltas %q", terminal, final.OutputText(), text.String())
			}
			if final.Usage.OutputTokens == 0 {
				t.Errorf("final usage %+v", final.Usage)
			}
			// A streamed, stored response can be retrieved whole.
			got, err := e.client.Responses.Get(ctx, final.ID, responses.ResponseGetParams{})
			if err != nil || got.OutputText() != text.String() {
				t.Fatalf("retrieve the streamed response: %v %+v", err, got)
			}
			matrix.Mark(t, "responses", "stream", engineOf(model))
		})
	}

	t.Run("max_output_tokens", func(t *testing.T) {
		p := respParams(vllmModel, "A long story")
		p.MaxOutputTokens = openai.Int(5)
		st := e.client.Responses.NewStreaming(ctx, p)
		last := ""
		var final responses.Response
		for st.Next() {
			last = st.Current().Type
			final = st.Current().Response
		}
		if err := st.Err(); err != nil {
			t.Fatal(err)
		}
		if last != "response.incomplete" || final.Status != responses.ResponseStatusIncomplete || final.IncompleteDetails.Reason != "max_output_tokens" {
			t.Fatalf("last event %s, response %+v", last, final)
		}
	})
}

// dedupe collapses runs of one event type (the deltas).
func dedupe(s []string) []string {
	var out []string
	for _, v := range s {
		if len(out) == 0 || out[len(out)-1] != v {
			out = append(out, v)
		}
	}
	return out
}

func slicesEqual(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestResponsesSDK_ChainingAndStoredState: previous_response_id carries
// the first turn into the second (the backend sees the fact); retrieve,
// input_items, input_tokens and delete; cancel is a clear 400.
func TestResponsesSDK_ChainingAndStoredState(t *testing.T) {
	t.Parallel()
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, "")
	ctx := context.Background()
	for _, model := range []string{vllmModel, ollamaModel} {
		t.Run(model, func(t *testing.T) {
			r1, err := e.client.Responses.New(ctx, respParams(model, "My secret word is pomegranate."))
			if err != nil {
				t.Fatal(err)
			}
			p := respParams(model, "What is my secret word?")
			p.PreviousResponseID = openai.String(r1.ID)
			r2, err := e.client.Responses.New(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			sent := string(lastBackendBody(e, model))
			if !strings.Contains(sent, "pomegranate") || !strings.Contains(sent, firstWords(r1.OutputText())) ||
				!strings.Contains(sent, "What is my secret word?") {
				t.Fatalf("the second turn lacks the first: %s", sent)
			}

			got, err := e.client.Responses.Get(ctx, r2.ID, responses.ResponseGetParams{})
			if err != nil || got.ID != r2.ID || got.OutputText() != r2.OutputText() {
				t.Fatalf("retrieve: %v %+v", err, got)
			}
			items, err := e.client.Responses.InputItems.List(ctx, r2.ID, responses.InputItemListParams{})
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := json.Marshal(items.Data)
			if !strings.Contains(string(raw), "What is my secret word?") || !strings.Contains(string(raw), "pomegranate") {
				t.Fatalf("input items of the chained response: %s", raw)
			}

			n, err := e.client.Responses.InputTokens.Count(ctx, responses.InputTokenCountParams{Model: openai.String(model),
				Input: responses.InputTokenCountParamsInputUnion{OfString: openai.String("How many tokens is this sentence?")}})
			if err != nil || n.InputTokens <= 0 {
				t.Fatalf("input_tokens: %v %+v", err, n)
			}

			if _, err := e.client.Responses.Cancel(ctx, r2.ID); statusOf(err) != 400 {
				t.Errorf("cancel: %v, want 400", err)
			}
			if err := e.client.Responses.Delete(ctx, r2.ID); err != nil {
				t.Fatal(err)
			}
			if _, err := e.client.Responses.Get(ctx, r2.ID, responses.ResponseGetParams{}); statusOf(err) != 404 {
				t.Fatalf("after delete: %v, want 404", err)
			}
			p.PreviousResponseID = openai.String("resp_doesnotexist")
			if _, err := e.client.Responses.New(ctx, p); statusOf(err) != 404 && statusOf(err) != 400 {
				t.Fatalf("unknown previous_response_id: %v", err)
			}
			matrix.Mark(t, "responses", "stored-responses", engineOf(model))
		})
	}
}

// firstWords is the start of a text, enough to find it in a body.
func firstWords(s string) string {
	f := strings.Fields(s)
	if len(f) > 3 {
		f = f[:3]
	}
	return strings.Join(f, " ")
}

// TestResponsesSDK_Conversations: create with an item, respond within
// it, list its items (the input and the answer appended), delete, 404.
func TestResponsesSDK_Conversations(t *testing.T) {
	t.Parallel()
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, "")
	ctx := context.Background()
	for _, model := range []string{vllmModel, ollamaModel} {
		t.Run(model, func(t *testing.T) {
			c, err := e.client.Conversations.New(ctx, conversations.ConversationNewParams{
				Items: []responses.ResponseInputItemUnionParam{
					responses.ResponseInputItemParamOfMessage("Remember: the door code is 4711.", responses.EasyInputMessageRoleUser)},
				Metadata: shared.Metadata{"topic": "codes"},
			})
			if err != nil {
				t.Fatal(err)
			}
			if md, _ := json.Marshal(c.Metadata); !strings.HasPrefix(c.ID, "conv_") || !strings.Contains(string(md), `"topic":"codes"`) {
				t.Fatalf("conversation %+v", c)
			}
			p := respParams(model, "What is the door code?")
			p.Conversation = responses.ResponseNewParamsConversationUnion{OfString: openai.String(c.ID)}
			r, err := e.client.Responses.New(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			if sent := string(lastBackendBody(e, model)); !strings.Contains(sent, "4711") {
				t.Fatalf("the conversation's item did not reach the backend: %s", sent)
			}
			list, err := e.client.Conversations.Items.List(ctx, c.ID, conversations.ItemListParams{Order: conversations.ItemListParamsOrderAsc})
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := json.Marshal(list.Data)
			if len(list.Data) < 3 || !strings.Contains(string(raw), "4711") || !strings.Contains(string(raw), "What is the door code?") ||
				!strings.Contains(string(raw), firstWords(r.OutputText())) {
				t.Fatalf("items after the response (%d): %s", len(list.Data), raw)
			}
			if _, err := e.client.Conversations.Delete(ctx, c.ID); err != nil {
				t.Fatal(err)
			}
			if _, err := e.client.Conversations.Get(ctx, c.ID); statusOf(err) != 404 {
				t.Fatalf("after delete: %v, want 404", err)
			}
			matrix.Mark(t, "responses", "conversations", engineOf(model))
		})
	}
}

// TestResponses_OwnershipAndRestart: another user's key gets 404 for
// every stored id, never the content; stored state survives a restart
// of a gateway on the embedded store.
func TestResponses_OwnershipAndRestart(t *testing.T) {
	t.Parallel()
	dsn := filepath.Join(t.TempDir(), "mindrouter.db")
	y := fmt.Sprintf("store: {driver: sqlite, dsn: %q}\n", dsn)
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, y)
	ctx := context.Background()
	_, ka := newUser(t, e.base, "ann", "students", nil, nil)
	_, kb := newUser(t, e.base, "ben", "students", nil, nil)
	ann, ben := client(e, ka.FullKey), client(e, kb.FullKey)

	r, err := ann.Responses.New(ctx, respParams(vllmModel, "The launch date is secret-2027."))
	if err != nil {
		t.Fatal(err)
	}
	conv, err := ann.Conversations.New(ctx, conversations.ConversationNewParams{})
	if err != nil {
		t.Fatal(err)
	}
	check := func(err error, what string) {
		t.Helper()
		if statusOf(err) != 404 {
			t.Errorf("%s by another user: %v, want 404", what, err)
		}
		if err != nil && strings.Contains(err.Error(), "secret-2027") {
			t.Errorf("%s leaked content: %v", what, err)
		}
	}
	_, err = ben.Responses.Get(ctx, r.ID, responses.ResponseGetParams{})
	check(err, "get")
	_, err = ben.Responses.InputItems.List(ctx, r.ID, responses.InputItemListParams{})
	check(err, "input_items")
	check(ben.Responses.Delete(ctx, r.ID), "delete")
	p := respParams(vllmModel, "What is the launch date?")
	p.PreviousResponseID = openai.String(r.ID)
	_, err = ben.Responses.New(ctx, p)
	check(err, "previous_response_id")
	_, err = ben.Conversations.Get(ctx, conv.ID)
	check(err, "conversation get")
	_, err = ben.Conversations.Items.List(ctx, conv.ID, conversations.ItemListParams{})
	check(err, "conversation items")
	_, err = ben.Conversations.Delete(ctx, conv.ID)
	check(err, "conversation delete")

	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := e.gw.Close(cctx); err != nil {
		t.Fatal(err)
	}
	e2 := startEnv(t, fakellm.Config{}, fakellm.Config{}, y)
	ann2 := client(e2, ka.FullKey)
	got, err := ann2.Responses.Get(ctx, r.ID, responses.ResponseGetParams{})
	if err != nil || got.OutputText() != r.OutputText() {
		t.Fatalf("after a restart: %v", err)
	}
	if _, err := ann2.Conversations.Get(ctx, conv.ID); err != nil {
		t.Fatalf("conversation after a restart: %v", err)
	}
}
