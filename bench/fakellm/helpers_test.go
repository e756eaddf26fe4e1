package fakellm

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"
)

// startServer runs a Server on a free loopback port for the test.
func startServer(t testing.TB, cfg Config) (*Server, string) {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s, url, err := Start(cfg, "127.0.0.1:0")
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(s.Close)
	return s, url
}

var client = &http.Client{Timeout: 10 * time.Second}

// post sends a JSON body and returns status, headers and body.
func post(t testing.TB, url, body string) (int, http.Header, []byte) {
	t.Helper()
	resp, err := client.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("POST %s: reading body: %v", url, err)
	}
	return resp.StatusCode, resp.Header, b
}

func get(t testing.TB, url string) (int, http.Header, []byte) {
	t.Helper()
	resp, err := client.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: reading body: %v", url, err)
	}
	return resp.StatusCode, resp.Header, b
}

// obj is a decoded JSON object with path helpers.
type obj = map[string]any

func decode(t testing.TB, b []byte) obj {
	t.Helper()
	var o obj
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&o); err != nil {
		t.Fatalf("invalid JSON %q: %v", b, err)
	}
	if dec.More() {
		t.Fatalf("trailing data after JSON object: %q", b)
	}
	return o
}

// at walks a path of keys (string) and indexes (int).
func at(t testing.TB, v any, path ...any) any {
	t.Helper()
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				t.Fatalf("at %v: %T is not an object", path, v)
			}
			x, ok := m[k]
			if !ok {
				t.Fatalf("at %v: no key %q in %v", path, k, m)
			}
			v = x
		case int:
			a, ok := v.([]any)
			if !ok || k >= len(a) {
				t.Fatalf("at %v: cannot index %d in %v", path, k, v)
			}
			v = a[k]
		}
	}
	return v
}

func num(t testing.TB, v any) int64 {
	t.Helper()
	n, ok := v.(json.Number)
	if !ok {
		t.Fatalf("%v (%T) is not a number", v, v)
	}
	i, err := n.Int64()
	if err != nil {
		t.Fatalf("%v is not an integer", v)
	}
	return i
}

func hasKeys(t testing.TB, o obj, keys ...string) {
	t.Helper()
	for _, k := range keys {
		if _, ok := o[k]; !ok {
			t.Errorf("missing key %q in %v", k, o)
		}
	}
}

// sseEvents splits an SSE body into its data payloads, checking the framing:
// every event is a single "data: ..." line followed by a blank line.
func sseEvents(t testing.TB, body []byte) []string {
	t.Helper()
	if !bytes.HasSuffix(body, []byte("\n\n")) {
		t.Fatalf("SSE body does not end with a blank line: %q", body)
	}
	var out []string
	for _, ev := range strings.Split(strings.TrimSuffix(string(body), "\n\n"), "\n\n") {
		if !strings.HasPrefix(ev, "data: ") || strings.Contains(ev, "\n") {
			t.Fatalf("bad SSE event %q", ev)
		}
		out = append(out, strings.TrimPrefix(ev, "data: "))
	}
	return out
}

// sseChunks decodes the JSON chunks of an SSE body and checks it ends with
// [DONE].
func sseChunks(t testing.TB, body []byte) []obj {
	t.Helper()
	evs := sseEvents(t, body)
	if len(evs) == 0 || evs[len(evs)-1] != "[DONE]" {
		t.Fatalf("SSE stream does not end with [DONE]: %q", body)
	}
	var out []obj
	for _, e := range evs[:len(evs)-1] {
		out = append(out, decode(t, []byte(e)))
	}
	return out
}

// ndjson decodes an NDJSON body: one JSON object per line.
func ndjson(t testing.TB, body []byte) []obj {
	t.Helper()
	var out []obj
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if len(sc.Bytes()) == 0 {
			t.Fatalf("empty NDJSON line in %q", body)
		}
		out = append(out, decode(t, sc.Bytes()))
	}
	if !bytes.HasSuffix(body, []byte("\n")) {
		t.Fatalf("NDJSON body does not end with a newline: %q", body)
	}
	return out
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t testing.TB, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}

const weatherTool = `{"type":"function","function":{"name":"get_weather","description":"Weather",
"parameters":{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer","minimum":1,"maximum":7},
"unit":{"type":"string","enum":["celsius","fahrenheit"]},"detailed":{"type":"boolean"}},"required":["city","days","unit"]}}}`

const searchTool = `{"type":"function","function":{"name":"search","parameters":{"type":"object",
"properties":{"query":{"type":"string"},"limit":{"type":"integer"}},"required":["query"]}}}`
