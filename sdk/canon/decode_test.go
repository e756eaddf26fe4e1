package canon

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDecodeStrings(t *testing.T) {
	for _, in := range []string{
		`"plain"`, `""`, `"\n\t\"\\\/\b\f\r"`, `"caf\u00e9 \u65e5\u672c"`, `"\ud83c\udf89!"`,
		`"\ud800"`, `"\ud800x"`, `"\ud800\u0041"`, `"\udc00\ud800"`, `"\ud800\ud800\udc00"`, `"\uDBFF\uDFFF"`,
		`"a\u0000b"`, "\"\xff\xfe\"", "\"\xe2\x82\"", "\"\\u00e9\xff\"", `"\u2028\u003c"`,
	} {
		var want string
		if err := json.Unmarshal([]byte(in), &want); err != nil {
			t.Fatal(err)
		}
		var e Error
		if err := e.DecodeJSON([]byte(`{"message":` + in + `,"code":` + in + `}`)); err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if e.Message != want || e.Code != want {
			t.Errorf("%s: got %q and %q, want %q", in, e.Message, e.Code, want)
		}
	}
}

func TestDecodeEscapedKeys(t *testing.T) {
	var r ChatRequest
	if err := r.DecodeJSON([]byte(`{"mod\u0065l":"m","\u0073tream":true,"x\"y":1,"response_format":{"schema":{"k\"\u0065":"\u0065"}},"type":"t"}`)); err != nil {
		t.Fatal(err)
	}
	if r.Model != "m" || !r.Stream || string(r.ResponseFormat.Schema) != `{"k\"\u0065":"\u0065"}` {
		t.Fatalf("got %+v, schema %s", r, r.ResponseFormat.Schema)
	}
	err := r.DecodeJSON([]byte(`{"m\u006fdel":2}`))
	if err == nil || !strings.Contains(err.Error(), `field "model": expected string, got number`) {
		t.Fatalf("err = %v", err)
	}
}

// Raw values are compacted in place in the decoder's copy of the input; they
// must not disturb their neighbours, nor reach them by appending.
func TestRawInPlace(t *testing.T) {
	in := []byte(`{"tools":[{"parameters": { "a" : [ 1 , "x y" ] } ,"name":"n\nm","description":"d"},{"parameters":"s","name":"t"},{"parameters":12.5e1},{"parameters":true}]}`)
	var r ChatRequest
	if err := r.DecodeJSON(in); err != nil {
		t.Fatal(err)
	}
	want := []Tool{
		{Name: "n\nm", Description: "d", Parameters: json.RawMessage(`{"a":[1,"x y"]}`)},
		{Name: "t", Parameters: json.RawMessage(`"s"`)},
		{Parameters: json.RawMessage(`12.5e1`)},
		{Parameters: json.RawMessage(`true`)},
	}
	if d := cmp.Diff(want, r.Tools); d != "" {
		t.Fatalf("(-want +got):\n%s", d)
	}
	for i := range r.Tools {
		p := r.Tools[i].Parameters
		_ = append(p, "XXXXXXXXXXXXXXXXXXXXXXXX"...)
		for j := range p {
			p[j] = '#'
		}
	}
	for i := range want {
		want[i].Parameters = r.Tools[i].Parameters
	}
	if d := cmp.Diff(want, r.Tools); d != "" {
		t.Fatalf("raw values alias their neighbours (-want +got):\n%s", d)
	}
}

func TestDecodeStrict(t *testing.T) {
	deep := func(n int) string { return `{"x":` + strings.Repeat("[", n) + strings.Repeat("]", n) + `}` }
	ok := []string{
		" \t\r\n{ \"model\" : \"m\" , \"x\" : [ ] , \"y\" : { } } \n", `{"x":-0.5e+10}`, `{"x":0}`, `{"x":[1,-2,3.25E-1,true,false,null,"s",{},[]]}`,
		deep(maxDepth - 1),
	}
	bad := []string{
		`{"x":1,}`, `{"x":[1,]}`, `{,}`, `{"x"}`, `{"x":}`, `{"x" 1}`, `{x:1}`, `{'x':1}`, `{"x":1 "y":2}`,
		`{"x":+1}`, `{"x":.5}`, `{"x":1.}`, `{"x":1e}`, `{"x":-}`, `{"x":00}`, `{"x":0x1}`, `{"x":Infinity}`,
		`{"x":tru}`, `{"x":nul}`, `{"x":truex}`, `{"x":"\u12"}`, `{"x":"\u12g4"}`, `{"x":"\a"}`, `{"x":"abc}`,
		"{\"x\":\"a\x01b\"}", "{\"x\x1f\":1}", "{\"x\":[\"\x00\\n\"]}", `{"x":1}}`, `{"x":1}]`, `{} {}`,
		"{\"x\":1}\x00", "\xef\xbb\xbf{}", `{"x":[}`, `{"x":{]}`, deep(maxDepth),
	}
	for _, in := range ok {
		var r ChatRequest
		if err := r.DecodeJSON([]byte(in)); err != nil {
			t.Errorf("%q: %v", in, err)
		}
		if !json.Valid([]byte(in)) {
			t.Errorf("%q: encoding/json disagrees", in)
		}
	}
	for _, in := range bad {
		var r ChatRequest
		err := r.DecodeJSON([]byte(in))
		if err == nil {
			t.Errorf("%q: no error", in)
			continue
		}
		if !strings.HasPrefix(err.Error(), "canon: decode chat request: ") {
			t.Errorf("%q: %v", in, err)
		}
		if json.Valid([]byte(in)) && in != deep(maxDepth) {
			t.Errorf("%q: encoding/json disagrees", in)
		}
	}
	// Control characters are reported with the field's path where there is
	// one, and with their offset otherwise.
	for in, want := range map[string]string{
		"{\"model\":\"a\x01\"}":                   `field "model": unescaped control character in string`,
		"{\"stop\":[\"a\",\"\\n\x02\"]}":          `field "stop[1]": unescaped control character`,
		"{\"unknown\":[\"a\",\"\\n\x02\"]}":       `invalid JSON at offset 16: unescaped control character`,
		"{\"tools\":[{\"parameters\":[\"\t\"]}]}": `field "tools[0].parameters": unescaped control character`,
	} {
		var r ChatRequest
		if err := r.DecodeJSON([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err = %v, want %q", in, err, want)
		}
	}
	var r ChatRequest
	err := r.DecodeJSON([]byte(`{"model":"m", "x":[1,2}`))
	var se *syntaxError
	if !errors.As(err, &se) || se.off != 22 || !strings.Contains(err.Error(), `invalid JSON at offset 22: unexpected '}', expected ',' or ']'`) {
		t.Errorf("err = %v", err)
	}
}

func TestDecodeRepeatedFields(t *testing.T) {
	var r ChatRequest
	in := `{"temperature":1,"temperature":null,"top_p":0.5,"top_p":0.25,"response_format":{"type":"text","name":"a"},"response_format":{"type":"json_object"},
		"tool_choice":{"mode":"auto"},"tool_choice":null,"seed":1,"seed":2,"parallel_tool_calls":true,"parallel_tool_calls":false,"top_k":3,"top_k":null}`
	if err := r.DecodeJSON([]byte(in)); err != nil {
		t.Fatal(err)
	}
	want := ChatRequest{TopP: ptr(0.25), ResponseFormat: &ResponseFormat{Type: FormatJSONObject}, Seed: ptr(int64(2)), ParallelToolCalls: ptr(false)}
	if d := cmp.Diff(want, r); d != "" {
		t.Fatalf("(-want +got):\n%s", d)
	}
}

func TestDecodeNumbers(t *testing.T) {
	for in, want := range map[string]int64{
		"0": 0, "-0": 0, "123456789012345678": 123456789012345678, "-123456789012345678": -123456789012345678,
		"9223372036854775807": 1<<63 - 1, "-9223372036854775808": -1 << 63, "1e3": 1000, "-2.0": -2, "1.5e1": 15,
	} {
		var r ChatRequest
		if err := r.DecodeJSON([]byte(`{"seed":` + in + `}`)); err != nil || r.Seed == nil || *r.Seed != want {
			t.Errorf("%s: got %v, %v", in, r.Seed, err)
		}
	}
	for in, want := range map[string]error{"9223372036854775808": errRange, "1e19": errRange, "0.5": errNotIntegral, "-1e-1": errNotIntegral} {
		var r ChatRequest
		if err := r.DecodeJSON([]byte(`{"seed":` + in + `}`)); !errors.Is(err, want) {
			t.Errorf("%s: err = %v, want %v", in, err, want)
		}
	}
	var r ChatRequest
	if err := r.DecodeJSON([]byte(`{"temperature":-0,"top_p":123456789012345678,"min_p":1e-400}`)); err != nil {
		t.Fatal(err)
	}
	if f := *r.Temperature; f != 0 || !bytes.HasPrefix(jsonFloat(f), []byte("-")) {
		t.Errorf("temperature = %v, want -0", f)
	}
	if *r.TopP != 123456789012345678 || *r.MinP != 0 {
		t.Errorf("top_p = %v, min_p = %v", *r.TopP, *r.MinP)
	}
}

func jsonFloat(f float64) []byte {
	return (&ChatRequest{Temperature: &f}).AppendJSON(nil)[len(`{"temperature":`):]
}

// conversation is a request of n messages, every fifth with tool calls.
func conversation(n int) *ChatRequest {
	r := &ChatRequest{Model: "m"}
	for i := range n {
		m := Message{Role: RoleUser, Content: []Part{{Type: PartText, Text: "turn " + strconv.Itoa(i)}}}
		if i%5 == 0 {
			m.Role = RoleAssistant
			m.ToolCalls = []ToolCall{{ID: "c" + strconv.Itoa(i), Name: "f", Arguments: "{}"}, {ID: "d", Name: "g"}}
		}
		r.Messages = append(r.Messages, m)
	}
	return r
}

// The messages share slabs of parts and tool calls; appending to one
// message's must not reach the next's.
func TestDecodeSlabs(t *testing.T) {
	in := conversation(12)
	var r ChatRequest
	if err := r.DecodeJSON(in.AppendJSON(nil)); err != nil {
		t.Fatal(err)
	}
	for i := range r.Messages {
		m := &r.Messages[i]
		m.Content = append(m.Content, Part{Text: "x"})
		m.ToolCalls = append(m.ToolCalls, ToolCall{Name: "x"})
	}
	for i := range r.Messages {
		m := &r.Messages[i]
		m.Content = m.Content[:len(m.Content)-1]
		m.ToolCalls = m.ToolCalls[:len(m.ToolCalls)-1]
	}
	if d := cmp.Diff(in, &r, equate); d != "" {
		t.Fatalf("(-want +got):\n%s", d)
	}
}

// Chunks as AppendJSON writes them take the one-pass path, but for those
// carrying logprobs (rare: only when a client asks), which it leaves to the
// general decoder.
func TestChunkFastPath(t *testing.T) {
	chunks := []*ChatChunk{benchChunk(), {}}
	for _, tc := range roundTripCases() {
		if c, ok := tc.in.(*ChatChunk); ok {
			chunks = append(chunks, c)
		}
	}
	chunks = append(chunks, &ChatChunk{ID: "x", Model: "é", Created: 1 << 40, Choices: []ChunkChoice{{Index: 2,
		Delta:        Delta{Role: RoleAssistant, Content: "line\n\"q\" \x01 ✓", Reasoning: "r", ToolCalls: []ToolCallDelta{{Index: 1, ID: "i", Name: "n", Arguments: `{"a":[1]}`}}},
		FinishReason: FinishToolCalls}}, Usage: &Usage{1, 2, 3, 4, 5}})
	for _, c := range chunks {
		b := c.AppendJSON(nil)
		var got ChatChunk
		if hasLogprobs(c) {
			if got.decodeFast(b) {
				t.Errorf("fast path took logprobs in %s", b)
			}
			continue
		}
		if !got.decodeFast(b) {
			t.Errorf("fast path gave up on %s", b)
			continue
		}
		if d := cmp.Diff(c, &got, equate); d != "" {
			t.Errorf("%s (-want +got):\n%s", b, d)
		}
	}
}

func hasLogprobs(c *ChatChunk) bool {
	for i := range c.Choices {
		if c.Choices[i].Logprobs != nil {
			return true
		}
	}
	return false
}
