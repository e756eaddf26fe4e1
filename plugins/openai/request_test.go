package openai

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

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
			r := call(t, p, abi.OpRequestDecode, 0, nil, body, "route", RouteChat)
			if r.Status != abi.StatusOK {
				t.Fatalf("status %s: %s", r.Status, r.Error)
			}
			goldenJSON(t, filepath.Join("requests", name+".canon.json"), r.Payload)
		})
	}
}

func decode(t *testing.T, body string) (*canon.ChatRequest, error) {
	t.Helper()
	var req canon.ChatRequest
	err := New().DecodeRequest(&sdk.Call{}, []byte(body), &req)
	return &req, err
}

func mustDecode(t *testing.T, body string) *canon.ChatRequest {
	t.Helper()
	req, err := decode(t, body)
	if err != nil {
		t.Fatalf("decode %s: %v", body, err)
	}
	return req
}

const msgs = `"model":"m","messages":[{"role":"user","content":"hi"}]`

func TestDecodeRequest_MaxTokensPriority(t *testing.T) {
	for _, tc := range []struct {
		body string
		want int
	}{
		{`{` + msgs + `}`, 0},
		{`{` + msgs + `,"max_tokens":100}`, 100},
		{`{` + msgs + `,"max_completion_tokens":50}`, 50},
		{`{` + msgs + `,"max_tokens":100,"max_completion_tokens":50}`, 50},
		{`{` + msgs + `,"max_completion_tokens":50,"max_tokens":100}`, 50},
		{`{` + msgs + `,"max_completion_tokens":null,"max_tokens":100}`, 100},
		{`{` + msgs + `,"max_tokens":1e3}`, 1000},
	} {
		if got := mustDecode(t, tc.body).MaxTokens; got != tc.want {
			t.Errorf("%s: MaxTokens = %d, want %d", tc.body, got, tc.want)
		}
	}
}

func TestDecodeRequest_Thinking(t *testing.T) {
	for _, tc := range []struct {
		extra  string
		want   canon.Think
		budget int
	}{
		{``, canon.ThinkUnset, 0},
		{`"think":true`, canon.ThinkOn, 0},
		{`"think":false`, canon.ThinkOff, 0},
		{`"think":"low"`, canon.ThinkLow, 0},
		{`"think":"medium"`, canon.ThinkMedium, 0},
		{`"think":"high"`, canon.ThinkHigh, 0},
		{`"thinking":{"type":"enabled"}`, canon.ThinkOn, 0},
		{`"thinking":{"type":"adaptive"}`, canon.ThinkOn, 0},
		{`"thinking":{"type":"disabled"}`, canon.ThinkOff, 0},
		{`"thinking":{"type":"enabled","budget_tokens":1024}`, canon.ThinkOn, 1024},
		{`"thinking":{"budget_tokens":512}`, canon.ThinkOn, 512},
		{`"thinking":{"type":"disabled","budget_tokens":512}`, canon.ThinkOff, 0},
		{`"chat_template_kwargs":{"enable_thinking":true}`, canon.ThinkOn, 0},
		{`"chat_template_kwargs":{"enable_thinking":false,"foo":1}`, canon.ThinkOff, 0},
		{`"chat_template_kwargs":{"thinking":true}`, canon.ThinkOn, 0},
		{`"chat_template_kwargs":{"add_generation_prompt":true}`, canon.ThinkUnset, 0},
		{`"reasoning_effort":"none"`, canon.ThinkOff, 0},
		{`"reasoning_effort":"minimal"`, canon.ThinkLow, 0},
		{`"reasoning_effort":"low"`, canon.ThinkLow, 0},
		{`"reasoning_effort":"medium"`, canon.ThinkMedium, 0},
		{`"reasoning_effort":"high"`, canon.ThinkHigh, 0},
		{`"reasoning_effort":"xhigh"`, canon.ThinkHigh, 0},
		// Priority: think > thinking > chat_template_kwargs > reasoning_effort.
		{`"reasoning_effort":"high","think":false`, canon.ThinkOff, 0},
		{`"think":"low","thinking":{"type":"enabled","budget_tokens":99}`, canon.ThinkLow, 99},
		{`"think":false,"thinking":{"type":"enabled","budget_tokens":99}`, canon.ThinkOff, 0},
		{`"thinking":{"type":"disabled"},"chat_template_kwargs":{"enable_thinking":true}`, canon.ThinkOff, 0},
		{`"chat_template_kwargs":{"enable_thinking":false},"reasoning_effort":"high"`, canon.ThinkOff, 0},
		{`"chat_template_kwargs":{},"reasoning_effort":"medium"`, canon.ThinkMedium, 0},
		{`"think":null,"reasoning_effort":"low"`, canon.ThinkLow, 0},
	} {
		req := mustDecode(t, `{`+msgs+`,`+strings.TrimPrefix(tc.extra+`,"x":0`, ",")+`}`)
		if req.Think != tc.want || req.ThinkBudget != tc.budget {
			t.Errorf("%s: Think=%q budget=%d, want %q %d", tc.extra, req.Think, req.ThinkBudget, tc.want, tc.budget)
		}
	}
}

func TestDecodeRequest_Fields(t *testing.T) {
	req := mustDecode(t, `{"model":"m","messages":[{"role":"user","content":""},{"role":"assistant","content":""}],
		"stop":"END","top_k":-1,"seed":-9007199254740993,"stream":true,"stream_options":{"include_usage":false},
		"tool_choice":"required","parallel_tool_calls":true,"user":"","safety_identifier":"sid","n":1}`)
	if len(req.Messages[0].Content) != 0 || len(req.Messages[1].Content) != 0 {
		t.Errorf("empty string content should give no parts: %+v", req.Messages)
	}
	if len(req.Stop) != 1 || req.Stop[0] != "END" {
		t.Errorf("Stop = %q", req.Stop)
	}
	if req.TopK == nil || *req.TopK != -1 || req.Seed == nil || *req.Seed != -9007199254740993 {
		t.Errorf("TopK/Seed = %v %v", req.TopK, req.Seed)
	}
	if !req.Stream || req.IncludeUsage {
		t.Errorf("Stream=%v IncludeUsage=%v", req.Stream, req.IncludeUsage)
	}
	if req.ToolChoice == nil || req.ToolChoice.Mode != canon.ToolChoiceRequired {
		t.Errorf("ToolChoice = %+v", req.ToolChoice)
	}
	if req.ParallelToolCalls == nil || !*req.ParallelToolCalls {
		t.Errorf("ParallelToolCalls = %v", req.ParallelToolCalls)
	}
	if req.User != "sid" {
		t.Errorf("User = %q, want the safety_identifier", req.User)
	}
	if req.N != 1 {
		t.Errorf("N = %d", req.N)
	}
	// Duplicate keys: the last one wins, as in Python and Go.
	if req := mustDecode(t, `{`+msgs+`,"temperature":1,"temperature":0.2}`); *req.Temperature != 0.2 {
		t.Errorf("duplicate key: temperature = %v", *req.Temperature)
	}
	// A flat Responses-style tool choice and a bare image URL string.
	req = mustDecode(t, `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":"http://x/y.png"}]}],"tool_choice":{"type":"function","name":"f"}}`)
	if req.ToolChoice.Name != "f" || req.Messages[0].Content[0].URL != "http://x/y.png" {
		t.Errorf("got %+v %+v", req.ToolChoice, req.Messages[0].Content)
	}
	// Tool-call arguments sent as an object are kept as JSON text.
	req = mustDecode(t, `{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"1","function":{"name":"f","arguments":{"a": 1}}}]}]}`)
	if got := req.Messages[0].ToolCalls[0].Arguments; got != `{"a":1}` {
		t.Errorf("object arguments = %q", got)
	}
}

// TestDecodeRequest_Errors checks that bad input is a BadInput naming the
// field, through the dispatcher.
func TestDecodeRequest_Errors(t *testing.T) {
	p := newPlugin()
	for _, tc := range []struct{ body, want string }{
		{`{"model":`, "request body is not valid JSON: "},
		{``, "request body is not valid JSON: "},
		{`{"model":"m","messages":[{"role":"user","content":"\x"}]}`, "request body is not valid JSON: "},
		{`[1]`, "request body must be a JSON object"},
		{`{"messages":[{"role":"user","content":"hi"}]}`, "model is required"},
		{`{"model":"","messages":[{"role":"user","content":"hi"}]}`, "model is required"},
		{`{"model":null,"messages":[{"role":"user","content":"hi"}]}`, "model is required"},
		{`{"model":5,"messages":[]}`, "model must be a string"},
		{`{"model":"m"}`, "messages is required"},
		{`{"model":"m","messages":[]}`, "messages must be a non-empty array"},
		{`{"model":"m","messages":{}}`, "messages must be a non-empty array"},
		{`{"model":"m","messages":["hi"]}`, "messages[0] must be an object"},
		{`{"model":"m","messages":[{"content":"hi"}]}`, "messages[0].role is required"},
		{`{"model":"m","messages":[{"role":1,"content":"hi"}]}`, "messages[0].role must be a string"},
		{`{"model":"m","messages":[{"role":"bot","content":"hi"}]}`, `messages[0].role "bot" is not supported`},
		{`{"model":"m","messages":[{"role":"user"}]}`, "messages[0].content is required"},
		{`{"model":"m","messages":[{"role":"tool","content":null}]}`, "messages[0].content is required"},
		{`{"model":"m","messages":[{"role":"user","content":7}]}`, "messages[0].content must be a string or an array of content parts"},
		{`{"model":"m","messages":[{"role":"user","content":[{"text":"x"}]}]}`, "messages[0].content[0].type is required"},
		{`{"model":"m","messages":[{"role":"user","content":[{"type":"text"}]}]}`, "messages[0].content[0].text must be a string"},
		{`{"model":"m","messages":[{"role":"user","content":[{"type":"input_audio","input_audio":{"data":"AA==","format":"wav"}}]}]}`, "content part type input_audio is not supported"},
		{`{"model":"m","messages":[{"role":"user","content":[{"type":"file","file":{"file_id":"f"}}]}]}`, "content part type file is not supported"},
		{`{"model":"m","messages":[{"role":"user","content":[{"type":"image_url"}]}]}`, "messages[0].content[0].image_url is required"},
		{`{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"ftp://x"}}]}]}`, "messages[0].content[0].image_url.url must be an http(s) URL or a base64 data URI"},
		{`{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png,abc"}}]}]}`, "messages[0].content[0].image_url.url must be a base64 data URI"},
		{`{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:;base64,abc"}}]}]}`, "image_url.url must be a base64 data URI"},
		{`{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x","detail":1}}]}]}`, "image_url.detail must be a string"},
		{`{"model":"m","messages":[{"role":"user","content":"x","name":3}]}`, "messages[0].name must be a string"},
		{`{"model":"m","messages":[{"role":"assistant","tool_calls":{}}]}`, "messages[0].tool_calls must be an array"},
		{`{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"1","type":"custom","custom":{}}]}]}`, "messages[0].tool_calls[0].type: tool call type custom is not supported"},
		{`{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"1","type":"function"}]}]}`, "messages[0].tool_calls[0].function is required"},
		{`{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"1","type":"function","function":{"arguments":"{}"}}]}]}`, "messages[0].tool_calls[0].function.name is required"},
		{`{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"1","function":{"name":"f","arguments":1}}]}]}`, "messages[0].tool_calls[0].function.arguments must be a string"},
		{`{"model":"m","messages":[{"role":"tool","content":"x","tool_call_id":5}]}`, "messages[0].tool_call_id must be a string"},
		{`{"model":"m","messages":[{"role":"assistant","content":"x","reasoning_content":5}]}`, "messages[0].reasoning_content must be a string"},
		{`{` + msgs + `,"temperature":"hot"}`, "temperature must be a number"},
		{`{` + msgs + `,"temperature":-0.5}`, "temperature must be between 0 and 2"},
		{`{` + msgs + `,"temperature":2.5}`, "temperature must be between 0 and 2"},
		{`{` + msgs + `,"top_p":1.5}`, "top_p must be between 0 and 1"},
		{`{` + msgs + `,"presence_penalty":-3}`, "presence_penalty must be between -2 and 2"},
		{`{` + msgs + `,"repetition_penalty":0}`, "repetition_penalty must be greater than 0"},
		{`{` + msgs + `,"top_p":true}`, "top_p must be a number"},
		{`{` + msgs + `,"min_p":[]}`, "min_p must be a number"},
		{`{` + msgs + `,"repetition_penalty":"1"}`, "repetition_penalty must be a number"},
		{`{` + msgs + `,"frequency_penalty":{}}`, "frequency_penalty must be a number"},
		{`{` + msgs + `,"presence_penalty":"0"}`, "presence_penalty must be a number"},
		{`{` + msgs + `,"top_k":1.5}`, "top_k must be an integer"},
		{`{` + msgs + `,"top_k":-2}`, "top_k must be an integer"},
		{`{` + msgs + `,"seed":"1"}`, "seed must be an integer"},
		{`{` + msgs + `,"seed":1e30}`, "seed must be an integer"},
		{`{` + msgs + `,"max_tokens":"10"}`, "max_tokens must be an integer"},
		{`{` + msgs + `,"max_tokens":0}`, "max_tokens must be between 1 and"},
		{`{` + msgs + `,"max_completion_tokens":-5,"max_tokens":10}`, "max_completion_tokens must be between 1 and"},
		{`{` + msgs + `,"max_completion_tokens":2.5}`, "max_completion_tokens must be an integer"},
		{`{` + msgs + `,"n":129}`, "n must be between 1 and 128"},
		{`{` + msgs + `,"n":0}`, "n must be between 1 and 128"},
		{`{` + msgs + `,"logprobs":1}`, "logprobs must be a boolean"},
		{`{` + msgs + `,"top_logprobs":21,"logprobs":true}`, "top_logprobs must be an integer between 0 and 20"},
		{`{` + msgs + `,"top_logprobs":"2","logprobs":true}`, "top_logprobs must be an integer between 0 and 20"},
		{`{` + msgs + `,"top_logprobs":2}`, "top_logprobs requires logprobs to be true"},
		{`{` + msgs + `,"n":"1"}`, "n must be an integer"},
		{`{` + msgs + `,"stop":5}`, "stop must be a string or an array of strings"},
		{`{` + msgs + `,"stop":["a",1]}`, "stop must be a string or an array of strings"},
		{`{` + msgs + `,"stream":"yes"}`, "stream must be a boolean"},
		{`{` + msgs + `,"stream_options":true}`, "stream_options must be an object"},
		{`{` + msgs + `,"stream_options":{"include_usage":1}}`, "stream_options.include_usage must be a boolean"},
		{`{` + msgs + `,"user":5}`, "user must be a string"},
		{`{` + msgs + `,"response_format":"json"}`, "response_format must be an object"},
		{`{` + msgs + `,"response_format":{}}`, "response_format.type is required"},
		{`{` + msgs + `,"response_format":{"type":"yaml"}}`, "response_format.type yaml is not supported"},
		{`{` + msgs + `,"response_format":{"type":"json_schema"}}`, "response_format.json_schema is required"},
		{`{` + msgs + `,"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":"s"}}}`, "response_format.json_schema.schema must be an object"},
		{`{` + msgs + `,"response_format":{"type":"json_schema","json_schema":{"name":"x","strict":"yes"}}}`, "response_format.json_schema.strict must be a boolean"},
		{`{` + msgs + `,"tools":{}}`, "tools must be an array"},
		{`{` + msgs + `,"tools":[{"type":"custom","custom":{"name":"x"}}]}`, "tools[0].type: tool type custom is not supported"},
		{`{` + msgs + `,"tools":[{"type":"web_search"}]}`, "tool type web_search is not supported"},
		{`{` + msgs + `,"tools":[{"type":"function"}]}`, "tools[0].function is required"},
		{`{` + msgs + `,"tools":[{"type":"function","function":{}}]}`, "tools[0].function.name is required"},
		{`{` + msgs + `,"tools":[{"type":"function","function":{"name":"f","parameters":[]}}]}`, "tools[0].function.parameters must be an object"},
		{`{` + msgs + `,"tools":[{"type":"function","function":{"name":"f","strict":"no"}}]}`, "tools[0].function.strict must be a boolean"},
		{`{` + msgs + `,"tools":[{"type":"function","function":{"name":"f","description":1}}]}`, "tools[0].function.description must be a string"},
		{`{` + msgs + `,"tool_choice":"any"}`, `tool_choice "any" is not supported`},
		{`{` + msgs + `,"tool_choice":{"type":"allowed_tools","allowed_tools":{}}}`, "tool_choice.type: tool choice type allowed_tools is not supported"},
		{`{` + msgs + `,"tool_choice":{"type":"function","function":{}}}`, "tool_choice.function.name is required"},
		{`{` + msgs + `,"tool_choice":5}`, "tool_choice must be a string or an object"},
		{`{` + msgs + `,"parallel_tool_calls":"no"}`, "parallel_tool_calls must be a boolean"},
		{`{` + msgs + `,"functions":[{"description":"d"}]}`, "functions[0].name is required"},
		{`{` + msgs + `,"think":"max"}`, "think must be a boolean or one of"},
		{`{` + msgs + `,"thinking":"on"}`, "thinking must be an object"},
		{`{` + msgs + `,"thinking":{"type":"on"}}`, "thinking.type must be one of"},
		{`{` + msgs + `,"thinking":{"type":"enabled","budget_tokens":-1}}`, "thinking.budget_tokens must be a non-negative integer"},
		{`{` + msgs + `,"chat_template_kwargs":[]}`, "chat_template_kwargs must be an object"},
		{`{` + msgs + `,"chat_template_kwargs":{"enable_thinking":"true"}}`, "chat_template_kwargs.enable_thinking must be a boolean"},
		{`{` + msgs + `,"reasoning_effort":"max"}`, `reasoning_effort "max" is not supported`},
		{`{` + msgs + `,"reasoning_effort":1}`, "reasoning_effort must be a string"},
	} {
		r := call(t, p, abi.OpRequestDecode, 0, nil, []byte(tc.body), "route", RouteChat)
		if r.Status != abi.StatusBadInput || !strings.Contains(r.Error, tc.want) {
			t.Errorf("%s:\n got %s %q\nwant bad_input containing %q", tc.body, r.Status, r.Error, tc.want)
		}
	}
}

func TestDecodeRequest_Route(t *testing.T) {
	p := newPlugin()
	r := call(t, p, abi.OpRequestDecode, 0, nil, []byte(`{`+msgs+`}`), "route", RouteModels)
	if r.Status != abi.StatusBadInput {
		t.Errorf("models route: got %s", r.Status)
	}
	r = call(t, p, abi.OpRequestDecode, 0, nil, []byte(`{`+msgs+`}`))
	if r.Status != abi.StatusOK {
		t.Errorf("no route: got %s %s", r.Status, r.Error)
	}
}

func TestManifest(t *testing.T) {
	m := newPlugin().Manifest()
	if m.Name != "openai" || m.Kind != sdk.KindTranslator || m.Format != "openai" || m.StateVersion != 1 {
		t.Errorf("manifest = %+v", m)
	}
	kinds := map[string]sdk.Endpoint{}
	for _, r := range m.Routes {
		kinds[r.Path] = r.Kind
	}
	for path, kind := range map[string]sdk.Endpoint{"/v1/chat/completions": sdk.EndpointChat, "/v1/completions": sdk.EndpointChat,
		"/v1/models": sdk.EndpointModels, "/v1/tokenize": sdk.EndpointTokenize, "/v1/embeddings": sdk.EndpointEmbedding,
		"/v1/rerank": sdk.EndpointRerank, "/v1/score": sdk.EndpointScore} {
		if kinds[path] != kind || len(kinds) != 7 {
			t.Errorf("route %s: kind %q (routes %v)", path, kinds[path], kinds)
		}
	}
	r := call(t, newPlugin(), abi.OpRequestEncode, 0, nil, nil)
	if r.Status != abi.StatusUnsupported {
		t.Errorf("adapter op: got %s", r.Status)
	}
}
