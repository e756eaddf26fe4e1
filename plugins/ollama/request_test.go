package ollama

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

func TestEncodeRequest_Golden(t *testing.T) {
	for _, name := range testFiles(t, "request", ".canon.json") {
		t.Run(name, func(t *testing.T) {
			h := newHarness()
			r := h.call(t, abi.OpRequestEncode, 0, nil, readFile(t, "request/"+name+".canon.json"))
			if r.Status != abi.StatusOK {
				t.Fatalf("status %s: %s", r.Status, r.Error)
			}
			for k, want := range map[string]string{"path": "/api/chat", "method": "POST", "content-type": "application/json"} {
				if got := r.meta(k); got != want {
					t.Errorf("meta %s = %q, want %q", k, got, want)
				}
			}
			golden(t, "request/"+name+".ollama.json", r.Payload)
		})
	}
}

// TestEncodeRequest_Logs pins the warnings for what Ollama cannot take.
func TestEncodeRequest_Logs(t *testing.T) {
	for _, tc := range []struct{ file, want string }{
		{"tools", "tool call arguments are not a JSON object"},
	} {
		h := newHarness()
		if r := h.call(t, abi.OpRequestEncode, 0, nil, readFile(t, "request/"+tc.file+".canon.json")); r.Status != abi.StatusOK {
			t.Fatalf("%s: %s", tc.file, r.Error)
		}
		if len(h.logs) != 1 || !strings.Contains(h.logs[0], tc.want) {
			t.Errorf("%s: logs %q, want one containing %q", tc.file, h.logs, tc.want)
		}
	}
}

// An image given by URL is refused, never dropped: Ollama takes inline
// images only.
// TestEncodeRequest_ImageURL: Ollama takes inline images only, so the
// adapter asks the gateway for URL images (need_images, each URL once,
// data: URIs excepted) and sends the bytes the gateway fetched.
func TestEncodeRequest_ImageURL(t *testing.T) {
	req := userReq()
	const u1, u2 = "https://example.com/cat.png", "https://example.com/dog.jpg"
	req.Messages[0].Content = append(req.Messages[0].Content,
		canon.Part{Type: canon.PartImage, URL: u1}, canon.Part{Type: canon.PartImage, URL: "data:image/png;base64,QUJD"},
		canon.Part{Type: canon.PartImage, URL: u2}, canon.Part{Type: canon.PartImage, URL: u1})
	payload := req.AppendJSON(nil)
	h := newHarness()
	r := h.call(t, abi.OpRequestEncode, 0, nil, payload)
	if r.Status != abi.StatusNeedImages || r.Error != u1+"\n"+u2 {
		t.Fatalf("status %s error %q", r.Status, r.Error)
	}
	meta := abi.AppendImage(abi.AppendImage(nil, u1, "image/png", "Q0FU"), u2, "image/jpeg", "RE9H")
	in := input(0, nil, payload)
	in = append(in[:abi.HeaderSize], append(meta, payload...)...)
	abi.PutHeader(in, abi.Header{MetaLen: uint32(len(meta)), PayloadLen: uint32(len(payload)), RequestID: 7})
	r = parse(t, h.p.Call(abi.OpRequestEncode, in))
	if r.Status != abi.StatusOK {
		t.Fatalf("status %s: %s", r.Status, r.Error)
	}
	var body struct {
		Messages []struct {
			Images []string `json:"images"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(r.Payload, &body); err != nil || len(body.Messages) != 1 ||
		!slices.Equal(body.Messages[0].Images, []string{"Q0FU", "QUJD", "RE9H", "Q0FU"}) {
		t.Fatalf("body %s (%v)", r.Payload, err)
	}
	// Without the gateway's images a direct EncodeRequest says what it needs.
	var out sdk.Output
	err := New().EncodeRequest(&sdk.Call{}, req, &out)
	var ni *sdk.NeedImagesError
	if !errors.As(err, &ni) || len(ni.URLs) != 2 {
		t.Fatalf("err = %v", err)
	}
}

func TestEncodeRequest_Logprobs(t *testing.T) {
	req := userReq()
	req.Logprobs, req.TopLogprobs = true, 3
	m := encode(t, req)
	if m["logprobs"] != true || m["top_logprobs"] != 3.0 {
		t.Errorf("logprobs %v top_logprobs %v", m["logprobs"], m["top_logprobs"])
	}
	req.TopLogprobs = 0
	if m := encode(t, req); m["logprobs"] != true || m["top_logprobs"] != nil {
		t.Errorf("logprobs %v top_logprobs %v", m["logprobs"], m["top_logprobs"])
	}
	if m := encode(t, userReq()); m["logprobs"] != nil {
		t.Errorf("logprobs sent unasked: %v", m["logprobs"])
	}
}

func encode(t *testing.T, req *canon.ChatRequest) map[string]any {
	t.Helper()
	var out sdk.Output
	if err := New().EncodeRequest(&sdk.Call{}, req, &out); err != nil {
		t.Fatalf("EncodeRequest: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(out.Body, &m); err != nil {
		t.Fatalf("invalid body %s: %v", out.Body, err)
	}
	return m
}

func userReq() *canon.ChatRequest {
	return &canon.ChatRequest{Model: "m", Messages: []canon.Message{{Role: canon.RoleUser,
		Content: []canon.Part{{Type: canon.PartText, Text: "hi"}}}}}
}

func TestEncodeRequest_Think(t *testing.T) {
	for _, tc := range []struct {
		think canon.Think
		want  any // nil: absent
	}{
		{canon.ThinkUnset, nil},
		{canon.ThinkOn, true},
		{canon.ThinkOff, false},
		{canon.ThinkLow, "low"},
		{canon.ThinkMedium, "medium"},
		{canon.ThinkHigh, "high"},
	} {
		req := userReq()
		req.Think = tc.think
		got, ok := encode(t, req)["think"]
		if tc.want == nil && ok || tc.want != nil && got != tc.want {
			t.Errorf("think %q: got %v (present %v), want %v", tc.think, got, ok, tc.want)
		}
	}
}

func TestEncodeRequest_Stream(t *testing.T) {
	for _, stream := range []bool{true, false} {
		req := userReq()
		req.Stream = stream
		if got := encode(t, req)["stream"]; got != stream {
			t.Errorf("stream %v: got %v", stream, got)
		}
	}
}

func TestEncodeRequest_NoOptions(t *testing.T) {
	if _, ok := encode(t, userReq())["options"]; ok {
		t.Error("options written for a request that sets none")
	}
	req := userReq()
	req.ContextLength = 8192
	if got := encode(t, req)["options"]; !jsonEqual(got, map[string]any{"num_ctx": 8192.0}) {
		t.Errorf("options = %v, want only num_ctx", got)
	}
}

func TestEncodeRequest_ToolChoice(t *testing.T) {
	tools := []canon.Tool{{Name: "a"}, {Name: "b", Parameters: json.RawMessage(`{"type":"object"}`)}}
	for _, tc := range []struct {
		name   string
		choice *canon.ToolChoice
		want   []string // tool names sent; nil: no "tools"
	}{
		{"unset", nil, []string{"a", "b"}},
		{"auto", &canon.ToolChoice{Mode: canon.ToolChoiceAuto}, []string{"a", "b"}},
		{"required", &canon.ToolChoice{Mode: canon.ToolChoiceRequired}, []string{"a", "b"}},
		{"none", &canon.ToolChoice{Mode: canon.ToolChoiceNone}, nil},
		{"function", &canon.ToolChoice{Mode: canon.ToolChoiceFunction, Name: "b"}, []string{"b"}},
		{"unknown function", &canon.ToolChoice{Mode: canon.ToolChoiceFunction, Name: "zz"}, []string{"a", "b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := userReq()
			req.Tools, req.ToolChoice = tools, tc.choice
			got := encode(t, req)
			if _, ok := got["tool_choice"]; ok {
				t.Error("tool_choice sent; Ollama has none")
			}
			list, ok := got["tools"].([]any)
			if tc.want == nil {
				if ok {
					t.Errorf("tools sent: %v", list)
				}
				return
			}
			var names []string
			for _, x := range list {
				tool := x.(map[string]any)
				if tool["type"] != "function" {
					t.Errorf("tool type %v", tool["type"])
				}
				names = append(names, tool["function"].(map[string]any)["name"].(string))
			}
			if strings.Join(names, ",") != strings.Join(tc.want, ",") {
				t.Errorf("tools %v, want %v", names, tc.want)
			}
		})
	}
}

func TestEncodeRequest_Errors(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*canon.ChatRequest)
		want string
	}{
		{"no model", func(r *canon.ChatRequest) { r.Model = "" }, "model is required"},
		{"n", func(r *canon.ChatRequest) { r.N = 2 }, "n > 1"},
		{"role", func(r *canon.ChatRequest) { r.Messages[0].Role = "" }, "messages[0].role"},
		{"think", func(r *canon.ChatRequest) { r.Think = "max" }, `think "max"`},
		{"format", func(r *canon.ChatRequest) { r.ResponseFormat = &canon.ResponseFormat{Type: "xml"} }, "response_format.type"},
		{"schema", func(r *canon.ChatRequest) {
			r.ResponseFormat = &canon.ResponseFormat{Type: canon.FormatJSONSchema, Schema: json.RawMessage(`[1]`)}
		}, "response_format.schema"},
		{"part", func(r *canon.ChatRequest) { r.Messages[0].Content[0].Type = "audio" }, "messages[0].content[0]"},
		{"empty image", func(r *canon.ChatRequest) {
			r.Messages[0].Content = append(r.Messages[0].Content, canon.Part{Type: canon.PartImage})
		}, "neither data nor url"},
		{"tool name", func(r *canon.ChatRequest) { r.Tools = []canon.Tool{{Description: "x"}} }, "tools[0].name"},
		{"tool params", func(r *canon.ChatRequest) {
			r.Tools = []canon.Tool{{Name: "x", Parameters: json.RawMessage(`{"a":`)}}
		}, "tools[0].parameters"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := userReq()
			tc.mod(req)
			var out sdk.Output
			err := New().EncodeRequest(&sdk.Call{}, req, &out)
			var in *sdk.InputError
			if err == nil || !asInputError(err, &in) || !strings.Contains(in.Msg, tc.want) {
				t.Errorf("error %v, want bad input containing %q", err, tc.want)
			}
		})
	}
}

func TestEncodeRequest_ReusesBody(t *testing.T) {
	a := New()
	var out sdk.Output
	for range 3 {
		if err := a.EncodeRequest(&sdk.Call{}, userReq(), &out); err != nil {
			t.Fatal(err)
		}
		if !json.Valid(out.Body) || strings.Count(string(out.Body), `"model"`) != 1 {
			t.Fatalf("body %s", out.Body)
		}
	}
}

func asInputError(err error, in **sdk.InputError) bool {
	e, ok := err.(*sdk.InputError)
	*in = e
	return ok
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}
