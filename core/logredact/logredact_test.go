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
