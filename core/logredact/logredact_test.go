package logredact

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

const key = "mr2_0123456789abcdefABCDEF-_xyz"

func TestString(t *testing.T) {
	for _, in := range []string{
		key,
		"Authorization: Bearer " + key + "\r\nHost: x",
		"authorization: bearer sk-live-something",
		"X-API-Key: " + key,
		`contents: "POST / HTTP/1.1\r\nX-Api-Key: abcdef\r\n"`,
	} {
		out := String(in)
		if strings.Contains(out, key) || strings.Contains(out, "sk-live") || strings.Contains(out, "abcdef\\r") {
			t.Errorf("String(%q) = %q", in, out)
		}
		if !strings.Contains(out, Redacted) {
			t.Errorf("String(%q) = %q lacks the marker", in, out)
		}
	}
	if s := "plain text, mr2 but no key"; String(s) != s {
		t.Errorf("changed %q", s)
	}
}

func TestHandler(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(Handler(slog.NewJSONHandler(&buf, nil))).With("k", "Bearer "+key)
	log.Info("got "+key, "err", errors.New("bad header Authorization: Bearer "+key), "s", key,
		slog.Group("g", "inner", key), "n", 3)
	if strings.Contains(buf.String(), key) {
		t.Fatalf("key leaked: %s", buf.String())
	}
	if !strings.Contains(buf.String(), `"n":3`) {
		t.Fatalf("other attrs lost: %s", buf.String())
	}
}

func TestTruncate(t *testing.T) {
	s := strings.Repeat("é", 1000)
	got := Truncate(s, 255)
	if len(got) > 300 || !strings.Contains(got, "more bytes") {
		t.Fatalf("Truncate = %d bytes %q", len(got), got[:20])
	}
	if Truncate("short", 256) != "short" {
		t.Fatal("short changed")
	}
}

// Keys a route declares outside Authorization (ABI 2.8): Google's
// x-goog-api-key header and ?key= query parameter, Azure's api-key, in
// whatever a log line quotes (a URL, a raw request), even when they are
// not mr2_ keys (imported ones have any shape).
func TestString_DeclaredCredentials(t *testing.T) {
	for in, want := range map[string]string{
		"GET /v1beta/models?key=AIzaSyLEGACY123&pageSize=5 HTTP/1.1": "GET /v1beta/models?key=" + Redacted + "&pageSize=5 HTTP/1.1",
		"/x:streamGenerateContent?alt=sse&KEY=legacy.secret":         "/x:streamGenerateContent?alt=sse&KEY=" + Redacted,
		"x-goog-api-key: legacysecret\r\n":                           "x-goog-api-key: " + Redacted + "\r\n",
		"/openai/deployments/d/chat?api-version=1&api-key=legacy":    "/openai/deployments/d/chat?api-version=1&api-key=" + Redacted,
		"monkey=banana&turnkey=1":                                    "monkey=banana&turnkey=1",
	} {
		if got := String(in); got != want {
			t.Errorf("String(%q) = %q, want %q", in, got, want)
		}
	}
}
