package gateway

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/mindrouter/mindrouter/bench/fakellm"
)

const corsOrigin = "https://chat.example.edu"

// browserPreflight is the preflight Chrome sends before openai-node
// (dangerouslyAllowBrowser) posts a chat completion from a page on
// corsOrigin: testdata/cors_preflight_openai_browser.http, sent to path.
func browserPreflight(t *testing.T, base, path, origin string) *http.Response {
	t.Helper()
	f, err := os.Open("testdata/cors_preflight_openai_browser.http")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	req, err := http.ReadRequest(bufio.NewReader(f))
	if err != nil {
		t.Fatal(err)
	}
	out, _ := http.NewRequest(req.Method, base+path, nil)
	out.Header = req.Header.Clone()
	out.Header.Set("Origin", origin)
	resp, err := http.DefaultClient.Do(out)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

func hasVaryOrigin(h http.Header) bool {
	for _, v := range h.Values("Vary") {
		for _, f := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(f), "Origin") {
				return true
			}
		}
	}
	return false
}

// TestCORS_Preflight: with cors on, a browser's preflight is answered 204
// on every kind of route — a plugin route of each dialect, the admin and
// self-service API, the Keeper's Responses and Conversations state —
// before any key is asked for, with the headers it asked for allowed.
func TestCORS_Preflight(t *testing.T) {
	t.Parallel()
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, "cors: {allowed_origins: ["+corsOrigin+"], max_age: 5m}\n")
	for _, path := range []string{"/v1/chat/completions", "/v1/messages", "/api/chat", "/v1/models",
		"/v1/responses", "/v1/responses/resp_123", "/v1/conversations", "/api/me", "/api/admin/users"} {
		t.Run(path, func(t *testing.T) {
			resp := browserPreflight(t, e.base, path, corsOrigin)
			h := resp.Header
			if resp.StatusCode != http.StatusNoContent {
				t.Fatalf("status %d, want 204", resp.StatusCode)
			}
			if got := h.Get("Access-Control-Allow-Origin"); got != corsOrigin {
				t.Fatalf("Allow-Origin %q", got)
			}
			if got := h.Get("Access-Control-Allow-Methods"); !strings.Contains(got, "POST") || !strings.Contains(got, "DELETE") {
				t.Fatalf("Allow-Methods %q", got)
			}
			if got := h.Get("Access-Control-Allow-Headers"); !strings.Contains(got, "authorization") || !strings.Contains(got, "x-stainless-os") {
				t.Fatalf("Allow-Headers %q", got)
			}
			if got := h.Get("Access-Control-Max-Age"); got != "300" {
				t.Fatalf("Max-Age %q", got)
			}
			if h.Get("Access-Control-Allow-Credentials") != "" {
				t.Fatal("credentials allowed without being configured")
			}
			if !hasVaryOrigin(h) {
				t.Fatalf("Vary %q", h.Values("Vary"))
			}
		})
	}
	// Another origin learns nothing: no Allow-Origin, so the browser refuses.
	resp := browserPreflight(t, e.base, "/v1/chat/completions", "https://evil.example.com")
	if got := resp.Header.Get("Access-Control-Allow-Origin"); got != "" {
		t.Fatalf("foreign origin allowed: %q", got)
	}
}

// TestCORS_Answers: answers carry Allow-Origin and Vary: Origin — a
// success through the SDK, a stream, and the errors a page must be able
// to read (401 without a key, 404 of an unknown model, the admin API's).
func TestCORS_Answers(t *testing.T) {
	t.Parallel()
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, "cors: {allowed_origins: ['*']}\n")
	check := func(t *testing.T, h http.Header) {
		t.Helper()
		if got := h.Get("Access-Control-Allow-Origin"); got != "*" {
			t.Fatalf("Allow-Origin %q", got)
		}
		if !hasVaryOrigin(h) {
			t.Fatalf("Vary %q", h.Values("Vary"))
		}
		if !strings.Contains(h.Get("Access-Control-Expose-Headers"), "X-Request-ID") {
			t.Fatalf("Expose-Headers %q", h.Get("Access-Control-Expose-Headers"))
		}
		if h.Get("Access-Control-Allow-Credentials") != "" {
			t.Fatal("credentials with *")
		}
	}
	t.Run("sdk chat", func(t *testing.T) {
		var raw *http.Response
		_, err := e.client.Chat.Completions.New(context.Background(), chatParams(vllmModel, "hi"),
			option.WithHeader("Origin", corsOrigin), option.WithResponseInto(&raw))
		if err != nil {
			t.Fatal(err)
		}
		check(t, raw.Header)
	})
	t.Run("sdk error", func(t *testing.T) {
		var raw *http.Response
		_, err := e.client.Chat.Completions.New(context.Background(), chatParams("nope", "hi"),
			option.WithHeader("Origin", corsOrigin), option.WithResponseInto(&raw))
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 404 {
			t.Fatalf("err %v", err)
		}
		check(t, raw.Header)
	})
	for _, tc := range []struct {
		name, method, path, key, body string
		status                        int
	}{
		{"stream", "POST", "/v1/chat/completions", adminKey,
			`{"model":"` + ollamaModel + `","stream":true,"messages":[{"role":"user","content":"hi"}]}`, 200},
		{"no key", "POST", "/v1/chat/completions", "", `{"model":"x","messages":[]}`, 401},
		{"anthropic no key", "POST", "/v1/messages", "", `{}`, 401},
		{"admin", "GET", "/api/me", adminKey, "", 200},
		{"healthz", "GET", "/healthz", "", "", 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, e.base+tc.path, strings.NewReader(tc.body))
			req.Header.Set("Origin", corsOrigin)
			req.Header.Set("Content-Type", "application/json")
			if tc.key != "" {
				req.Header.Set("Authorization", "Bearer "+tc.key)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d want %d: %s", resp.StatusCode, tc.status, b)
			}
			check(t, resp.Header)
		})
	}
}

// TestCORS_Off: without a cors section nothing changes: a preflight is a
// 405 and no answer carries Allow-Origin.
func TestCORS_Off(t *testing.T) {
	t.Parallel()
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, "")
	resp := browserPreflight(t, e.base, "/v1/chat/completions", corsOrigin)
	if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("status %d, Allow-Origin %q", resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"))
	}
}

// TestCORS_Credentials: with named origins and allow_credentials the
// origin is echoed (never "*") with Allow-Credentials.
func TestCORS_Credentials(t *testing.T) {
	t.Parallel()
	e := startEnv(t, fakellm.Config{}, fakellm.Config{},
		"cors: {allowed_origins: ["+corsOrigin+", 'http://localhost:3000'], allow_credentials: true}\n")
	resp := browserPreflight(t, e.base, "/v1/chat/completions", "http://localhost:3000")
	if got := resp.Header.Get("Access-Control-Allow-Origin"); got != "http://localhost:3000" {
		t.Fatalf("Allow-Origin %q", got)
	}
	if resp.Header.Get("Access-Control-Allow-Credentials") != "true" {
		t.Fatal("no Allow-Credentials")
	}
}

// TestCORS_ExpectContinueRefusal (issue 20): a refused "Expect:
// 100-continue" is answered by fasthttp before the handler runs, so it
// lacked what the chain's answers carry: the CORS headers (the page could
// not read the status) and, on a 401, WWW-Authenticate. A malformed body
// (fasthttp streams request bodies, so the chain sees the error) already
// carried them, and still does.
func TestCORS_ExpectContinueRefusal(t *testing.T) {
	t.Parallel()
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, "cors: {allowed_origins: ["+corsOrigin+"]}\n")
	send := func(head string) *http.Response {
		t.Helper()
		c, err := net.Dial("tcp", e.gw.Addr.String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.WriteString(c, head+"\r\n"); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	const post = "POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\nOrigin: " + corsOrigin + "\r\nContent-Type: application/json\r\n"
	for _, tc := range []struct {
		name, head string
		status     int
	}{
		{"no key", post + "Expect: 100-continue\r\nContent-Length: 10\r\n", 401},
		{"bad key", post + "Authorization: Bearer mr2_nope\r\nExpect: 100-continue\r\nContent-Length: 10\r\n", 401},
		{"too large", post + "Authorization: Bearer " + adminKey + "\r\nExpect: 100-continue\r\nContent-Length: 999999999\r\n", 413},
		{"bad chunk", post + "Authorization: Bearer " + adminKey + "\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400}, // a transport error
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := send(tc.head)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.status)
			}
			if got := resp.Header.Get("Access-Control-Allow-Origin"); got != corsOrigin || !hasVaryOrigin(resp.Header) {
				t.Errorf("Allow-Origin %q, Vary %q", got, resp.Header.Values("Vary"))
			}
			if got := resp.Header.Get("WWW-Authenticate"); (tc.status == 401) != strings.HasPrefix(got, "Bearer") {
				t.Errorf("WWW-Authenticate %q on a %d", got, tc.status)
			}
		})
	}
}
