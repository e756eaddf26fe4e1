package vllm

import (
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

func TestDecodeError(t *testing.T) {
	cases := []struct {
		name   string
		status int
		body   string
		want   canon.Error
	}{
		{"new shape 400", 400,
			`{"error":{"message":"temperature must be non-negative, got -1.0.","type":"BadRequestError","param":"temperature","code":400}}`,
			canon.Error{Status: 400, Type: canon.ErrInvalidRequest, Message: "temperature must be non-negative, got -1.0.", Param: "temperature"}},
		{"old shape 404 model", 404,
			`{"object":"error","message":"The model ` + "`gpt-4`" + ` does not exist.","type":"NotFoundError","param":null,"code":404}`,
			canon.Error{Status: 404, Type: canon.ErrNotFound, Code: "model_not_found", Message: "The model `gpt-4` does not exist."}},
		{"new shape 404 model", 404,
			`{"error":{"message":"The model ` + "`x`" + ` does not exist.","type":"NotFoundError","param":"model","code":404}}`,
			canon.Error{Status: 404, Type: canon.ErrNotFound, Code: "model_not_found", Message: "The model `x` does not exist.", Param: "model"}},
		{"context length", 400,
			`{"object":"error","message":"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4000 in the messages, 1000 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400}`,
			canon.Error{Status: 400, Type: canon.ErrInvalidRequest, Code: "context_length_exceeded",
				Message: "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4000 in the messages, 1000 in the completion). Please reduce the length of the messages or completion."}},
		{"string code kept", 429, `{"error":{"message":"slow down","type":"rate_limit","code":"rate_limited"}}`,
			canon.Error{Status: 429, Type: canon.ErrRateLimit, Code: "rate_limited", Message: "slow down"}},
		{"bare error string", 401, `{"error":"invalid api key"}`,
			canon.Error{Status: 401, Type: canon.ErrAuthentication, Message: "invalid api key"}},
		{"fastapi detail", 404, `{"detail":"Not Found"}`,
			canon.Error{Status: 404, Type: canon.ErrNotFound, Message: "Not Found"}},
		{"fastapi validation", 422, `{"detail":[{"type":"missing","loc":["body","messages"],"msg":"Field required","input":{}}]}`,
			canon.Error{Status: 400, Type: canon.ErrInvalidRequest, Message: "Field required"}},
		{"plain text 500", 500, "Internal Server Error\n",
			canon.Error{Status: 502, Type: canon.ErrBackend, Message: "backend returned HTTP status 500"}},
		{"empty 503", 503, "",
			canon.Error{Status: 503, Type: canon.ErrOverloaded, Message: "backend returned HTTP status 503"}},
		{"empty JSON 403", 403, "{}",
			canon.Error{Status: 403, Type: canon.ErrPermission, Message: "backend returned HTTP status 403"}},
		{"413", 413, `{"error":{"message":"too big"}}`,
			canon.Error{Status: 413, Type: canon.ErrRequestTooLarge, Message: "too big"}},
		{"504", 504, `<html>gateway timeout</html>`,
			canon.Error{Status: 504, Type: canon.ErrTimeout, Message: "backend returned HTTP status 504"}},
		{"other 4xx", 409, `{"error":{"message":"conflict"}}`,
			canon.Error{Status: 400, Type: canon.ErrInvalidRequest, Message: "conflict"}},
		{"bad JSON", 500, `{"error":`,
			canon.Error{Status: 502, Type: canon.ErrBackend, Message: "backend returned HTTP status 500"}},
	}
	p := newPlugin()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got canon.Error
			if err := New().DecodeError(&sdk.Call{}, tc.status, []byte(tc.body), &got); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
			r := callOp(t, p, abi.OpErrorDecode, 0, nil, map[string]string{"status": strconv.Itoa(tc.status)}, []byte(tc.body))
			if r.Status != abi.StatusOK {
				t.Fatalf("%s: %s", r.Status, r.Error)
			}
			var viaABI canon.Error
			if err := viaABI.DecodeJSON(r.Payload); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, viaABI); d != "" {
				t.Errorf("ABI (-want +got):\n%s", d)
			}
		})
	}
}

// A structured message is bounded; an unstructured body never becomes the
// message (it may name internal hosts).
func TestDecodeErrorLongText(t *testing.T) {
	wrap := func(s string) string { return `{"error":{"message":"` + s + `"}}` }
	var got canon.Error
	if err := New().DecodeError(&sdk.Call{}, 502, []byte("<html>db-7.corp:5432 /srv/app.py</html>"), &got); err != nil || strings.Contains(got.Message, "corp") {
		t.Fatalf("unstructured body leaked: %q %v", got.Message, err)
	}
	got = canon.Error{}
	body := wrap(strings.Repeat("é", 400)) // 800 bytes, cut inside no rune
	if err := New().DecodeError(&sdk.Call{}, 502, []byte(body), &got); err != nil {
		t.Fatal(err)
	}
	if want := strings.Repeat("é", maxTextError/2) + "…"; got.Message != want {
		t.Errorf("message %q", got.Message)
	}
	got = canon.Error{}
	body = wrap("a" + strings.Repeat("é", 400)) // odd offset: the cut lands mid-rune
	_ = New().DecodeError(&sdk.Call{}, 502, []byte(body), &got)
	if want := "a" + strings.Repeat("é", (maxTextError-1)/2) + "…"; got.Message != want {
		t.Errorf("message %q", got.Message)
	}
}

func TestMapStatus(t *testing.T) {
	for status, want := range map[int]canon.ErrorType{
		0: canon.ErrBackend, 200: canon.ErrBackend, 302: canon.ErrBackend, 400: canon.ErrInvalidRequest,
		401: canon.ErrAuthentication, 403: canon.ErrPermission, 404: canon.ErrNotFound, 408: canon.ErrTimeout,
		413: canon.ErrRequestTooLarge, 422: canon.ErrInvalidRequest, 429: canon.ErrRateLimit, 500: canon.ErrBackend,
		501: canon.ErrBackend, 502: canon.ErrBackend, 503: canon.ErrOverloaded, 504: canon.ErrTimeout, 599: canon.ErrBackend,
	} {
		if _, got := mapStatus(status); got != want {
			t.Errorf("mapStatus(%d) = %s, want %s", status, got, want)
		}
	}
}
