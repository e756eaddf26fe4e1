package responses

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
	"github.com/mindrouter/mindrouter/sdk/sdktest"
)

func user(s string) canon.Message {
	return canon.Message{Role: canon.RoleUser, Content: []canon.Part{{Type: canon.PartText, Text: s}}}
}

func TestDecodeRequest(t *testing.T) {
	h := newHarness(t)
	for _, tc := range []struct {
		name, body string
		want       canon.ChatRequest
	}{
		{"string input", `{"model":"m","input":"Hello"}`,
			canon.ChatRequest{Model: "m", Messages: []canon.Message{user("Hello")}}},
		{"instructions first", `{"model":"m","instructions":"Be brief.","input":"Hi"}`,
			canon.ChatRequest{Model: "m", Messages: []canon.Message{
				{Role: canon.RoleSystem, Content: []canon.Part{{Type: canon.PartText, Text: "Be brief."}}}, user("Hi")}}},
		{"messages and roles", `{"model":"m","input":[
			{"role":"developer","content":"dev"},
			{"type":"message","role":"system","content":[{"type":"input_text","text":"sys"}]},
			{"role":"user","content":[{"type":"input_text","text":"look"},
				{"type":"input_image","image_url":"https://example.com/a.png","detail":"high"},
				{"type":"input_image","image_url":"data:image/PNG;base64,iVBORw0KGgo="}]},
			{"role":"assistant","content":[{"type":"output_text","text":"I see","annotations":[]},{"type":"refusal","refusal":" no"}]},
			{"role":"assistant","content":""}]}`,
			canon.ChatRequest{Model: "m", Messages: []canon.Message{
				{Role: canon.RoleSystem, Content: []canon.Part{{Type: canon.PartText, Text: "dev"}}},
				{Role: canon.RoleSystem, Content: []canon.Part{{Type: canon.PartText, Text: "sys"}}},
				{Role: canon.RoleUser, Content: []canon.Part{{Type: canon.PartText, Text: "look"},
					{Type: canon.PartImage, URL: "https://example.com/a.png", Detail: "high"},
					{Type: canon.PartImage, MediaType: "image/png", Data: "iVBORw0KGgo="}}},
				{Role: canon.RoleAssistant, Content: []canon.Part{{Type: canon.PartText, Text: "I see"}, {Type: canon.PartText, Text: " no"}}},
				{Role: canon.RoleAssistant}}}},
		{"function call round trip", `{"model":"m","input":[
			{"role":"user","content":"weather in Paris and Rome?"},
			{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"short"}],"content":[{"type":"reasoning_text","text":"need two calls"}]},
			{"role":"assistant","content":"Checking."},
			{"type":"function_call","id":"fc_1","call_id":"call_a","name":"weather","arguments":"{\"city\":\"Paris\"}","status":"completed"},
			{"type":"function_call","call_id":"call_b","name":"weather","arguments":"{\"city\":\"Rome\"}"},
			{"type":"function_call_output","call_id":"call_a","output":"18C"},
			{"type":"function_call_output","call_id":"call_b","output":[{"type":"input_text","text":"21C"}]},
			{"type":"reasoning","summary":[{"type":"summary_text","text":"one more"}]},
			{"type":"function_call","call_id":"call_c","name":"weather","arguments":"{}"}]}`,
			canon.ChatRequest{Model: "m", Messages: []canon.Message{
				user("weather in Paris and Rome?"),
				{Role: canon.RoleAssistant, Reasoning: "need two calls", Content: []canon.Part{{Type: canon.PartText, Text: "Checking."}},
					ToolCalls: []canon.ToolCall{{ID: "call_a", Name: "weather", Arguments: `{"city":"Paris"}`}, {ID: "call_b", Name: "weather", Arguments: `{"city":"Rome"}`}}},
				{Role: canon.RoleTool, ToolCallID: "call_a", Content: []canon.Part{{Type: canon.PartText, Text: "18C"}}},
				{Role: canon.RoleTool, ToolCallID: "call_b", Content: []canon.Part{{Type: canon.PartText, Text: "21C"}}},
				{Role: canon.RoleAssistant, Reasoning: "one more", ToolCalls: []canon.ToolCall{{ID: "call_c", Name: "weather", Arguments: "{}"}}}}}},
		{"reasoning before a user turn is dropped", `{"model":"m","input":[
			{"type":"reasoning","summary":[],"content":[{"type":"reasoning_text","text":"stale"}]},
			{"role":"user","content":"hi"},{"role":"assistant","content":"hello"}]}`,
			canon.ChatRequest{Model: "m", Messages: []canon.Message{user("hi"),
				{Role: canon.RoleAssistant, Content: []canon.Part{{Type: canon.PartText, Text: "hello"}}}}}},
		{"options", `{"model":"m","input":"x","max_output_tokens":256,"temperature":0.5,"top_p":0.9,
			"stream":true,"store":false,"background":false,"metadata":{"k":"v"},"user":"u1","safety_identifier":"s1",
			"parallel_tool_calls":false,"reasoning":{"effort":"high","summary":"auto"},
			"text":{"format":{"type":"json_schema","name":"out","schema":{"type":"object"},"strict":true},"verbosity":"low"},
			"tools":[{"type":"function","name":"f","description":"d","parameters":{"type":"object","properties":{}},"strict":true}],
			"tool_choice":{"type":"function","name":"f"},"include":["reasoning.encrypted_content"],"truncation":"auto"}`,
			canon.ChatRequest{Model: "m", Messages: []canon.Message{user("x")}, MaxTokens: 256,
				Temperature: ptr(0.5), TopP: ptr(0.9), Stream: true, IncludeUsage: true, User: "u1",
				ParallelToolCalls: ptr(false), Think: canon.ThinkHigh, TruncateOldest: true,
				ResponseFormat: &canon.ResponseFormat{Type: canon.FormatJSONSchema, Name: "out", Schema: json.RawMessage(`{"type":"object"}`), Strict: true},
				Tools:          []canon.Tool{{Name: "f", Description: "d", Parameters: json.RawMessage(`{"type":"object","properties":{}}`), Strict: true}},
				ToolChoice:     &canon.ToolChoice{Mode: canon.ToolChoiceFunction, Name: "f"}}},
		{"json_object and tool choice strings", `{"model":"m","input":"x","text":{"format":{"type":"json_object"}},"tool_choice":"required","reasoning":{"effort":"none"}}`,
			canon.ChatRequest{Model: "m", Messages: []canon.Message{user("x")},
				ResponseFormat: &canon.ResponseFormat{Type: canon.FormatJSONObject},
				ToolChoice:     &canon.ToolChoice{Mode: canon.ToolChoiceRequired}, Think: canon.ThinkOff}},
		{"nulls read as absent", `{"model":"m","input":"x","instructions":null,"tools":null,"tool_choice":null,"text":null,"reasoning":null,"previous_response_id":null,"conversation":null,"metadata":null,"max_output_tokens":null}`,
			canon.ChatRequest{Model: "m", Messages: []canon.Message{user("x")}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := h.DecodeRequest([]byte(tc.body), sdktest.Meta(routeMeta...))
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("-want +got:\n%s", d)
			}
		})
	}
}

// TestDecodeRequest_Meta checks the routing meta the SDK reports from the
// request: the host schedules on it.
func TestDecodeRequest_Meta(t *testing.T) {
	h := newHarness(t)
	r := h.Call(abi.OpRequestDecode, sdktest.Meta(routeMeta...),
		sdktest.Payload([]byte(`{"model":"qwen3-8b","input":"x","stream":true,"max_output_tokens":99}`)))
	if !r.OK() {
		t.Fatal(r.Status, r.Error)
	}
	for k, v := range map[string]string{abi.MetaModel: "qwen3-8b", abi.MetaStream: "1", abi.MetaIncludeUsage: "1", abi.MetaMaxTokens: "99"} {
		if r.Meta[k] != v {
			t.Errorf("meta %s = %q, want %q", k, r.Meta[k], v)
		}
	}
}

func TestDecodeRequest_Errors(t *testing.T) {
	h := newHarness(t)
	for _, tc := range []struct{ body, want string }{
		{`[]`, "request body must be a JSON object"},
		{`{"input":"x"}`, "model is required"},
		{`{"model":"m"}`, "input is required"},
		{`{"model":"m","input":[]}`, "input must not be empty"},
		{`{"model":"m","input":5}`, "input must be a string or an array of input items"},
		{`{"model":"m","input":"x","previous_response_id":"resp_1"}`, ErrNoState},
		{`{"model":"m","input":"x","conversation":"conv_1"}`, "conversation needs stored conversations, which are off on this gateway"},
		{`{"model":"m","input":"x","background":true}`, "background: background mode is not supported on this gateway (send background: false or leave it out)"},
		{`{"model":"m","input":"x","prompt":{"id":"pmpt_1"}}`, "prompt: stored prompt templates are not supported on this gateway (send instructions and input instead)"},
		{`{"model":"m","input":"x","tools":[{"type":"hologram"}]}`, "tools[0].type: tool type hologram is not supported on this gateway (function and namespace tools are offered to the model, hosted tools are dropped)"},
		{`{"model":"m","input":"x","tools":[{"type":"namespace","name":"ns","tools":[{"type":"hologram"}]}]}`, "tools[0].tools[0].type: tool type hologram is not supported in a namespace on this gateway (only function)"},
		{`{"model":"m","input":"x","tools":[{"type":"namespace","tools":[]}]}`, "tools[0].name is required"},
		{`{"model":"m","input":"x","tools":[{"type":"namespace","name":"ns","tools":[{"type":"function"}]}]}`, "tools[0].tools[0].name is required"},
		{`{"model":"m","input":"x","truncation":"middle"}`, `truncation "middle" is not supported (use auto or disabled)`},
		{`{"model":"m","input":"x","tools":[{"type":"function"}]}`, "tools[0].name is required"},
		{`{"model":"m","input":"x","tool_choice":{"type":"hologram"}}`, "tool_choice.type: tool choice type hologram is not supported on this gateway (only function)"},
		{`{"model":"m","input":"x","tool_choice":"any"}`, `tool_choice "any" is not supported (use auto, none, required or {"type":"function","name":...})`},
		{`{"model":"m","input":[{"type":"item_reference","id":"msg_1"}]}`, "input[0].type: item_reference is not supported on this gateway (send the item itself)"},
		{`{"model":"m","input":[{"type":"web_search_call","id":"ws_1"}]}`, "input[0].type: input item type web_search_call is not supported (use message, function_call, function_call_output or reasoning)"},
		{`{"model":"m","input":[{"role":"user","content":[{"type":"input_file","file_id":"file_1"}]}]}`, "input[0].content[0].type: input_file is not supported on this gateway (send the text as input_text)"},
		{`{"model":"m","input":[{"role":"user","content":[{"type":"input_image","file_id":"file_1"}]}]}`, "input[0].content[0].file_id: uploaded files are not supported on this gateway (send image_url)"},
		{`{"model":"m","input":[{"role":"user","content":[{"type":"input_image","image_url":"ftp://x"}]}]}`, "input[0].content[0].image_url must be an http(s) URL or a base64 data URI"},
		{`{"model":"m","input":[{"role":"user","content":[{"type":"output_text","text":"x"}]}]}`, "input[0].content[0].type: output_text is only allowed in assistant messages (use input_text)"},
		{`{"model":"m","input":[{"role":"tool","content":"x"}]}`, `input[0].role "tool" is not supported (use user, assistant, system or developer)`},
		{`{"model":"m","input":[{"content":"x"}]}`, "input[0].role is required"},
		{`{"model":"m","input":[{"type":"function_call","name":"f","arguments":"{}"}]}`, "input[0].call_id is required"},
		{`{"model":"m","input":[{"type":"function_call","call_id":"c","name":"f","arguments":{}}]}`, "input[0].arguments must be a string"},
		{`{"model":"m","input":[{"type":"function_call_output","call_id":"c"}]}`, "input[0].output is required"},
		{`{"model":"m","input":[{"type":"reasoning","summary":[{"type":"summary_text","text":5}]}]}`, "input[0].summary[0].text must be a string"},
		{`{"model":"m","input":[{"type":"reasoning","summary":[]}]}`, "input has no message, function_call or function_call_output item"},
		{`{"model":"m","input":"x","max_output_tokens":0}`, "max_output_tokens must be between 1 and 2147483647"},
		{`{"model":"m","input":"x","temperature":3}`, "temperature must be between 0 and 2"},
		{`{"model":"m","input":"x","top_p":"1"}`, "top_p must be a number"},
		{`{"model":"m","input":"x","stream":"yes"}`, "stream must be a boolean"},
		{`{"model":"m","input":"x","metadata":{"k":1}}`, "metadata.k must be a string"},
		{`{"model":"m","input":"x","text":{"format":{"type":"json_schema","name":"n"}}}`, "text.format.schema is required"},
		{`{"model":"m","input":"x","text":{"format":{"type":"grammar"}}}`, "text.format.type grammar is not supported (use text, json_object or json_schema)"},
		{`{"model":"m","input":"x","reasoning":{"effort":"max"}}`, `reasoning.effort "max" is not supported (use none, minimal, low, medium, high or xhigh)`},
	} {
		if got := h.RequestError([]byte(tc.body), sdktest.Meta(routeMeta...)); got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.body, got, tc.want)
		}
	}
}

// TestInputTokens decodes the count route's body (what reaches the
// model's context; sampling fields are not checked) and writes OpenAI's
// answer.
func TestInputTokens(t *testing.T) {
	h := newHarness(t)
	got := h.DecodeRequest([]byte(`{"model":"m","instructions":"sys","input":"hi","temperature":9,
		"tools":[{"type":"function","name":"f","parameters":{"type":"object"}}]}`), sdktest.Meta(countMeta...))
	want := canon.ChatRequest{Model: "m", Messages: []canon.Message{
		{Role: canon.RoleSystem, Content: []canon.Part{{Type: canon.PartText, Text: "sys"}}}, user("hi")},
		Tools: []canon.Tool{{Name: "f", Parameters: json.RawMessage(`{"type":"object"}`)}}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("-want +got:\n%s", d)
	}
	tc := canon.TokenCount{Count: 42, Estimate: true}
	r := h.Call(abi.OpTokensEncode, sdktest.Meta(countMeta...), sdktest.Payload(tc.AppendJSON(nil)))
	if !r.OK() || string(r.Payload) != `{"object":"response.input_tokens","input_tokens":42}` {
		t.Fatalf("%s %s %s", r.Status, r.Payload, r.Error)
	}
	if msg := h.RequestError([]byte(`{"model":"m","input":"x","previous_response_id":"resp_1"}`), sdktest.Meta(countMeta...)); msg != "previous_response_id: counting a stored response's history is not supported (send the whole input)" {
		t.Errorf("previous_response_id on the count route: %q", msg)
	}
	if msg := h.RequestError([]byte(`{"model":"m","input":"x"}`), sdktest.Meta(abi.MetaRoute, "models")); msg != "route models has no request body to decode" {
		t.Errorf("other route: %q", msg)
	}
}

// TestDecodeRequest_OutputAsInput: the host's keeper splices a stored
// response's output items into the next request's input as they were
// written; they must read back as the assistant turn they came from.
func TestDecodeRequest_OutputAsInput(t *testing.T) {
	h := newHarness(t)
	body := h.EncodeResponse(responseCases[1].resp, sdktest.Meta(gwMeta...))
	var r struct{ Output []json.RawMessage }
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatal(err)
	}
	input := []json.RawMessage{json.RawMessage(`{"role":"user","content":"weather?"}`)}
	input = append(input, r.Output...)
	input = append(input, json.RawMessage(`{"type":"function_call_output","call_id":"call_a","output":"18C"}`))
	req, _ := json.Marshal(map[string]any{"model": "m", "input": input})
	got := h.DecodeRequest(req, sdktest.Meta(routeMeta...))
	want := canon.ChatRequest{Model: "m", Messages: []canon.Message{user("weather?"),
		{Role: canon.RoleAssistant, Reasoning: "Two cities: two calls.", Content: []canon.Part{{Type: canon.PartText, Text: "Checking \"both\"."}},
			ToolCalls: []canon.ToolCall{{ID: "call_a", Name: "weather", Arguments: `{"city":"Paris"}`}, {ID: "call_" + testHex + "_3", Name: "weather", Arguments: "{}"}}},
		{Role: canon.RoleTool, ToolCallID: "call_a", Content: []canon.Part{{Type: canon.PartText, Text: "18C"}}}}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("-want +got:\n%s", d)
	}
}
