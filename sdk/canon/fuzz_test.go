package canon

import (
	"encoding/json"
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
