package ollama

import (
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

func TestDecodeError(t *testing.T) {
	long := strings.Repeat("é", 400) // 800 bytes
	for _, tc := range []struct {
		name   string
		status int
		body   string
		want   canon.Error
	}{
		{"model not found (old)", 404, `{"error":"model \"llama9\" not found, try pulling it first"}`,
			canon.Error{Status: 404, Type: canon.ErrNotFound, Code: "model_not_found",
				Message: `model "llama9" not found, try pulling it first`}},
		{"model not found (new)", 404, `{"error":"model 'llama9' not found"}`,
			canon.Error{Status: 404, Type: canon.ErrNotFound, Code: "model_not_found", Message: "model 'llama9' not found"}},
		{"model not found, odd status", 500, `{"error":"model 'x' not found"}`,
			canon.Error{Status: 404, Type: canon.ErrNotFound, Code: "model_not_found", Message: "model 'x' not found"}},
		{"bad request", 400, `{"error":"invalid options: top_k"}`,
			canon.Error{Status: 400, Type: canon.ErrInvalidRequest, Message: "invalid options: top_k"}},
		{"context", 400, `{"error":"the input length exceeds the context length"}`,
			canon.Error{Status: 400, Type: canon.ErrInvalidRequest, Code: "context_length_exceeded",
				Message: "the input length exceeds the context length"}},
		{"unprocessable", 422, `{"error":"x"}`, canon.Error{Status: 400, Type: canon.ErrInvalidRequest, Message: "x"}},
		{"method", 405, `405 method not allowed`, canon.Error{Status: 400, Type: canon.ErrInvalidRequest, Message: "ollama returned HTTP status 405"}},
		{"rate", 429, `{"error":"too many requests"}`, canon.Error{Status: 429, Type: canon.ErrRateLimit, Message: "too many requests"}},
		{"server", 500, `{"error":"llama runner process has terminated: exit status 2"}`,
			canon.Error{Status: 502, Type: canon.ErrBackend, Message: "llama runner process has terminated: exit status 2"}},
		{"busy", 503, `{"error":"server busy, please try again.  maximum pending requests exceeded"}`,
			canon.Error{Status: 503, Type: canon.ErrOverloaded, Message: "server busy, please try again.  maximum pending requests exceeded"}},
		{"gateway timeout", 504, ``, canon.Error{Status: 504, Type: canon.ErrTimeout, Message: "ollama returned HTTP status 504"}},
		{"auth", 401, `{"error":"unauthorized","signin_url":"https://ollama.com/connect?name=x"}`,
			canon.Error{Status: 401, Type: canon.ErrAuthentication, Message: "unauthorized"}},
		{"forbidden", 403, `{"error":"forbidden"}`, canon.Error{Status: 403, Type: canon.ErrPermission, Message: "forbidden"}},
		{"too large", 413, `{"error":"request entity too large"}`,
			canon.Error{Status: 413, Type: canon.ErrRequestTooLarge, Message: "request entity too large"}},
		{"html", 502, "  <html><body>Bad Gateway</body></html>\n", canon.Error{Status: 502, Type: canon.ErrBackend,
			Message: "ollama returned HTTP status 502"}},
		{"error object", 500, `{"error":{"message":"nested"}}`, canon.Error{Status: 502, Type: canon.ErrBackend, Message: "nested"}},
		{"no error member", 500, `{"detail":"x"}`, canon.Error{Status: 502, Type: canon.ErrBackend, Message: "ollama returned HTTP status 500"}},
		{"long", 500, `{"error":"` + long + `"}`, canon.Error{Status: 502, Type: canon.ErrBackend, Message: long[:512]}},
		{"long odd", 500, `{"error":"x` + long + `"}`, canon.Error{Status: 502, Type: canon.ErrBackend, Message: "x" + long[:510]}},
		{"unstructured names a host", 500, "<html>db-7.corp:5432 /srv/app.py</html>", canon.Error{Status: 502, Type: canon.ErrBackend, Message: "ollama returned HTTP status 500"}},
		{"zero status", 0, `{"error":"x"}`, canon.Error{Status: 502, Type: canon.ErrBackend, Message: "x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newHarness().call(t, abi.OpErrorDecode, 0, nil, []byte(tc.body), "status", strconv.Itoa(tc.status))
			if r.Status != abi.StatusOK {
				t.Fatalf("status %s: %s", r.Status, r.Error)
			}
			var got canon.Error
			if err := got.DecodeJSON(r.Payload); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}
