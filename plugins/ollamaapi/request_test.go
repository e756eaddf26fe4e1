package ollamaapi

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// routeOf returns the route a testdata name is for (its prefix).
func routeOf(name string) string {
	if strings.HasPrefix(name, "generate_") {
		return RouteGenerate
	}
	return RouteChat
}

// TestDecodeRequest_Golden decodes each testdata/requests/*.req.json through
// the SDK dispatcher and compares the canonical JSON with *.canon.json.
func TestDecodeRequest_Golden(t *testing.T) {
	p := newPlugin()
	for _, name := range testFiles(t, "requests", ".req.json") {
		t.Run(name, func(t *testing.T) {
			body, err := os.ReadFile(filepath.Join("testdata", "requests", name+".req.json"))
			if err != nil {
				t.Fatal(err)
			}
			r := call(t, p, abi.OpRequestDecode, 0, nil, body, abi.MetaRoute, routeOf(name), abi.MetaKind, "chat")
			if r.Status != abi.StatusOK {
				t.Fatalf("status %s: %s", r.Status, r.Error)
			}
			goldenJSON(t, filepath.Join("requests", name+".canon.json"), r.Payload)
		})
	}
}

func mustDecode(t *testing.T, route, body string) canon.ChatRequest {
	t.Helper()
	req, r := decode(t, route, body)
	if r.Status != abi.StatusOK {
		t.Fatalf("decode %s: %s %s", body, r.Status, r.Error)
	}
	return req
}

const chatMsgs = `"model":"m","messages":[{"role":"user","content":"hi"}]`

func TestDecodeRequest_RoutingMeta(t *testing.T) {
	for _, tc := range []struct {
		body, stream, maxTokens string
	}{
		{`{` + chatMsgs + `}`, "1", ""}, // Ollama streams by default
		{`{` + chatMsgs + `,"stream":false}`, "0", ""},
		{`{` + chatMsgs + `,"stream":true,"options":{"num_predict":64}}`, "1", "64"},
		{`{` + chatMsgs + `,"options":{"num_predict":-1}}`, "1", ""},
		{`{` + chatMsgs + `,"options":{"num_predict":-2}}`, "1", ""},
		{`{` + chatMsgs + `,"options":{"num_predict":0}}`, "1", ""},
	} {
		_, r := decode(t, RouteChat, tc.body)
		if r.Status != abi.StatusOK {
			t.Fatalf("%s: %s %s", tc.body, r.Status, r.Error)
		}
		if r.Meta[abi.MetaStream] != tc.stream || r.Meta[abi.MetaMaxTokens] != tc.maxTokens ||
			r.Meta[abi.MetaModel] != "m" || r.Meta[abi.MetaIncludeUsage] != "1" {
			t.Errorf("%s: meta %v", tc.body, r.Meta)
		}
	}
}

func TestDecodeRequest_Think(t *testing.T) {
	for _, tc := range []struct {
		think string
		want  canon.Think
	}{
		{``, canon.ThinkUnset},
		{`,"think":null`, canon.ThinkUnset},
		{`,"think":true`, canon.ThinkOn},
		{`,"think":false`, canon.ThinkOff},
		{`,"think":"low"`, canon.ThinkLow},
		{`,"think":"medium"`, canon.ThinkMedium},
		{`,"think":"high"`, canon.ThinkHigh},
	} {
		for _, route := range []string{RouteChat, RouteGenerate} {
			body := `{` + chatMsgs + tc.think + `}`
			if route == RouteGenerate {
				body = `{"model":"m","prompt":"hi"` + tc.think + `}`
			}
			if got := mustDecode(t, route, body).Think; got != tc.want {
				t.Errorf("%s %s: think %q, want %q", route, body, got, tc.want)
			}
		}
	}
}

// TestDecodeRequest_ToolCallIDs pins how tool results find their calls:
// ids are made up as call_<message>_<call> when absent; a result names
// its call by tool_call_id, or by tool_name (first unanswered call of that
// name in the latest assistant turn), or, naming nothing, by position.
func TestDecodeRequest_ToolCallIDs(t *testing.T) {
	body := `{"model":"m","messages":[
	{"role":"user","content":"go"},
	{"role":"assistant","content":"","tool_calls":[
		{"function":{"name":"a","arguments":{"x":1}}},
		{"function":{"name":"b","arguments":{}}},
		{"function":{"name":"a","arguments":{"x":2}}}]},
	{"role":"tool","content":"ra2","tool_name":"a"},
	{"role":"tool","content":"rb","tool_name":"b"},
	{"role":"tool","content":"ra2'","tool_name":"a"},
	{"role":"assistant","content":"","tool_calls":[
		{"id":"given","function":{"name":"c","arguments":"{\"y\": [1, 2]}"}},
		{"function":{"name":"d"}}]},
	{"role":"tool","content":"rd","tool_call_id":"call_5_1"},
	{"role":"tool","content":"rc"},
	{"role":"tool","content":"stale","tool_name":"b"},
	{"role":"tool","content":"orphan","tool_name":"zzz"}]}`
	req := mustDecode(t, RouteChat, body)
	calls := req.Messages[1].ToolCalls
	if calls[0].ID != "call_1_0" || calls[1].ID != "call_1_1" || calls[2].ID != "call_1_2" ||
		calls[0].Arguments != `{"x":1}` || calls[1].Arguments != `{}` {
		t.Fatalf("calls %+v", calls)
	}
	second := req.Messages[5].ToolCalls
	if second[0].ID != "given" || second[0].Arguments != `{"y": [1, 2]}` || second[1].ID != "call_5_1" || second[1].Arguments != "{}" {
		t.Fatalf("second turn %+v", second)
	}
	want := []struct {
		msg      int
		id, name string
	}{
		{2, "call_1_0", "a"}, {3, "call_1_1", "b"}, {4, "call_1_2", "a"},
		{6, "call_5_1", ""}, {7, "given", ""}, {8, "call_1_1", "b"}, {9, "", "zzz"},
	}
	for _, w := range want {
		m := req.Messages[w.msg]
		if m.Role != canon.RoleTool || m.ToolCallID != w.id || m.Name != w.name {
			t.Errorf("message %d: role %s id %q name %q, want id %q name %q", w.msg, m.Role, m.ToolCallID, m.Name, w.id, w.name)
		}
	}
}

func TestDecodeRequest_ImageMediaTypes(t *testing.T) {
	req := mustDecode(t, RouteChat, mustRead(t, "requests/chat_images.req.json"))
	var got []string
	for _, p := range req.Messages[0].Content {
		got = append(got, string(p.Type)+":"+p.MediaType)
	}
	want := "image:image/png image:image/jpeg image:image/gif image:image/webp text:"
	if strings.Join(got, " ") != want {
		t.Fatalf("parts %v, want %s", got, want)
	}
	req = mustDecode(t, RouteChat, `{"model":"m","messages":[{"role":"user","content":"x","images":["data:image/png;base64,AAAA"]}]}`)
	if p := req.Messages[0].Content[0]; p.MediaType != "image/png" || p.Data != "AAAA" {
		t.Fatalf("data URI part %+v", p)
	}
}

func mustRead(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestDecodeRequest_Generate(t *testing.T) {
	req := mustDecode(t, RouteGenerate, `{"model":"m","prompt":"p","system":"s","stream":false}`)
	if len(req.Messages) != 2 || req.Messages[0].Role != canon.RoleSystem || req.Messages[0].Text() != "s" ||
		req.Messages[1].Role != canon.RoleUser || req.Messages[1].Text() != "p" || req.Stream {
		t.Fatalf("generate: %+v", req)
	}
	req = mustDecode(t, RouteGenerate, `{"model":"m","prompt":"p","raw":false,"suffix":"","template":""}`)
	if len(req.Messages) != 1 || !req.Stream {
		t.Fatalf("generate without system: %+v", req)
	}
}

// TestDecodeRequest_Errors checks that bad input is refused with a message
// naming the field (the host answers it as a 400 {"error": ...}).
func TestDecodeRequest_Errors(t *testing.T) {
	for _, tc := range []struct {
		route, body, want string
	}{
		{RouteChat, `[]`, "must be a JSON object"},
		{RouteChat, `{"model":"m",`, "not valid JSON"},
		{RouteChat, `{"messages":[{"role":"user","content":"x"}]}`, "model is required"},
		{RouteChat, `{"model":7,"messages":[]}`, "model must be a string"},
		{RouteChat, `{"model":"m"}`, "messages is required"},
		{RouteChat, `{"model":"m","messages":[]}`, "load-only"},
		{RouteChat, `{"model":"m","messages":[{"role":"robot","content":"x"}]}`, `messages[0].role "robot" is not supported`},
		{RouteChat, `{"model":"m","messages":[{"content":"x"}]}`, "messages[0].role is required"},
		{RouteChat, `{"model":"m","messages":[{"role":"user","content":5}]}`, "messages[0].content must be a string"},
		{RouteChat, `{"model":"m","messages":[{"role":"user","content":"x","images":["bm90IGFuIGltYWdl"]}]}`, "messages[0].images[0]: not a base64 PNG"},
		{RouteChat, `{"model":"m","messages":[{"role":"user","content":"x","images":[1]}]}`, "messages[0].images[0] must be a base64 string"},
		{RouteChat, `{"model":"m","messages":[{"role":"assistant","content":"","tool_calls":[{"function":{"name":"f","arguments":[1]}}]}]}`, "messages[0].tool_calls[0].function.arguments must be an object"},
		{RouteChat, `{"model":"m","messages":[{"role":"assistant","content":"","tool_calls":[{"function":{"arguments":{}}}]}]}`, "messages[0].tool_calls[0].function.name is required"},
		{RouteChat, `{` + chatMsgs + `,"stream":"yes"}`, "stream must be a boolean"},
		{RouteChat, `{` + chatMsgs + `,"think":"max"}`, `invalid think value: "max"`},
		{RouteChat, `{` + chatMsgs + `,"think":1}`, "think must be"},
		{RouteChat, `{` + chatMsgs + `,"format":"yaml"}`, `format "yaml" is not supported`},
		{RouteChat, `{` + chatMsgs + `,"format":[1]}`, "format must be"},
		{RouteChat, `{` + chatMsgs + `,"options":[]}`, "options must be an object"},
		{RouteChat, `{` + chatMsgs + `,"options":{"temperature":"hot"}}`, "options.temperature must be a number"},
		{RouteChat, `{` + chatMsgs + `,"options":{"num_predict":1.5}}`, "options.num_predict must be an integer"},
		{RouteChat, `{` + chatMsgs + `,"options":{"stop":"x","seed":"s"}}`, "options.seed must be an integer"},
		{RouteChat, `{` + chatMsgs + `,"options":{"stop":[1]}}`, "options.stop must be an array of strings"},
		{RouteChat, `{` + chatMsgs + `,"keep_alive":true}`, "keep_alive must be"},
		{RouteChat, `{` + chatMsgs + `,"tools":[{"type":"function"}]}`, "tools[0].function is required"},
		{RouteChat, `{` + chatMsgs + `,"tools":[{"type":"retrieval","function":{"name":"f"}}]}`, "tool type retrieval is not supported"},
		{RouteChat, `{` + chatMsgs + `,"tools":[{"function":{"name":"f","parameters":"x"}}]}`, "tools[0].function.parameters must be an object"},
		{RouteGenerate, `{"model":"m","prompt":"","raw":true}`, "prompt is required"},
		{RouteGenerate, `{"model":"m","prompt":"p","raw":true,"images":["iVBORw0KGgo="]}`, "images are not supported with raw"},
		{RouteGenerate, `{"model":"m","prompt":"def f(","suffix":"    return x"}`, "suffix is not supported"},
		{RouteGenerate, `{"model":"m","prompt":"p","template":"{{ .Prompt }}"}`, "template is not supported"},
		{RouteGenerate, `{"model":"m"}`, "prompt is required"},
		{RouteGenerate, `{"model":"m","prompt":""}`, "load-only"},
		{RouteGenerate, `{"model":"m","prompt":3}`, "prompt must be a string"},
		{RouteTags, `{"model":"m"}`, "has no chat request"},
	} {
		_, r := decode(t, tc.route, tc.body)
		if r.Status != abi.StatusBadInput || !strings.Contains(r.Error, tc.want) {
			t.Errorf("%s %s: %s %q, want bad input containing %q", tc.route, tc.body, r.Status, r.Error, tc.want)
		}
	}
}

// TestDecodeGenerate_Raw: raw generate is a canonical text completion
// (no template, no system): the prompt as it is.
func TestDecodeGenerate_Raw(t *testing.T) {
	req, r := decode(t, RouteGenerate, `{"model":"m","prompt":"[INST] hi [/INST]","raw":true,"system":"ignored","options":{"num_predict":5}}`)
	if r.Status != abi.StatusOK {
		t.Fatalf("%s %s", r.Status, r.Error)
	}
	if len(req.Prompt) != 1 || req.Prompt[0] != "[INST] hi [/INST]" || len(req.Messages) != 0 || req.MaxTokens != 5 || !req.Stream {
		t.Fatalf("%+v", req)
	}
}
