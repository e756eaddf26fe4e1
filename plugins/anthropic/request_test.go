package anthropic

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// TestDecodeRequest_Golden decodes each testdata/requests/*.req.json through
// the SDK dispatcher on both message routes and compares the canonical JSON
// with *.canon.json.
func TestDecodeRequest_Golden(t *testing.T) {
	p := newPlugin()
	for _, name := range testFiles(t, "requests", ".req.json") {
		t.Run(name, func(t *testing.T) {
			body, err := os.ReadFile(filepath.Join("testdata", "requests", name+".req.json"))
			if err != nil {
				t.Fatal(err)
			}
			r := call(t, p, abi.OpRequestDecode, 0, nil, body, "route", RouteMessages)
			if r.Status != abi.StatusOK {
				t.Fatalf("status %s: %s", r.Status, r.Error)
			}
			goldenJSON(t, filepath.Join("requests", name+".canon.json"), r.Payload)
			r2 := call(t, p, abi.OpRequestDecode, 0, nil, body, "route", RouteMessagesPrefixed)
			if r2.Status != abi.StatusOK || string(r2.Payload) != string(r.Payload) {
				t.Fatalf("prefixed route: %s %s", r2.Status, r2.Error)
			}
			if r.Meta["model"] == "" || r.Meta["max_tokens"] == "" {
				t.Errorf("routing meta %v", r.Meta)
			}
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

const head = `"model":"m","max_tokens":10`

func user(content string) string {
	return `"messages":[{"role":"user","content":` + content + `}]`
}

// TestDecodeRequest_Errors: bad input is the client's error, with a message
// naming the field path.
func TestDecodeRequest_Errors(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{`nope`, "not valid JSON"},
		{`[]`, "must be a JSON object"},
		{`{"max_tokens":1,` + user(`"hi"`) + `}`, "model is required"},
		{`{"model":3,"max_tokens":1,` + user(`"hi"`) + `}`, "model must be a string"},
		{`{"model":"m",` + user(`"hi"`) + `}`, "max_tokens is required"},
		{`{"model":"m","max_tokens":"10",` + user(`"hi"`) + `}`, "max_tokens must be an integer"},
		{`{"model":"m","max_tokens":0,` + user(`"hi"`) + `}`, "max_tokens must be between 1"},
		{`{` + head + `}`, "messages is required"},
		{`{` + head + `,"messages":[]}`, "messages must be a non-empty array"},
		{`{` + head + `,"messages":[{"role":"developer","content":"x"}]}`, `messages[0].role "developer" is not supported`},
		{`{` + head + `,"messages":[{"role":"user","content":"a"},{"role":"system","content":[{"type":"image","source":{"type":"url","url":"https://x/y.png"}}]}]}`, "messages[1].content[0].type: a mid-conversation system message can hold text blocks only here, not image (mid_conversation_system_not_supported)"},
		{`{` + head + `,"messages":[{"role":"user","content":"a"},{"role":"system","content":[{"type":"text"}]}]}`, "messages[1].content[0].text is required"},
		{`{` + head + `,"messages":[{"role":"user","content":"a"},{"role":"system","content":3}]}`, "messages[1].content must be a string or an array"},
		{`{` + head + `,"messages":[{"role":"user","content":"a"},{"role":"system","content":[{"type":"tool_addition","tool":{"type":"tool_reference","name":"Bash"}}]}]}`, "not tool_addition (mid_conversation_system_not_supported)"},
		{`{` + head + `,"messages":[{"role":"user","content":"a"},{"role":"system"}]}`, "messages[1].content is required"},
		{`{` + head + `,"messages":[{"role":"user","content":"a"},{"role":"system","content":"x","clear_at":"later"}]}`, `messages[1].clear_at must be "never" or "next_user_message"`},
		{`{` + head + `,"messages":[{"role":"user"}]}`, "messages[0].content is required"},
		{`{` + head + `,` + user(`7`) + `}`, "messages[0].content must be a string or an array"},
		{`{` + head + `,` + user(`[{"type":"text"}]`) + `}`, "messages[0].content[0].text is required"},
		{`{` + head + `,` + user(`[{"type":"text","text":1}]`) + `}`, "messages[0].content[0].text must be a string"},
		{`{` + head + `,` + user(`[{"text":"x"}]`) + `}`, "messages[0].content[0].type is required"},
		{`{` + head + `,` + user(`[{"type":"audio"}]`) + `}`, "messages[0].content[0].type: content block type audio is not supported"},
		{`{` + head + `,` + user(`[{"type":"image","source":{"type":"base64","data":"x"}}]`) + `}`, "messages[0].content[0].source.media_type is required"},
		{`{` + head + `,` + user(`[{"type":"image","source":{"type":"file","file_id":"f"}}]`) + `}`, "image source type file is not supported"},
		{`{` + head + `,` + user(`[{"type":"image","source":{"type":"url","url":"ftp://x"}}]`) + `}`, "source.url must be an http(s) URL"},
		{`{` + head + `,` + user(`[{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"x"}}]`) + `}`, "document source type base64 is not supported"},
		{`{` + head + `,` + user(`[{"type":"tool_result"}]`) + `}`, "messages[0].content[0].tool_use_id is required"},
		{`{` + head + `,` + user(`[{"type":"tool_result","tool_use_id":"t","is_error":"yes"}]`) + `}`, "messages[0].content[0].is_error must be a boolean"},
		{`{` + head + `,` + user(`[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":2}]}]`) + `}`, "messages[0].content[0].content[0].text must be a string"},
		{`{` + head + `,"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"f","input":[1]}]}]}`, "messages[0].content[0].input must be an object"},
		{`{` + head + `,"messages":[{"role":"assistant","content":[{"type":"tool_use","name":"f"}]}]}`, "messages[0].content[0].id is required"},
		{`{` + head + `,"messages":[{"role":"assistant","content":[{"type":"image"}]}]}`, "content block type image is not supported in an assistant message"},
		{`{` + head + `,"system":5,` + user(`"hi"`) + `}`, "system must be a string or an array of text blocks"},
		{`{` + head + `,"system":[{"type":"image"}],` + user(`"hi"`) + `}`, "system[0].type: system block type image is not supported"},
		{`{` + head + `,"temperature":1.5,` + user(`"hi"`) + `}`, "temperature must be between 0 and 1"},
		{`{` + head + `,"top_p":"x",` + user(`"hi"`) + `}`, "top_p must be a number"},
		{`{` + head + `,"top_k":-1,` + user(`"hi"`) + `}`, "top_k must be a non-negative integer"},
		{`{` + head + `,"stream":"yes",` + user(`"hi"`) + `}`, "stream must be a boolean"},
		{`{` + head + `,"stop_sequences":"x",` + user(`"hi"`) + `}`, "stop_sequences must be an array of strings"},
		{`{` + head + `,"stop_sequences":["a",1],` + user(`"hi"`) + `}`, "stop_sequences[1] must be a string"},
		{`{` + head + `,"metadata":{"user_id":5},` + user(`"hi"`) + `}`, "metadata.user_id must be a string"},
		{`{` + head + `,"tools":{},` + user(`"hi"`) + `}`, "tools must be an array"},
		{`{` + head + `,"tools":[{"description":"d"}],` + user(`"hi"`) + `}`, "tools[0].name is required"},
		{`{` + head + `,"tools":[{"name":"f","input_schema":"x"}],` + user(`"hi"`) + `}`, "tools[0].input_schema must be an object"},
		{`{` + head + `,"tools":[{"type":"web_search_20250305","name":"web_search"}],` + user(`"hi"`) + `}`, "tools[0].type: tool type web_search_20250305 is not supported"},
		{`{` + head + `,"tool_choice":"auto",` + user(`"hi"`) + `}`, "tool_choice must be an object"},
		{`{` + head + `,"tool_choice":{"type":"required"},` + user(`"hi"`) + `}`, `tool_choice.type "required" is not supported`},
		{`{` + head + `,"tool_choice":{"type":"tool"},` + user(`"hi"`) + `}`, "tool_choice.name is required"},
		{`{` + head + `,"tool_choice":{"type":"auto","disable_parallel_tool_use":1},` + user(`"hi"`) + `}`, "tool_choice.disable_parallel_tool_use must be a boolean"},
		{`{` + head + `,"thinking":true,` + user(`"hi"`) + `}`, "thinking must be an object"},
		{`{` + head + `,"thinking":{"type":"enabled"},` + user(`"hi"`) + `}`, "thinking.budget_tokens is required"},
		{`{` + head + `,"thinking":{"type":"enabled","budget_tokens":0},` + user(`"hi"`) + `}`, "thinking.budget_tokens must be a positive integer"},
		{`{` + head + `,"thinking":{"type":"on"},` + user(`"hi"`) + `}`, `thinking.type "on" is not supported`},
		{`{` + head + `,"output_config":{"format":{"type":"json_object"}},` + user(`"hi"`) + `}`, "output_config.format.type must be"},
		{`{` + head + `,"output_config":{"format":{"type":"json_schema"}},` + user(`"hi"`) + `}`, "output_config.format.schema is required"},
		{`{` + head + `,"output_config":{"format":{"type":"json_schema","schema":{},"name":1}},` + user(`"hi"`) + `}`, "output_config.format.name must be a string"},
		{`{` + head + `,"output_config":{"format":{"type":"json_schema","schema":[]}},` + user(`"hi"`) + `}`, "output_config.format.schema must be an object"},
		{`{` + head + `,"output_config":[],` + user(`"hi"`) + `}`, "output_config must be an object"},
		{`{` + head + `,"messages":[{"role":"user","content":"a"},{"role":1,"content":"b"}]}`, "messages[1].role must be a string"},
		{`{` + head + `,"messages":[{"role":"assistant","content":[{"type":"thinking"}]}]}`, "messages[0].content[0].thinking is required"},
	} {
		_, err := decode(t, tc.body)
		if err == nil {
			t.Errorf("%s: accepted", tc.body)
			continue
		}
		if _, ok := err.(*sdk.InputError); !ok {
			t.Errorf("%s: %T %v is not an InputError", tc.body, err, err)
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s:\n got %q\nwant %q", tc.body, err, tc.want)
		}
	}
}

// TestDecodeRequest_MidSystem: a system message inside messages (Claude
// Code's mid-conversation "# Environment" message; the captured shape is
// testdata/requests/claude_code_mid_system.req.json) is merged into the
// system prompt, made when the request has none; several are merged in
// order, empty ones add nothing, and the other messages keep their order.
func TestDecodeRequest_MidSystem(t *testing.T) {
	for _, tc := range []struct {
		body   string
		system string // the merged system prompt, "" for none
		roles  []canon.Role
	}{
		{`{` + head + `,"messages":[{"role":"user","content":"a"},{"role":"system","content":[{"type":"text","text":"# Environment"}]},{"role":"assistant","content":"b"}]}`,
			"# Environment", []canon.Role{canon.RoleSystem, canon.RoleUser, canon.RoleAssistant}},
		{`{` + head + `,"system":"Be brief.","messages":[{"role":"user","content":"a"},{"role":"system","content":"env"},{"role":"user","content":"c"},{"role":"system","content":[{"type":"text","text":"x","cache_control":{"type":"ephemeral"}},{"type":"text","text":"y"}]}]}`,
			"Be brief.\n\nenv\n\nxy", []canon.Role{canon.RoleSystem, canon.RoleUser, canon.RoleUser}},
		{`{` + head + `,"messages":[{"role":"system","content":"first"},{"role":"user","content":"a"}]}`,
			"first", []canon.Role{canon.RoleSystem, canon.RoleUser}},
		{`{` + head + `,"messages":[{"role":"user","content":"a"},{"role":"system","content":""},{"role":"system","content":[]}]}`,
			"", []canon.Role{canon.RoleUser}},
		// clear_at next_user_message: shown until a later user message.
		{`{` + head + `,"messages":[{"role":"user","content":"a"},{"role":"system","content":"gone","clear_at":"next_user_message"},{"role":"assistant","content":"b"},{"role":"user","content":"c"},{"role":"system","content":"kept","clear_at":"next_user_message","output_config":{"effort":"low"}},{"role":"system","content":"too","clear_at":"never"}]}`,
			"kept\n\ntoo", []canon.Role{canon.RoleSystem, canon.RoleUser, canon.RoleAssistant, canon.RoleUser}},
		// output_config alone (no content) is accepted and adds nothing.
		{`{` + head + `,"messages":[{"role":"user","content":"a"},{"role":"system","output_config":{"effort":"high"}}]}`,
			"", []canon.Role{canon.RoleUser}},
	} {
		req := mustDecode(t, tc.body)
		var roles []canon.Role
		for i := range req.Messages {
			roles = append(roles, req.Messages[i].Role)
		}
		if !slices.Equal(roles, tc.roles) {
			t.Errorf("%s: roles %v, want %v", tc.body, roles, tc.roles)
			continue
		}
		if tc.system != "" && req.Messages[0].Text() != tc.system {
			t.Errorf("%s: system %q, want %q", tc.body, req.Messages[0].Text(), tc.system)
		}
	}
}

// TestDecodeRequest_ToolResultsSplit: a user turn holding tool results and
// text becomes tool messages and user messages in the turn's order.
func TestDecodeRequest_ToolResultsSplit(t *testing.T) {
	req := mustDecode(t, `{`+head+`,`+user(`[
		{"type":"text","text":"before"},
		{"type":"tool_result","tool_use_id":"a","content":"ra"},
		{"type":"tool_result","tool_use_id":"b","is_error":true},
		{"type":"text","text":"after"},
		{"type":"image","source":{"type":"url","url":"https://x/y.png"}}]`)+`}`)
	type m struct {
		role       canon.Role
		text, call string
		parts      int
	}
	var got []m
	for i := range req.Messages {
		msg := &req.Messages[i]
		got = append(got, m{msg.Role, msg.Text(), msg.ToolCallID, len(msg.Content)})
	}
	want := []m{
		{canon.RoleUser, "before", "", 1},
		{canon.RoleTool, "ra", "a", 1},
		{canon.RoleTool, "Error", "b", 1},
		{canon.RoleUser, "after", "", 2},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("message %d: got %+v want %+v", i, got[i], want[i])
		}
	}
}

// TestDecodeRequest_Nulls: null reads as absent for optional fields.
func TestDecodeRequest_Nulls(t *testing.T) {
	req := mustDecode(t, `{`+head+`,"system":null,"temperature":null,"top_p":null,"top_k":null,"stop_sequences":null,
		"metadata":null,"stream":null,"tools":null,"tool_choice":null,"thinking":null,"output_config":null,`+user(`"hi"`)+`}`)
	if len(req.Messages) != 1 || req.Temperature != nil || req.Think != canon.ThinkUnset || req.ToolChoice != nil || req.Stream {
		t.Fatalf("%+v", req)
	}
}

func TestDecodeRequest_Route(t *testing.T) {
	r := call(t, newPlugin(), abi.OpRequestDecode, 0, nil, []byte(`{`+head+`,`+user(`"hi"`)+`}`), "route", RouteModels)
	if r.Status != abi.StatusBadInput || !strings.Contains(r.Error, "no request body") {
		t.Fatalf("%s %s", r.Status, r.Error)
	}
}
