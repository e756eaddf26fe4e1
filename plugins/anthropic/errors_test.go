package anthropic

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	anth "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// TestEncodeError: each canonical type gets Anthropic's error.type
// (https://docs.claude.com/en/api/errors), and the body reads as the SDK's
// *anthropic.Error.
func TestEncodeError(t *testing.T) {
	p := newPlugin()
	for _, tc := range []struct {
		e    canon.Error
		want string
	}{
		{canon.Error{Status: 400, Type: canon.ErrInvalidRequest, Message: "max_tokens is required"}, `{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens is required"}}`},
		{canon.Error{Status: 401, Type: canon.ErrAuthentication}, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`},
		{canon.Error{Status: 403, Type: canon.ErrPermission, Message: "no"}, `{"type":"error","error":{"type":"permission_error","message":"no"}}`},
		{canon.Error{Status: 404, Type: canon.ErrNotFound, Message: "model nope not found", RequestID: "chatcmpl-1"}, `{"type":"error","error":{"type":"not_found_error","message":"model nope not found"},"request_id":"chatcmpl-1"}`},
		{canon.Error{Status: 413, Type: canon.ErrRequestTooLarge}, `{"type":"error","error":{"type":"request_too_large","message":"request exceeds the maximum allowed number of bytes"}}`},
		{canon.Error{Status: 429, Type: canon.ErrRateLimit, Message: "slow down"}, `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`},
		{canon.Error{Status: 502, Type: canon.ErrBackend, Message: "b"}, `{"type":"error","error":{"type":"api_error","message":"b"}}`},
		{canon.Error{Status: 503, Type: canon.ErrOverloaded}, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`},
		{canon.Error{Status: 504, Type: canon.ErrTimeout, Message: "t"}, `{"type":"error","error":{"type":"timeout_error","message":"t"}}`},
		{canon.Error{Status: 500, Type: canon.ErrInternal, Message: "\"x\"\n"}, `{"type":"error","error":{"type":"api_error","message":"\"x\"\n"}}`},
		{canon.Error{Status: 404, Type: "new", Message: "m"}, `{"type":"error","error":{"type":"not_found_error","message":"m"}}`},
		{canon.Error{Status: 529, Type: "new", Message: "m"}, `{"type":"error","error":{"type":"overloaded_error","message":"m"}}`},
		{canon.Error{Status: 418, Type: "new", Message: "m"}, `{"type":"error","error":{"type":"invalid_request_error","message":"m"}}`},
		{canon.Error{Status: 500, Type: "new", Message: "m"}, `{"type":"error","error":{"type":"api_error","message":"m"}}`},
	} {
		r := call(t, p, abi.OpErrorEncode, 0, nil, tc.e.AppendJSON(nil), "route", RouteMessages)
		if r.Status != abi.StatusOK || string(r.Payload) != tc.want {
			t.Errorf("%+v:\n got %s %s\nwant %s", tc.e, r.Status, r.Payload, tc.want)
			continue
		}
		// The SDK's error type, as a client sees it.
		var e anth.ErrorResponse
		if err := json.Unmarshal(r.Payload, &e); err != nil || string(e.Error.Type) == "" || e.Error.Message == "" {
			t.Errorf("%s: SDK reads %+v: %v", r.Payload, e, err)
		}
	}
}

// TestEncodeError_MidSystem: a mid-conversation system message the
// translator refuses answers with the error code Claude Code looks for
// before it resends without the message (error.details.error_code), from
// the request_decode error's message as the host passes it on, or from
// the canonical code.
func TestEncodeError_MidSystem(t *testing.T) {
	p := newPlugin()
	body := `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"a"},{"role":"system","content":[{"type":"image","source":{"type":"url","url":"https://x/y.png"}}]}]}`
	r := call(t, p, abi.OpRequestDecode, 0, nil, []byte(body), "route", RouteMessages)
	if r.Status != abi.StatusBadInput {
		t.Fatalf("decode: %s %s", r.Status, r.Error)
	}
	for _, e := range []canon.Error{
		{Status: 400, Type: canon.ErrInvalidRequest, Code: "invalid_request", Message: r.Error},
		{Status: 400, Type: canon.ErrInvalidRequest, Code: MidSystemNotSupported, Message: "no"},
	} {
		out := call(t, p, abi.OpErrorEncode, 0, nil, e.AppendJSON(nil), "route", RouteMessages)
		var got struct {
			Error struct {
				Type    string `json:"type"`
				Details struct {
					ErrorCode string `json:"error_code"`
				} `json:"details"`
			} `json:"error"`
		}
		if err := json.Unmarshal(out.Payload, &got); err != nil || got.Error.Type != "invalid_request_error" || got.Error.Details.ErrorCode != MidSystemNotSupported {
			t.Fatalf("%s: %v", out.Payload, err)
		}
	}
	// Other errors carry no details.
	e := canon.Error{Status: 400, Type: canon.ErrInvalidRequest, Message: "max_tokens is required"}
	if out := call(t, p, abi.OpErrorEncode, 0, nil, e.AppendJSON(nil), "route", RouteMessages); strings.Contains(string(out.Payload), "details") {
		t.Fatalf("%s", out.Payload)
	}
}

// TestEncodeError_ContextExceeded: a context-exceeded error (code
// context_length_exceeded, from the gateway's own count or the backend) is
// worded as Anthropic words it, which agents match before they compact:
// "prompt is too long: N tokens > M maximum".
func TestEncodeError_ContextExceeded(t *testing.T) {
	p := newPlugin()
	for _, tc := range []struct{ msg, want string }{
		// core/server's count near the window
		{"the input is about 40008 tokens; model llama3.2:3b's context window is 32768 tokens: shorten the input",
			"prompt is too long: 40008 tokens > 32768 maximum"},
		// vLLM ≥ 0.10
		{"This model's maximum context length is 4096 tokens. However, your request has 5000 input tokens. Please reduce the length of the input messages.",
			"prompt is too long: 5000 tokens > 4096 maximum"},
		// older vLLM
		{"This model's maximum context length is 4096 tokens. However, you requested 5100 tokens (5000 in the messages, 100 in the completion). Please reduce the length of the messages or completion.",
			"prompt is too long: 5000 tokens > 4096 maximum"},
		// vLLM: the input fits, max_tokens does not
		{"'max_tokens' or 'max_completion_tokens' is too large: 714. This model's maximum context length is 1000 tokens and your request has 290 input tokens (714 > 1000 - 290).",
			"input length and `max_tokens` exceed context limit: 290 + 714 > 1000, decrease input length or `max_tokens` and try again"},
		// Ollama: no counts
		{"the input length exceeds the context length", "prompt is too long: the input length exceeds the context length"},
	} {
		e := canon.Error{Status: 400, Type: canon.ErrInvalidRequest, Code: "context_length_exceeded", Message: tc.msg}
		r := call(t, p, abi.OpErrorEncode, 0, nil, e.AppendJSON(nil), "route", RouteMessages)
		var got anth.ErrorResponse
		if err := json.Unmarshal(r.Payload, &got); err != nil || got.Error.Message != tc.want || string(got.Error.Type) != "invalid_request_error" {
			t.Errorf("%q:\n got %s\nwant %q", tc.msg, r.Payload, tc.want)
		}
	}
	// Other codes, and the 413 of a stored history, keep their words.
	for _, e := range []canon.Error{
		{Status: 400, Type: canon.ErrInvalidRequest, Code: "invalid_request", Message: "the input is about 5 tokens"},
		{Status: 413, Type: canon.ErrRequestTooLarge, Code: "context_length_exceeded", Message: "the stored history is over the limit"},
	} {
		r := call(t, p, abi.OpErrorEncode, 0, nil, e.AppendJSON(nil), "route", RouteMessages)
		if !strings.Contains(string(r.Payload), `"message":"`+e.Message+`"`) {
			t.Errorf("%+v: %s", e, r.Payload)
		}
	}
}

// TestEncodeError_Stream: ending an open stream, the error is an "error"
// event, the way Anthropic reports a failure after the 200.
func TestEncodeError_Stream(t *testing.T) {
	e := canon.Error{Status: 502, Type: canon.ErrBackend, Message: "backend stream ended early"}
	r := call(t, newPlugin(), abi.OpErrorEncode, 0, nil, e.AppendJSON(nil), "route", RouteMessages, "stream", "1")
	want := "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"api_error\",\"message\":\"backend stream ended early\"}}\n\n"
	if r.Status != abi.StatusOK || string(r.Payload) != want {
		t.Fatalf("got %q", r.Payload)
	}
	evs := sseEvents(t, r.Payload)
	if len(evs) != 1 || evs[0].name != "error" {
		t.Fatal(evs)
	}
}

// TestEncodeModels_Golden: the model list as GET /v1/models answers it
// (https://docs.claude.com/en/api/models-list), read with the SDK's type.
func TestEncodeModels_Golden(t *testing.T) {
	in, err := os.ReadFile(filepath.Join("testdata", "models.canon.json"))
	if err != nil {
		t.Fatal(err)
	}
	r := call(t, newPlugin(), abi.OpModelsEncode, 0, nil, in, "route", RouteModels)
	if r.Status != abi.StatusOK {
		t.Fatal(r.Error)
	}
	golden(t, "models.json", r.Payload)
	var page struct {
		Data    []anth.ModelInfo `json:"data"`
		HasMore bool             `json:"has_more"`
		FirstID string           `json:"first_id"`
		LastID  string           `json:"last_id"`
	}
	if err := json.Unmarshal(r.Payload, &page); err != nil {
		t.Fatal(err)
	}
	if len(page.Data) != 3 || page.HasMore || page.FirstID != "qwen3-8b" || page.LastID != page.Data[2].ID {
		t.Fatalf("%+v", page)
	}
	if m := page.Data[0]; m.Type != "model" || m.DisplayName != "qwen3-8b" || !m.CreatedAt.Equal(time.Unix(1700000000, 0)) || m.MaxInputTokens != 32768 {
		t.Fatalf("%+v", m)
	}

	r = call(t, newPlugin(), abi.OpModelsEncode, 0, nil, []byte(`{"models":[]}`), "route", RouteModels)
	if string(r.Payload) != `{"data":[],"has_more":false,"first_id":null,"last_id":null}` {
		t.Fatalf("%s", r.Payload)
	}
}

// TestEncodeModels_One: the one-model routes (GET .../v1/models/{id})
// answer the model's ModelInfo alone, as Anthropic's models.retrieve.
func TestEncodeModels_One(t *testing.T) {
	for _, route := range []string{RouteModel, RouteModelRoot} {
		r := call(t, newPlugin(), abi.OpModelsEncode, 0, nil, []byte(`{"models":[{"id":"qwen3-8b","created":1700000000,"context_length":32768}]}`), "route", route)
		var m anth.ModelInfo
		if r.Status != abi.StatusOK || json.Unmarshal(r.Payload, &m) != nil || m.Type != "model" || m.ID != "qwen3-8b" ||
			m.DisplayName != "qwen3-8b" || !m.CreatedAt.Equal(time.Unix(1700000000, 0)) || m.MaxInputTokens != 32768 {
			t.Fatalf("%s: %s %s", route, r.Status, r.Payload)
		}
	}
}
