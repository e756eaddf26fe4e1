package responses

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/openai/openai-go/v3/responses"

	"github.com/mindrouter/mindrouter/sdk/canon"
	"github.com/mindrouter/mindrouter/sdk/sdktest"
)

// responseCases are canonical answers and what the official SDK must read
// from their Response bodies.
var responseCases = []struct {
	name   string
	resp   canon.ChatResponse
	status responses.ResponseStatus
	types  []string // output item types in order
	text   string   // Response.OutputText()
}{
	{"text", canon.ChatResponse{ID: "backend-1", Model: "backend-model", Created: 1,
		Choices: []canon.Choice{{Message: canon.Message{Role: canon.RoleAssistant,
			Content: []canon.Part{{Type: canon.PartText, Text: "Paris is the capital of France."}}}, FinishReason: canon.FinishStop}},
		Usage: &canon.Usage{PromptTokens: 12, CompletionTokens: 7, CachedTokens: 4}},
		responses.ResponseStatusCompleted, []string{"message"}, "Paris is the capital of France."},
	{"reasoning_tools", canon.ChatResponse{
		Choices: []canon.Choice{{Message: canon.Message{Role: canon.RoleAssistant, Reasoning: "Two cities: two calls.",
			Content:   []canon.Part{{Type: canon.PartText, Text: "Checking \"both\"."}},
			ToolCalls: []canon.ToolCall{{ID: "call_a", Name: "weather", Arguments: `{"city":"Paris"}`}, {Name: "weather"}}},
			FinishReason: canon.FinishToolCalls}},
		Usage: &canon.Usage{PromptTokens: 50, CompletionTokens: 30, TotalTokens: 80, ReasoningTokens: 9}},
		responses.ResponseStatusCompleted, []string{"reasoning", "message", "function_call", "function_call"}, "Checking \"both\"."},
	{"tools_only", canon.ChatResponse{
		Choices: []canon.Choice{{Message: canon.Message{Role: canon.RoleAssistant,
			ToolCalls: []canon.ToolCall{{ID: "call_z", Name: "lookup", Arguments: `{"q":"x"}`}}}, FinishReason: canon.FinishToolCalls}}},
		responses.ResponseStatusCompleted, []string{"function_call"}, ""},
	{"max_tokens", canon.ChatResponse{
		Choices: []canon.Choice{{Message: canon.Message{Role: canon.RoleAssistant,
			Content: []canon.Part{{Type: canon.PartText, Text: "Once upon a"}}}, FinishReason: canon.FinishLength}},
		Usage: &canon.Usage{PromptTokens: 5, CompletionTokens: 3}},
		responses.ResponseStatusIncomplete, []string{"message"}, "Once upon a"},
	{"content_filter", canon.ChatResponse{
		Choices: []canon.Choice{{Message: canon.Message{Role: canon.RoleAssistant}, FinishReason: canon.FinishContentFilter}}},
		responses.ResponseStatusIncomplete, []string{"message"}, ""},
}

// TestEncodeResponse checks the Response body byte for byte (golden) and
// as openai-go v3 decodes it.
func TestEncodeResponse(t *testing.T) {
	h := newHarness(t)
	for _, tc := range responseCases {
		t.Run(tc.name, func(t *testing.T) {
			out := h.EncodeResponse(tc.resp, sdktest.Meta(gwMeta...))
			sdktest.Golden(t, filepath.Join("testdata", "responses", tc.name+".json"), out)
			var r responses.Response
			if err := json.Unmarshal(out, &r); err != nil {
				t.Fatal(err)
			}
			if r.ID != "resp_"+testHex || r.Object != "response" || r.CreatedAt != 1700000000 || r.Model != "qwen3-8b" || r.Status != tc.status {
				t.Errorf("id %q object %q created %v model %q status %q", r.ID, r.Object, r.CreatedAt, r.Model, r.Status)
			}
			if len(r.Output) != len(tc.types) {
				t.Fatalf("output %d items, want %v", len(r.Output), tc.types)
			}
			for i, it := range r.Output {
				if it.Type != tc.types[i] {
					t.Errorf("output[%d].type %q, want %q", i, it.Type, tc.types[i])
				}
				if wantPrefix := map[string]string{"reasoning": "rs_", "message": "msg_", "function_call": "fc_"}[it.Type]; it.ID != wantPrefix+testHex+"_"+itoa(i) {
					t.Errorf("output[%d].id %q", i, it.ID)
				}
			}
			if got := r.OutputText(); got != tc.text {
				t.Errorf("OutputText %q, want %q", got, tc.text)
			}
			if r.Error.Code != "" || r.JSON.Error.Raw() != "null" {
				t.Errorf("error %s, want null", r.JSON.Error.Raw())
			}
			if tc.status == responses.ResponseStatusIncomplete {
				want := map[string]string{"max_tokens": "max_output_tokens", "content_filter": "content_filter"}[tc.name]
				if r.IncompleteDetails.Reason != want {
					t.Errorf("incomplete reason %q, want %q", r.IncompleteDetails.Reason, want)
				}
			}
			if u := tc.resp.Usage; u != nil {
				total := int64(u.PromptTokens + u.CompletionTokens)
				if r.Usage.InputTokens != int64(u.PromptTokens) || r.Usage.OutputTokens != int64(u.CompletionTokens) ||
					r.Usage.TotalTokens != total || r.Usage.InputTokensDetails.CachedTokens != int64(u.CachedTokens) ||
					r.Usage.OutputTokensDetails.ReasoningTokens != int64(u.ReasoningTokens) {
					t.Errorf("usage %+v, want %+v", r.Usage, u)
				}
			} else if r.JSON.Usage.Raw() != "null" {
				t.Errorf("usage %s, want null", r.JSON.Usage.Raw())
			}
		})
	}
}

// TestEncodeResponse_Items checks the items' fields as the SDK's typed
// variants read them.
func TestEncodeResponse_Items(t *testing.T) {
	h := newHarness(t)
	out := h.EncodeResponse(responseCases[1].resp, sdktest.Meta(gwMeta...))
	var r responses.Response
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatal(err)
	}
	rs := r.Output[0].AsReasoning()
	if len(rs.Content) != 1 || rs.Content[0].Type != "reasoning_text" || rs.Content[0].Text != "Two cities: two calls." {
		t.Errorf("reasoning %+v", rs)
	}
	msg := r.Output[1].AsMessage()
	if msg.Role != "assistant" || msg.Status != "completed" || len(msg.Content) != 1 || msg.Content[0].Type != "output_text" {
		t.Errorf("message %+v", msg)
	}
	fc := r.Output[2].AsFunctionCall()
	if fc.CallID != "call_a" || fc.Name != "weather" || fc.Arguments != `{"city":"Paris"}` || fc.Status != "completed" {
		t.Errorf("function call %+v", fc)
	}
	// A call the backend gave no id gets a stable one; empty arguments
	// read as an empty object.
	fc = r.Output[3].AsFunctionCall()
	if fc.CallID != "call_"+testHex+"_3" || fc.Arguments != "{}" {
		t.Errorf("function call %+v", fc)
	}
	if r.ToolChoice.OfToolChoiceMode != "auto" || len(r.Tools) != 0 || r.Text.Format.Type != "text" || !r.ParallelToolCalls || r.TopP != 1 || r.Temperature != 1 {
		t.Errorf("request echo: tool_choice %+v tools %v text %+v", r.ToolChoice, r.Tools, r.Text)
	}
}

// TestEncodeResponse_BackendIdentity: without the gateway's meta the
// backend's id, model and created are used.
func TestEncodeResponse_BackendIdentity(t *testing.T) {
	h := newHarness(t)
	out := h.EncodeResponse(responseCases[0].resp, sdktest.NoDefaults(), sdktest.Meta(routeMeta...))
	var r responses.Response
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatal(err)
	}
	if r.ID != "resp_backend-1" || r.Model != "backend-model" || r.CreatedAt != 1 {
		t.Errorf("id %q model %q created %v", r.ID, r.Model, r.CreatedAt)
	}
}

func itoa(i int) string { return string(rune('0' + i)) }
