package gateway

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/ollama/ollama/api"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/mindrouter/mindrouter/bench/fakellm"
)

// TestOllamaSDK_ProbesWithoutKey: the connectivity checks Ollama clients
// make before they have a key — the client's Heartbeat (HEAD /), GET /
// (real Ollama: 200 "Ollama is running", text/plain) and Version — are
// answered without one, and name nothing the gateway serves.
func TestOllamaSDK_ProbesWithoutKey(t *testing.T) {
	t.Parallel()
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, "")
	u, _ := url.Parse(e.base)
	c := api.NewClient(u, http.DefaultClient) // no key
	v, err := c.Version(context.Background())
	if err != nil || v != "0.17.4" {
		t.Fatalf("version %q: %v", v, err)
	}
	resp, err := http.Get(e.base + "/")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(b) != "Ollama is running" || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("GET /: %d %q %q", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	if err := c.Heartbeat(context.Background()); err != nil {
		t.Fatalf("heartbeat: %#v", err)
	}
	// The other model routes still want a key.
	if _, err := c.List(context.Background()); !isStatus(err, 401) {
		t.Fatalf("tags without a key: %v", err)
	}
}

// isStatus: the client raises a 401 as api.AuthorizationError, others as
// api.StatusError.
func isStatus(err error, code int) bool {
	var se api.StatusError
	var ae api.AuthorizationError
	return errors.As(err, &se) && se.StatusCode == code || errors.As(err, &ae) && ae.StatusCode == code
}

// TestUnauthorized_WWWAuthenticate: every 401 names the Bearer scheme
// (RFC 9110), in each dialect and on the admin API.
func TestUnauthorized_WWWAuthenticate(t *testing.T) {
	t.Parallel()
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, "")
	for _, tc := range []struct{ method, path, key string }{
		{"POST", "/v1/chat/completions", ""},
		{"POST", "/v1/chat/completions", "mr2_wrong_0123456789abcdef"},
		{"POST", "/v1/messages", ""},
		{"POST", "/api/chat", ""},
		{"GET", "/api/tags", ""},
		{"GET", "/v1/responses/resp_1", ""},
		{"GET", "/api/me", ""},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, e.base+tc.path, strings.NewReader(`{}`))
			if tc.key != "" {
				req.Header.Set("Authorization", "Bearer "+tc.key)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 401 || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
				t.Fatalf("status %d, WWW-Authenticate %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
			}
		})
	}
	// Through the SDKs: the header is on the typed errors' responses.
	oc := openai.NewClient(option.WithBaseURL(e.base+"/v1/"), option.WithAPIKey("mr2_wrong_0123456789abcdef"), option.WithMaxRetries(0))
	_, err := oc.Models.List(context.Background())
	var oe *openai.Error
	if !errors.As(err, &oe) || oe.StatusCode != 401 || !strings.HasPrefix(oe.Response.Header.Get("WWW-Authenticate"), "Bearer") {
		t.Fatalf("openai: %v", err)
	}
	ac := anthropicClient(e, false, "mr2_wrong_0123456789abcdef")
	_, err = ac.Messages.New(context.Background(), anthropicParams(vllmModel, "hi"))
	var ae *anthropic.Error
	if !errors.As(err, &ae) || ae.StatusCode != 401 || !strings.HasPrefix(ae.Response.Header.Get("WWW-Authenticate"), "Bearer") {
		t.Fatalf("anthropic: %v", err)
	}
}
