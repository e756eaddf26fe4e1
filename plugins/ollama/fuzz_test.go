package ollama

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
	"github.com/valyala/fastjson"
)

// seedFiles adds every testdata file matching pattern to the corpus.
func seedFiles(f *testing.F, pattern string, add func([]byte)) {
	m, _ := filepath.Glob(filepath.Join("testdata", pattern))
	if len(m) == 0 {
		f.Fatalf("no seeds for %s", pattern)
	}
	for _, p := range m {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		add(b)
	}
}

var oddJSON = []string{
	``, `{}`, `null`, `[]`, `{"error":null}`, `{"error":12}`, `{"message":null,"done":true}`,
	`{"message":{"tool_calls":[{"function":{"name":"f","arguments":{"a":1e,"b":NaN}}}]}}`,
	`{"message":{"tool_calls":[{"function":{"name":"f","arguments":{"\u0000k\ud800":"\x"}}}]}}`,
	"{\"message\":{\"content\":\"\xff\xfe\"},\"done\":true,\"eval_count\":1e99}",
	`{"models":[{"name":"a","size":-1,"context_length":1e300,"capabilities":[1,"x",null]}]}`,
}

// checkStatus fails on anything but success or a clean bad-input error.
func checkStatus(t *testing.T, r result) bool {
	t.Helper()
	switch r.Status {
	case abi.StatusOK:
		return true
	case abi.StatusBadInput:
		if r.Error == "" {
			t.Fatal("bad input without a message")
		}
		return false
	}
	t.Fatalf("status %s: %s", r.Status, r.Error)
	return false
}

func FuzzDecodeStream(f *testing.F) {
	seedFiles(f, "stream/*.ndjson", func(b []byte) { f.Add(b, []byte(nil), uint8(0)) })
	for _, s := range oddJSON {
		f.Add([]byte(s), []byte{1, 1, 2}, uint8(3))
	}
	f.Add([]byte(`{"message":{"content":"x"}}`), []byte{1, 9, 0}, uint8(1))
	f.Fuzz(func(t *testing.T, ndjson, state []byte, batch uint8) {
		h := newHarness()
		events := bytes.Split(ndjson, []byte{'\n'})
		n := int(batch%4) + 1
		for i := 0; i < len(events); i += n {
			r := h.call(t, abi.OpStreamDecode, 0, state, items(events[i:min(i+n, len(events))]))
			if !checkStatus(t, r) {
				return
			}
			chunksJSON(t, r.Payload)
			if !r.keepState() {
				var s streamState
				if err := s.load(r.State); err != nil {
					t.Fatalf("adapter wrote a state it cannot read: %x", r.State)
				}
				state = r.State
			}
		}
	})
}

func FuzzDecodeResponse(f *testing.F) {
	seedFiles(f, "response/*.ollama.json", func(b []byte) { f.Add(b) })
	for _, s := range oddJSON {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r := newHarness().call(t, abi.OpResponseDecode, 0, nil, body)
		if !checkStatus(t, r) {
			return
		}
		var resp canon.ChatResponse
		if err := resp.DecodeJSON(r.Payload); err != nil {
			t.Fatalf("output %q: %v", r.Payload, err)
		}
	})
}

// FuzzAppendCompact checks that tool-call arguments re-encoded from
// whatever fastjson accepts are valid JSON.
func FuzzAppendCompact(f *testing.F) {
	seedFiles(f, "response/*.ollama.json", func(b []byte) { f.Add(b) })
	for _, s := range oddJSON {
		f.Add([]byte(s))
	}
	f.Add([]byte(`{"a":-0.0e+00,"b":[true,false,null,"\u00e9\ud83d\ude00"],"\"k":{}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var p fastjson.Parser
		v, err := p.ParseBytes(b)
		if err != nil {
			return
		}
		if out := appendCompact(nil, v); !json.Valid(out) {
			t.Fatalf("appendCompact(%q) = %q: not JSON", b, out)
		}
	})
}

func FuzzDecodeProbe(f *testing.F) {
	for _, p := range []string{"models", "loaded", "health"} {
		seedFiles(f, "probe/*.json", func(b []byte) { f.Add(p, uint16(200), b) })
	}
	for _, s := range oddJSON {
		f.Add("models", uint16(500), []byte(s))
	}
	f.Fuzz(func(t *testing.T, probe string, status uint16, body []byte) {
		r := newHarness().call(t, abi.OpProbeDecode, 0, nil, body, "probe", probe, "status", strconv.Itoa(int(status)))
		if !checkStatus(t, r) {
			return
		}
		var d canon.Discovery
		if err := d.DecodeJSON(r.Payload); err != nil {
			t.Fatalf("output %q: %v", r.Payload, err)
		}
	})
}

func FuzzDecodeError(f *testing.F) {
	for _, s := range append(oddJSON, `{"error":"model \"x\" not found, try pulling it first"}`, "<html>") {
		f.Add(uint16(404), []byte(s))
	}
	f.Fuzz(func(t *testing.T, status uint16, body []byte) {
		r := newHarness().call(t, abi.OpErrorDecode, 0, nil, body, "status", strconv.Itoa(int(status)))
		if r.Status != abi.StatusOK {
			t.Fatalf("status %s: %s", r.Status, r.Error)
		}
		var e canon.Error
		if err := e.DecodeJSON(r.Payload); err != nil {
			t.Fatalf("output %q: %v", r.Payload, err)
		}
		if e.Status < 400 || e.Status > 599 || e.Type == "" || e.Message == "" || len(e.Message) > 3*maxErrorMessage {
			t.Fatalf("error %+v", e)
		}
	})
}

// FuzzEncodeRequest feeds canonical requests; whatever is accepted must
// become one valid JSON object.
func FuzzEncodeRequest(f *testing.F) {
	seedFiles(f, "request/*.canon.json", func(b []byte) { f.Add(b) })
	f.Fuzz(func(t *testing.T, req []byte) {
		r := newHarness().call(t, abi.OpRequestEncode, 0, nil, req)
		if !checkStatus(t, r) {
			return
		}
		var m map[string]any
		if err := json.Unmarshal(r.Payload, &m); err != nil {
			t.Fatalf("body %q from %q: %v", r.Payload, req, err)
		}
		if _, ok := m["stream"].(bool); !ok {
			t.Fatalf("stream not written: %s", r.Payload)
		}
	})
}

// FuzzParseCreated checks the fast RFC 3339 reader against time.Parse.
func FuzzParseCreated(f *testing.F) {
	for _, s := range []string{"2023-12-12T14:13:43.416799Z", "2025-05-29T09:35:56.836222-07:00",
		"2024-02-29T23:59:59+05:30", "0000-03-01T00:00:00Z", "9999-12-31T23:59:59.999999999-23:59"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		fast, ok := parseRFC3339([]byte(s))
		if !ok {
			return
		}
		tm, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatalf("%q: fast path accepted what time.Parse rejects: %v", s, err)
		}
		if fast != tm.Unix() {
			t.Fatalf("%q: fast %d, time.Parse %d", s, fast, tm.Unix())
		}
	})
}
