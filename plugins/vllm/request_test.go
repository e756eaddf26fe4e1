package vllm

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
	"github.com/mindrouter/mindrouter/sdk/sdktest"
)

func text(s string) []canon.Part { return []canon.Part{{Type: canon.PartText, Text: s}} }

func userMsg(s string) canon.Message { return canon.Message{Role: canon.RoleUser, Content: text(s)} }

// requestCases are the golden request encodings: testdata/requests/NAME.json
// holds the body each must produce (go test -update rewrites them).
var requestCases = []struct {
	name string
	req  canon.ChatRequest
}{
	{"basic", canon.ChatRequest{
		Model:    "Qwen/Qwen3-8B",
		Messages: []canon.Message{userMsg("Hello \"vLLM\"\n</script>\u2028")},
	}},
	// n, logprobs and top_logprobs as vLLM's OpenAI server takes them
	// (https://platform.openai.com/docs/api-reference/chat/create).
	{"n_logprobs", canon.ChatRequest{
		Model:    "Qwen/Qwen3-8B",
		Messages: []canon.Message{userMsg("Say hi")},
		N:        3, Logprobs: true, TopLogprobs: 5,
	}},
	{"conversation", canon.ChatRequest{
		Model: "meta-llama/Llama-3.1-8B-Instruct",
		Messages: []canon.Message{
			{Role: canon.RoleSystem, Content: text("You are terse.")},
			{Role: canon.RoleUser, Name: "alice", Content: []canon.Part{
				{Type: canon.PartText, Text: "Part one. "}, {Type: canon.PartText, Text: "Part two."},
			}},
			{Role: canon.RoleAssistant, Content: text("Ok.")},
			{Role: canon.RoleUser},
		},
		MaxTokens: 256,
	}},
	{"multimodal", canon.ChatRequest{
		Model: "Qwen/Qwen2.5-VL-7B-Instruct",
		Messages: []canon.Message{{Role: canon.RoleUser, Content: []canon.Part{
			{Type: canon.PartText, Text: "Compare these."},
			{Type: canon.PartImage, URL: "data:image/png;base64,iVBORw0KGgo=", Detail: "high"},
			{Type: canon.PartImage, MediaType: "image/png", Data: "iVBORw0KGgo="},
		}}},
	}},
	{"tool_turns", canon.ChatRequest{
		Model: "Qwen/Qwen3-8B",
		Messages: []canon.Message{
			userMsg("Weather in Paris and the time?"),
			{Role: canon.RoleAssistant, Reasoning: "Two tools needed.", ToolCalls: []canon.ToolCall{
				{ID: "call_1", Name: "get_weather", Arguments: `{"city":"Paris"}`},
				{ID: "call_2", Name: "get_time", Arguments: ""},
			}},
			{Role: canon.RoleTool, ToolCallID: "call_1", Content: text(`{"temp_c":21}`)},
			{Role: canon.RoleTool, ToolCallID: "call_2", Content: text("12:00")},
			{Role: canon.RoleAssistant, Content: text("Sunny, noon."), ToolCalls: []canon.ToolCall{
				{ID: "call_3", Name: "log", Arguments: `{}`},
			}},
		},
	}},
	{"sampling", canon.ChatRequest{
		Model:             "m",
		Messages:          []canon.Message{userMsg("x")},
		MaxTokens:         100,
		Temperature:       ptr(0.0),
		TopP:              ptr(0.95),
		TopK:              ptr(40),
		MinP:              ptr(0.05),
		RepetitionPenalty: ptr(1.1),
		FrequencyPenalty:  ptr(-0.5),
		PresencePenalty:   ptr(1e-7),
		Seed:              ptr(int64(-12345678901)),
		Stop:              []string{"\n\n", "END"},
		N:                 2,
		User:              "user-17",
	}},
	{"tools", canon.ChatRequest{
		Model:    "m",
		Messages: []canon.Message{userMsg("Weather?")},
		Tools: []canon.Tool{
			{Name: "get_weather", Description: "Current weather", Strict: true,
				Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)},
			{Name: "noop"},
		},
		ToolChoice:        &canon.ToolChoice{Mode: canon.ToolChoiceFunction, Name: "get_weather"},
		ParallelToolCalls: ptr(false),
	}},
	{"tool_choice_required", canon.ChatRequest{
		Model:      "m",
		Messages:   []canon.Message{userMsg("x")},
		Tools:      []canon.Tool{{Name: "f", Parameters: json.RawMessage(`{"type":"object"}`)}},
		ToolChoice: &canon.ToolChoice{Mode: canon.ToolChoiceRequired},
	}},
	{"json_schema", canon.ChatRequest{
		Model:    "m",
		Messages: []canon.Message{userMsg("x")},
		ResponseFormat: &canon.ResponseFormat{Type: canon.FormatJSONSchema, Name: "person", Strict: true,
			Schema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}}}`)},
	}},
	{"json_schema_defaults", canon.ChatRequest{
		Model:          "m",
		Messages:       []canon.Message{userMsg("x")},
		ResponseFormat: &canon.ResponseFormat{Type: canon.FormatJSONSchema},
	}},
	{"json_object", canon.ChatRequest{
		Model:          "m",
		Messages:       []canon.Message{userMsg("x")},
		ResponseFormat: &canon.ResponseFormat{Type: canon.FormatJSONObject},
	}},
	{"response_format_text", canon.ChatRequest{
		Model:          "m",
		Messages:       []canon.Message{userMsg("x")},
		ResponseFormat: &canon.ResponseFormat{Type: canon.FormatText},
	}},
	{"think_on", canon.ChatRequest{Model: "m", Messages: []canon.Message{userMsg("x")}, Think: canon.ThinkOn}},
	{"think_off", canon.ChatRequest{Model: "m", Messages: []canon.Message{userMsg("x")}, Think: canon.ThinkOff}},
	{"think_high", canon.ChatRequest{Model: "m", Messages: []canon.Message{userMsg("x")}, Think: canon.ThinkHigh, ThinkBudget: 2048}},
	{"think_low", canon.ChatRequest{Model: "m", Messages: []canon.Message{userMsg("x")}, Think: canon.ThinkLow}},
	{"stream", canon.ChatRequest{Model: "m", Messages: []canon.Message{userMsg("x")}, Stream: true}},
	{"stream_include_usage", canon.ChatRequest{Model: "m", Messages: []canon.Message{userMsg("x")}, Stream: true, IncludeUsage: true, ContextLength: 8192}},
	{"no_model", canon.ChatRequest{Messages: []canon.Message{userMsg("x")}}},
}

func TestEncodeRequestGolden(t *testing.T) {
	a := New()
	for _, tc := range requestCases {
		t.Run(tc.name, func(t *testing.T) {
			var out sdk.Output
			if err := a.EncodeRequest(&sdk.Call{}, &tc.req, &out); err != nil {
				t.Fatal(err)
			}
			if !json.Valid(out.Body) {
				t.Fatalf("invalid JSON: %s", out.Body)
			}
			golden := filepath.Join("testdata", "requests", tc.name+".json")
			sdktest.Golden(t, golden, out.Body)
		})
	}
}

// TestEncodeRequestABI runs every golden case through the ABI (canonical JSON
// in, as the host sends it) and checks body and meta match the typed call.
func TestEncodeRequestABI(t *testing.T) {
	p := newPlugin()
	a := New()
	for _, tc := range requestCases {
		var want sdk.Output
		if err := a.EncodeRequest(&sdk.Call{}, &tc.req, &want); err != nil {
			t.Fatal(err)
		}
		r := callOp(t, p, abi.OpRequestEncode, 0, nil, nil, tc.req.AppendJSON(nil))
		if r.Status != abi.StatusOK {
			t.Fatalf("%s: %s: %s", tc.name, r.Status, r.Error)
		}
		if !bytes.Equal(r.Payload, want.Body) {
			t.Errorf("%s: ABI body differs\n got: %s\nwant: %s", tc.name, r.Payload, want.Body)
		}
		if r.meta("path") != "/v1/chat/completions" || r.meta("method") != "POST" || r.meta("content-type") != "application/json" {
			t.Errorf("%s: meta = %q", tc.name, r.Meta)
		}
	}
}

// TestEncodeRequestFeatures spells out the vLLM-specific rules the goldens
// encode, so a careless -update cannot silently drop them.
func TestEncodeRequestFeatures(t *testing.T) {
	a := New()
	get := func(name string) map[string]any {
		for _, tc := range requestCases {
			if tc.name == name {
				var out sdk.Output
				if err := a.EncodeRequest(&sdk.Call{}, &tc.req, &out); err != nil {
					t.Fatal(err)
				}
				var m map[string]any
				if err := json.Unmarshal(out.Body, &m); err != nil {
					t.Fatal(err)
				}
				return m
			}
		}
		t.Fatalf("no case %s", name)
		return nil
	}
	js := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	check := func(name, got, want string) {
		t.Helper()
		if got != want {
			t.Errorf("%s: got %s, want %s", name, got, want)
		}
	}

	m := get("stream")
	check("stream_options", js(m["stream_options"]), `{"continuous_usage_stats":false,"include_usage":true}`)
	m = get("basic")
	check("no stream_options", js(m["stream_options"]), `null`)
	check("basic content", js(m["messages"]), `[{"content":"Hello \"vLLM\"\n\u003c/script\u003e\u2028","role":"user"}]`)
	m = get("json_object")
	check("json_object promoted", js(m["response_format"]), `{"json_schema":{"name":"json_response","schema":{"type":"object"}},"type":"json_schema"}`)
	m = get("json_schema_defaults")
	check("json_schema defaults", js(m["response_format"]), `{"json_schema":{"name":"response","schema":{"type":"object"}},"type":"json_schema"}`)
	m = get("think_on")
	check("think on", js(m["chat_template_kwargs"]), `{"enable_thinking":true}`)
	m = get("think_off")
	check("think off", js(m["chat_template_kwargs"]), `{"enable_thinking":false}`)
	m = get("think_high")
	check("think high kwargs", js(m["chat_template_kwargs"]), `{"enable_thinking":true}`)
	check("think high effort", js(m["reasoning_effort"]), `"high"`)
	m = get("sampling")
	check("temperature 0 kept", js(m["temperature"]), `0`)
	check("top_k", js(m["top_k"]), `40`)
	check("seed", js(m["seed"]), `-12345678901`)
	m = get("tool_turns")
	msgs := m["messages"].([]any)
	check("assistant null content", js(msgs[1].(map[string]any)["content"]), `null`)
	check("empty arguments", js(msgs[1].(map[string]any)["tool_calls"].([]any)[1].(map[string]any)["function"].(map[string]any)["arguments"]), `"{}"`)
	check("tool_call_id", js(msgs[2].(map[string]any)["tool_call_id"]), `"call_1"`)
	check("text with tool calls", js(msgs[4].(map[string]any)["content"]), `"Sunny, noon."`)
	m = get("multimodal")
	check("data uri", js(m["messages"].([]any)[0].(map[string]any)["content"].([]any)[2]), `{"image_url":{"url":"data:image/png;base64,iVBORw0KGgo="},"type":"image_url"}`)
	m = get("tools")
	check("named tool choice", js(m["tool_choice"]), `{"function":{"name":"get_weather"},"type":"function"}`)
	check("parallel_tool_calls", js(m["parallel_tool_calls"]), `false`)
	m = get("no_model")
	if _, ok := m["model"]; ok {
		t.Error("empty model written")
	}
}

func TestEncodeRequestErrors(t *testing.T) {
	cases := []struct {
		name string
		req  canon.ChatRequest
		want string
	}{
		{"no messages", canon.ChatRequest{Model: "m"}, "messages"},
		{"bad role", canon.ChatRequest{Messages: []canon.Message{{Role: "developer"}}}, "messages[0].role"},
		{"empty image", canon.ChatRequest{Messages: []canon.Message{{Role: canon.RoleUser, Content: []canon.Part{{Type: canon.PartImage}}}}}, "messages[0].content[0]"},
		{"bad part", canon.ChatRequest{Messages: []canon.Message{{Role: canon.RoleUser, Content: []canon.Part{{Type: "audio"}}}}}, "unsupported part type"},
		{"tool without name", canon.ChatRequest{Messages: []canon.Message{userMsg("x")}, Tools: []canon.Tool{{}}}, "tools[0].name"},
		{"tool choice mode", canon.ChatRequest{Messages: []canon.Message{userMsg("x")}, ToolChoice: &canon.ToolChoice{Mode: "any"}}, "tool_choice"},
		{"tool choice no name", canon.ChatRequest{Messages: []canon.Message{userMsg("x")}, ToolChoice: &canon.ToolChoice{Mode: canon.ToolChoiceFunction}}, "tool_choice"},
		{"response format", canon.ChatRequest{Messages: []canon.Message{userMsg("x")}, ResponseFormat: &canon.ResponseFormat{Type: "xml"}}, "response_format"},
		{"think", canon.ChatRequest{Messages: []canon.Message{userMsg("x")}, Think: "max"}, "think"},
	}
	p := newPlugin()
	for _, tc := range cases {
		var out sdk.Output
		err := New().EncodeRequest(&sdk.Call{}, &tc.req, &out)
		var ie *sdk.InputError
		if err == nil || !asInputError(err, &ie) || !strings.Contains(ie.Msg, tc.want) {
			t.Errorf("%s: err = %v, want BadInput mentioning %q", tc.name, err, tc.want)
		}
		r := callOp(t, p, abi.OpRequestEncode, 0, nil, nil, tc.req.AppendJSON(nil))
		if r.Status != abi.StatusBadInput || r.Meta != nil && len(r.Meta) > 0 {
			t.Errorf("%s: ABI status %s meta %q", tc.name, r.Status, r.Meta)
		}
	}
}

func asInputError(err error, target **sdk.InputError) bool {
	ie, ok := err.(*sdk.InputError)
	if ok {
		*target = ie
	}
	return ok
}
