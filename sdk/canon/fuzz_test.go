package canon

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func fuzzSeeds(f *testing.F) {
	for _, tc := range roundTripCases() {
		f.Add(tc.in.AppendJSON(nil))
	}
	for _, s := range []string{
		`{}`, `[]`, `null`, `{"model":"\ud800"}`, `{"max_tokens":1e3}`, `{"temperature":-0}`,
		`{"response_format":{"schema":"\u0001\"x"}}`, `{"tools":[{"parameters":[1,{"a":null}]}]}`,
		`{"choices":[{"index":1e2,"delta":{"tool_calls":[{"index":0}]}}],"usage":null}`,
		"{\"model\":\"\xff\xfe\"}",
	} {
		f.Add([]byte(s))
	}
}

// fuzzRoundTrip checks that whatever decodes re-encodes to valid JSON that
// decodes to an equal value.
func fuzzRoundTrip[T any, P interface {
	*T
	codec
}](t *testing.T, data []byte) {
	var a T
	if err := P(&a).DecodeJSON(data); err != nil {
		return
	}
	out := P(&a).AppendJSON(nil)
	if !json.Valid(out) {
		t.Fatalf("invalid JSON from %q: %q", data, out)
	}
	var b T
	if err := P(&b).DecodeJSON(out); err != nil {
		t.Fatalf("re-decode of %q: %v", out, err)
	}
	if d := cmp.Diff(a, b, equate); d != "" {
		t.Fatalf("round trip of %q via %q (-first +second):\n%s", data, out, d)
	}
}

func FuzzDecodeChatRequest(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(fuzzRoundTrip[ChatRequest])
}

func FuzzDecodeChatChunk(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(fuzzRoundTrip[ChatChunk])
}

func FuzzDecodeChatResponse(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(fuzzRoundTrip[ChatResponse])
}

func FuzzDecodeDiscovery(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(fuzzRoundTrip[Discovery])
}

func FuzzDecodeEmbeddingResponse(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(fuzzRoundTrip[EmbeddingResponse])
}

// FuzzDecodeStrict compares the decoder with encoding/json: both accept
// the same documents, bar type mismatches and nesting, and decode strings
// alike.
func FuzzDecodeStrict(f *testing.F) {
	fuzzSeeds(f)
	for _, s := range []string{`{"message":"\ud800\u0041\udc00 \u00e9 \/"}`, "{\"code\":\"a\x01\"}", `{"x":[[{}],-0.1e-2]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var e Error
		err := e.DecodeJSON(data)
		valid := json.Valid(data)
		if err == nil {
			if !valid {
				t.Fatalf("%q: accepted; encoding/json rejects it", data)
			}
			var m map[string]any
			dec := json.NewDecoder(bytes.NewReader(data))
			dec.UseNumber()
			if err := dec.Decode(&m); err != nil {
				t.Fatalf("%q: encoding/json: %v", data, err)
			}
			for k, got := range map[string]string{"type": string(e.Type), "code": e.Code, "message": e.Message, "param": e.Param, "request_id": e.RequestID} {
				if want, _ := m[k].(string); got != want {
					t.Fatalf("%q: %s = %q, encoding/json says %q", data, k, got, want)
				}
			}
			return
		}
		var se *syntaxError
		if valid && errors.As(err, &se) && !strings.Contains(se.msg, "nesting") {
			t.Fatalf("%q: %v; encoding/json accepts it", data, err)
		}
	})
}

// FuzzChunkFast checks that the one-pass chunk decoder, where it does not
// give up, agrees with the general decoder.
func FuzzChunkFast(f *testing.F) {
	fuzzSeeds(f)
	for _, s := range []string{
		`{"id":"c","choices":[{"index":0,"delta":{"role":"assistant","content":"a\nb\u00e9\ud83c\udf89","tool_calls":[{"index":1,"id":"x","name":"f","arguments":"{\"a\":1}"}]},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3,"reasoning_tokens":4,"cached_tokens":5}}`,
		`{"created":-0,"choices":[],"model":"\u0000"}`, `{"created":01}`, `{"created":1.0}`, `{"created":123456789012345678}`, `{"id":"a","id":"b"}`,
		"{\"id\":\"\xff\"}", `{"choices":[{"delta":{"content":"x"},"delta":{}}]}`, `{"usage":{}}`, `{"choices":[{},{}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var fast ChatChunk
		if !fast.decodeFast(data) {
			return
		}
		var slow ChatChunk
		if err := slow.decodeJSON(data); err != nil {
			t.Fatalf("%q: fast path accepted it, general decoder: %v", data, err)
		}
		if d := cmp.Diff(slow, fast); d != "" {
			t.Fatalf("%q (-general +fast):\n%s", data, d)
		}
	})
}
