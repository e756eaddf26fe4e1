package responses

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3/responses"

	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
	"github.com/mindrouter/mindrouter/sdk/sdktest"
)

// codexRequest is the first request of `codex exec` 0.169.0 (wire_api
// responses, its default tools), captured: function tools, the
// multi_agent_v1 namespace and a hosted web_search tool; store false.
func codexRequest(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "codex-exec-request.json"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestCodexRequest: the namespace's tools reach the model flattened
// ("multi_agent_v1__close_agent"), web_search is dropped and named in
// the dropped-tools meta, and the request is not refused (it was: "tool
// type namespace is not supported").
func TestCodexRequest(t *testing.T) {
	h := newHarness(t)
	r := h.Call(abi.OpRequestDecode, sdktest.Meta(routeMeta...), sdktest.Payload(codexRequest(t)))
	if !r.OK() {
		t.Fatalf("request_decode: %s %s", r.Status, r.Error)
	}
	var req canon.ChatRequest
	if err := req.DecodeJSON(r.Payload); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range req.Tools {
		names = append(names, tl.Name)
	}
	got := strings.Join(names, ",")
	for _, want := range []string{"exec_command", "multi_agent_v1__close_agent", "multi_agent_v1__spawn_agent", "update_goal"} {
		if !strings.Contains(","+got+",", ","+want+",") {
			t.Errorf("tools offered %s, want %s among them", got, want)
		}
	}
	if strings.Contains(got, "web_search") {
		t.Errorf("web_search offered to the model: %s", got)
	}
	if d := r.Meta[abi.MetaDroppedTools]; d != "web_search" {
		t.Errorf("dropped tools meta %q, want web_search", d)
	}
	if len(r.Meta[abi.MetaEcho]) == 0 {
		t.Fatal("no echo note")
	}
}

// TestCodexEcho: the Response object repeats the request (store false,
// its tools, reasoning.summary) and names a call of a namespaced tool as
// Codex expects it: namespace and name, not the flat name, streamed and
// not.
func TestCodexEcho(t *testing.T) {
	h := newHarness(t)
	r := h.Call(abi.OpRequestDecode, sdktest.Meta(routeMeta...), sdktest.Payload(codexRequest(t)))
	if !r.OK() {
		t.Fatalf("request_decode: %s %s", r.Status, r.Error)
	}
	meta := sdktest.Meta(append(append([]string(nil), gwMeta...), abi.MetaEcho, r.Meta[abi.MetaEcho])...)
	call := canon.ToolCall{ID: "call_1", Name: "multi_agent_v1__close_agent", Arguments: `{"id":"a1"}`}
	body := h.EncodeResponse(canon.ChatResponse{Choices: []canon.Choice{{Message: canon.Message{Role: canon.RoleAssistant,
		ToolCalls: []canon.ToolCall{call}}, FinishReason: canon.FinishToolCalls}}}, meta)
	var resp responses.Response
	if err := json.Unmarshal(body, &resp); err != nil {
		t.Fatalf("%v\n%s", err, body)
	}
	if st := rawField(t, body, "store"); st != "false" {
		t.Errorf("store = %s, want false", st)
	}
	if n := len(resp.Tools); n != 9 {
		t.Errorf("%d tools echoed, want the request's 9", n)
	}
	if s := resp.Reasoning.Summary; s != "auto" {
		t.Errorf("reasoning.summary = %q, want auto", s)
	}
	if !resp.ParallelToolCalls || resp.ToolChoice.OfToolChoiceMode != "auto" {
		t.Errorf("parallel_tool_calls %v, tool_choice %s", resp.ParallelToolCalls, resp.JSON.ToolChoice.Raw())
	}
	checkNamespaced(t, "response", resp.Output[0].RawJSON())

	s := h.EncodeStream([][]canon.ChatChunk{
		{toolDelta(canon.ToolCallDelta{Index: 0, ID: "call_1", Name: call.Name, Arguments: call.Arguments})},
		{finish(canon.FinishToolCalls)},
	}, meta)
	events := readEvents(t, s)
	for _, ev := range events {
		switch ev.Type {
		case "response.created", "response.completed":
			if st := rawField(t, []byte(ev.Response.RawJSON()), "store"); st != "false" || len(ev.Response.Tools) != 9 {
				t.Errorf("%s: store %s, %d tools", ev.Type, st, len(ev.Response.Tools))
			}
		case "response.output_item.added", "response.output_item.done":
			checkNamespaced(t, ev.Type, ev.Item.RawJSON())
		case "response.function_call_arguments.done":
			if n := rawField(t, []byte(ev.RawJSON()), "name"); n != `"close_agent"` {
				t.Errorf("%s: name %s, want close_agent", ev.Type, n)
			}
		}
	}
}

// rawField is the JSON of an object's field.
func rawField(t *testing.T, obj []byte, key string) string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(obj, &m); err != nil {
		t.Fatalf("%v\n%s", err, obj)
	}
	return string(m[key])
}

// checkNamespaced checks a function_call item's namespace and name.
func checkNamespaced(t *testing.T, where, item string) {
	t.Helper()
	var it struct{ Type, Name, Namespace string }
	if err := json.Unmarshal([]byte(item), &it); err != nil {
		t.Fatal(err)
	}
	if it.Type != "function_call" || it.Name != "close_agent" || it.Namespace != "multi_agent_v1" {
		t.Errorf("%s: item %s, want a function_call close_agent in namespace multi_agent_v1", where, item)
	}
}

// TestEchoRequestFields: the Response object carries what the request
// asked (OpenAI's own echo), its defaults for what it left out.
func TestEchoRequestFields(t *testing.T) {
	h := newHarness(t)
	req := `{"model":"m","input":"x","instructions":"Be brief.","max_output_tokens":77,"store":false,"temperature":0.25,
		"top_p":0.5,"metadata":{"k":"v"},"user":"u7","parallel_tool_calls":false,"truncation":"auto",
		"reasoning":{"effort":"low","summary":"detailed"},"text":{"format":{"type":"json_object"},"verbosity":"low"},
		"tools":[{"type":"function","name":"f","parameters":{"type":"object"}}],"tool_choice":"required"}`
	r := h.Call(abi.OpRequestDecode, sdktest.Meta(routeMeta...), sdktest.Payload([]byte(req)))
	if !r.OK() {
		t.Fatalf("request_decode: %s %s", r.Status, r.Error)
	}
	meta := sdktest.Meta(append(append([]string(nil), gwMeta...), abi.MetaEcho, r.Meta[abi.MetaEcho])...)
	body := h.EncodeResponse(responseCases[0].resp, meta)
	var got map[string]json.RawMessage
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatalf("%v\n%s", err, body)
	}
	for k, want := range map[string]string{
		"instructions": `"Be brief."`, "max_output_tokens": `77`, "store": `false`, "temperature": `0.25`,
		"top_p": `0.5`, "metadata": `{"k":"v"}`, "user": `"u7"`, "parallel_tool_calls": `false`,
		"truncation": `"auto"`, "reasoning": `{"effort":"low","summary":"detailed"}`,
		"text":  `{"format":{"type":"json_object"},"verbosity":"low"}`,
		"tools": `[{"type":"function","name":"f","parameters":{"type":"object"}}]`, "tool_choice": `"required"`,
	} {
		if string(got[k]) != want {
			t.Errorf("%s = %s, want %s", k, got[k], want)
		}
	}
	var resp responses.Response
	if err := json.Unmarshal(body, &resp); err != nil {
		t.Fatal(err)
	}
	if resp.MaxOutputTokens != 77 || resp.Instructions.OfString != "Be brief." {
		t.Errorf("the SDK reads max_output_tokens %d, instructions %q", resp.MaxOutputTokens, resp.Instructions.OfString)
	}
	// Without a note (an older host): OpenAI's defaults, valid JSON.
	body = h.EncodeResponse(responseCases[0].resp, sdktest.Meta(gwMeta...))
	if err := json.Unmarshal(body, &got); err != nil || string(got["store"]) != "true" || string(got["tools"]) != "[]" {
		t.Errorf("defaults: %v %s", err, body)
	}
}

// TestCodexNamespacedInput: a later turn sends the model's call back
// with its namespace; the model sees its flat name again.
func TestCodexNamespacedInput(t *testing.T) {
	h := newHarness(t)
	req := h.DecodeRequest([]byte(`{"model":"m","input":[{"role":"user","content":"x"},
		{"type":"function_call","call_id":"c1","namespace":"multi_agent_v1","name":"close_agent","arguments":"{}"},
		{"type":"function_call_output","call_id":"c1","output":"ok"}],
		"tools":[{"type":"namespace","name":"multi_agent_v1","description":"d","tools":[{"type":"function","name":"close_agent","parameters":{"type":"object"}}]}],
		"tool_choice":{"type":"function","namespace":"multi_agent_v1","name":"close_agent"}}`), sdktest.Meta(routeMeta...))
	if n := req.Messages[1].ToolCalls[0].Name; n != "multi_agent_v1__close_agent" {
		t.Errorf("history call named %q", n)
	}
	if req.ToolChoice == nil || req.ToolChoice.Name != "multi_agent_v1__close_agent" {
		t.Errorf("tool_choice %+v", req.ToolChoice)
	}
}
