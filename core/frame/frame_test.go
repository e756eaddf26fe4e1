package frame

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unsafe"
)

// event is one emitted event as recorded by the tests; name is the SSE event
// type (always empty for NDJSON).
type event struct{ name, data string }

// outcome is what a splitter produced from a whole stream.
type outcome struct {
	events []event
	err    error
}

func (o outcome) equal(p outcome) bool {
	return slices.Equal(o.events, p.events) && (o.err == nil) == (p.err == nil) &&
		errors.Is(o.err, ErrTooLarge) == errors.Is(p.err, ErrTooLarge)
}

func (o outcome) String() string {
	var b strings.Builder
	for _, e := range o.events {
		fmt.Fprintf(&b, "%q:%q ", e.name, e.data)
	}
	fmt.Fprintf(&b, "err=%v", o.err)
	return b.String()
}

// feedAll feeds chunks in order, then ends the stream. Each chunk is copied
// into a scratch buffer that is overwritten after Feed returns, as a caller
// reusing its read buffer would, so anything the splitter failed to copy
// shows up as corruption.
func feedAll(sp Splitter, chunks [][]byte) outcome {
	var out outcome
	sse, _ := sp.(*SSE)
	emit := func(ev []byte) {
		e := event{data: string(ev)}
		if sse != nil {
			e.name = string(sse.EventName())
		}
		out.events = append(out.events, e)
	}
	var scratch []byte
	for _, c := range chunks {
		scratch = append(scratch[:0], c...)
		err := sp.Feed(scratch, emit)
		for i := range scratch {
			scratch[i] = '#'
		}
		if err != nil {
			out.err = err
			sp.Reset()
			return out
		}
	}
	out.err = sp.End(emit)
	return out
}

// cut splits data at the given offsets (clamped and sorted).
func cut(data []byte, at ...int) [][]byte {
	at = slices.Clone(at)
	for i, a := range at {
		at[i] = min(max(a, 0), len(data))
	}
	slices.Sort(at)
	var chunks [][]byte
	prev := 0
	for _, a := range at {
		chunks = append(chunks, data[prev:a])
		prev = a
	}
	return append(chunks, data[prev:])
}

// refSSE is a straightforward whole-input implementation of the rules in the
// package documentation, to check the streaming splitter against.
func refSSE(in string) []event {
	in = strings.TrimPrefix(in, bom)
	var lines []string
	for len(in) > 0 {
		i := strings.IndexAny(in, "\r\n")
		if i < 0 {
			lines = append(lines, in) // unterminated final line
			break
		}
		lines = append(lines, in[:i])
		if strings.HasPrefix(in[i:], "\r\n") {
			i++
		}
		in = in[i+1:]
	}
	var evs []event
	var data []string
	var name string
	dispatch := func() {
		if data != nil {
			evs = append(evs, event{name: name, data: strings.Join(data, "\n")})
		}
		data, name = nil, ""
	}
	for _, l := range lines {
		if l == "" {
			dispatch()
			continue
		}
		if l[0] == ':' {
			continue
		}
		field, value, _ := strings.Cut(l, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "data":
			data = append(data, value)
		case "event":
			name = value
		}
	}
	dispatch()
	return evs
}

// refNDJSON is the NDJSON counterpart of refSSE.
func refNDJSON(in string) []event {
	var evs []event
	for _, l := range strings.Split(in, "\n") {
		l = strings.TrimSuffix(l, "\r")
		if strings.Trim(l, " \t\r") != "" {
			evs = append(evs, event{data: l})
		}
	}
	return evs
}

// A realistic vLLM / OpenAI-compatible chat completion chunk.
func vllmChunk(content string) string {
	return `data: {"id":"chatcmpl-9f8e7d6c5b4a","object":"chat.completion.chunk","created":1718000000,` +
		`"model":"meta-llama/Llama-3.1-8B-Instruct","choices":[{"index":0,"delta":{"content":"` + content +
		`"},"logprobs":null,"finish_reason":null}]}` + "\n\n"
}

func vllmStream(nl string) string {
	var b strings.Builder
	b.WriteString(`data: {"id":"chatcmpl-9f8e7d6c5b4a","object":"chat.completion.chunk","created":1718000000,"model":"meta-llama/Llama-3.1-8B-Instruct","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}` + "\n\n")
	for _, w := range []string{"Hello", ",", " how", " can", " I", " help", "?"} {
		b.WriteString(vllmChunk(w))
	}
	b.WriteString(`data: {"id":"chatcmpl-9f8e7d6c5b4a","object":"chat.completion.chunk","created":1718000000,"model":"meta-llama/Llama-3.1-8B-Instruct","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop","stop_reason":null}],"usage":{"prompt_tokens":12,"total_tokens":20,"completion_tokens":8}}` + "\n\n")
	b.WriteString("data: [DONE]\n\n")
	return strings.ReplaceAll(b.String(), "\n", nl)
}

// sseTranscripts are realistic event streams, with the events expected from
// them (checked against refSSE too).
var sseTranscripts = []struct {
	name string
	in   string
}{
	{"vllm-lf", vllmStream("\n")},
	{"vllm-crlf", vllmStream("\r\n")},
	{"vllm-cr", vllmStream("\r")},
	{"vllm-pings", ": ping - 2024-06-10 10:00:00\n\n" + vllmChunk("Hi") + ": ping\r\n\r\n" + vllmChunk(" there") +
		":\n" + "data: [DONE]\n\n"},
	{"multiline", "data: {\"a\":\ndata:  1}\n\nretry: 3000\nid: 7\ndata: first\r\ndata\r\ndata:\r\ndata: last\r\n\r\n" +
		"event: update\nid: 8\ndata: x\ndata: y\n\n"},
	{"anthropic", "event: message_start\r\n" +
		`data: {"type":"message_start","message":{"id":"msg_01","type":"message","role":"assistant","content":[],"model":"claude-3-5-sonnet","stop_reason":null,"usage":{"input_tokens":25,"output_tokens":1}}}` + "\r\n\r\n" +
		"event: content_block_start\r\n" + `data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}` + "\r\n\r\n" +
		"event: ping\r\n" + `data: {"type": "ping"}` + "\r\n\r\n" +
		"event: content_block_delta\r\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}` + "\r\n\r\n" +
		"event: content_block_stop\r\n" + `data: {"type":"content_block_stop","index":0}` + "\r\n\r\n" +
		"event: message_stop\r\n" + `data: {"type":"message_stop"}` + "\r\n\r\n"},
	{"bom-unterminated", bom + "data: a\n\nevent: e\n\ndata: b\ndata: c"},
	{"mixed-endings", "data: a\r\rdata: b\n\r\ndata: c\r\n\ndata:d\r\n\r" + "data\n\n:c\rdata: e\n"},
}

var ndjsonTranscripts = []struct {
	name string
	in   string
}{
	{"ollama-chat", `{"model":"llama3.2","created_at":"2024-06-10T10:00:00.000000Z","message":{"role":"assistant","content":"Hello"},"done":false}` + "\n" +
		`{"model":"llama3.2","created_at":"2024-06-10T10:00:00.050000Z","message":{"role":"assistant","content":" there"},"done":false}` + "\n" +
		`{"model":"llama3.2","created_at":"2024-06-10T10:00:00.100000Z","message":{"role":"assistant","content":""},"done_reason":"stop","done":true,"total_duration":4883583458,"load_duration":1334875,"prompt_eval_count":26,"prompt_eval_duration":342546000,"eval_count":282,"eval_duration":4535599000}` + "\n"},
	{"ollama-generate-crlf", `{"model":"llama3.2","created_at":"2024-06-10T10:00:00Z","response":"The","done":false}` + "\r\n" +
		"\r\n" + `{"model":"llama3.2","created_at":"2024-06-10T10:00:00Z","response":" sky","done":false}` + "\r\n" +
		" \t \n" + `{"model":"llama3.2","created_at":"2024-06-10T10:00:00Z","response":"","done":true,"context":[1,2,3]}`},
	{"odd", "\n\n{\"a\":\"x\\ry\"}\r\n  {\"b\":1}  \n\r\n\r\r\n{\"c\":2}\r"},
}

func TestSSE(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want []event
	}{
		{"one", "data: hello\n\n", []event{{"", "hello"}}},
		{"no-space", "data:hello\n\n", []event{{"", "hello"}}},
		{"one-space-stripped", "data:  two\n\n", []event{{"", " two"}}},
		{"colon-in-value", "data:x:y\n\n", []event{{"", "x:y"}}},
		{"done", "data: [DONE]\n\n", []event{{"", "[DONE]"}}},
		{"join", "data: a\ndata: b\ndata:c\n\n", []event{{"", "a\nb\nc"}}},
		{"data-no-colon", "data\n\n", []event{{"", ""}}},
		{"data-empty", "data:\n\n", []event{{"", ""}}},
		{"data-empty-line-last", "data: a\ndata\n\n", []event{{"", "a\n"}}},
		{"comment", ": ping\n\n", nil},
		{"comment-inside", "data: a\n: ping\ndata: b\n\n", []event{{"", "a\nb"}}},
		{"no-data", "event: foo\nid: 1\n\n", nil},
		{"name-cleared", "event: foo\n\ndata: x\n\n", []event{{"", "x"}}},
		{"name", "event: add\ndata: 1\n\n", []event{{"add", "1"}}},
		{"last-name", "event:a\nevent:b\ndata:1\n\ndata:2\n\n", []event{{"b", "1"}, {"", "2"}}},
		{"ignored-fields", "id: 1\nretry: 100\nfoo: bar\nfoo\ndata: x\n\n", []event{{"", "x"}}},
		{"case-sensitive", "Data: x\n\n", nil},
		{"field-with-space", "data : x\n\n", nil},
		{"crlf", "data: a\r\n\r\n", []event{{"", "a"}}},
		{"cr", "data: a\r\rdata: b\r\r", []event{{"", "a"}, {"", "b"}}},
		{"mixed", "data: a\r\n\r\ndata: b\r\rdata: c\n\n", []event{{"", "a"}, {"", "b"}, {"", "c"}}},
		{"lf-cr-is-two-lines", "data: a\n\rdata: b\n\n", []event{{"", "a"}, {"", "b"}}},
		{"blank-lines", "\n\ndata: x\n\n\n\ndata: y\n\n", []event{{"", "x"}, {"", "y"}}},
		{"bom", bom + "data: x\n\n", []event{{"", "x"}}},
		{"two-boms", bom + bom + "data: x\n\n", nil},
		{"bom-prefix", "\xEF\xBBdata: x\n\ndata: y\n\n", []event{{"", "y"}}},
		{"bom-late", "data: x\n\n" + bom + "data: y\n\n", []event{{"", "x"}}},
		{"end-unterminated-line", "data: x", []event{{"", "x"}}},
		{"end-no-blank", "data: x\n", []event{{"", "x"}}},
		{"end-no-blank-cr", "data: x\r", []event{{"", "x"}}},
		{"end-join", "data: x\ndata: y", []event{{"", "x\ny"}}},
		{"end-name", "event: e\ndata: x", []event{{"e", "x"}}},
		{"end-no-data", "event: e", nil},
		{"end-comment", "data: x\n\n: c", []event{{"", "x"}}},
		{"end-bom-prefix", "\xEF\xBB", nil},
		{"empty", "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := outcome{events: tc.want}
			if ref := (outcome{events: refSSE(tc.in)}); !ref.equal(want) {
				t.Fatalf("reference parser disagrees with the table: %v", ref)
			}
			checkEveryCut(t, func() Splitter { return NewSSE(0) }, []byte(tc.in), want)
		})
	}
}

func TestNDJSON(t *testing.T) {
	ev := func(s ...string) []event {
		var e []event
		for _, d := range s {
			e = append(e, event{data: d})
		}
		return e
	}
	for _, tc := range []struct {
		name string
		in   string
		want []event
	}{
		{"lines", "{\"a\":1}\n{\"b\":2}\n", ev(`{"a":1}`, `{"b":2}`)},
		{"crlf", "{\"a\":1}\r\n{\"b\":2}\r\n", ev(`{"a":1}`, `{"b":2}`)},
		{"blank", "\n \n\t\r\n\r\n{}\n\n", ev(`{}`)},
		{"inner-cr-kept", "a\rb\n", ev("a\rb")},
		{"cr-cr-lf", "a\r\r\n", ev("a\r")},
		{"spaces-kept", " {} \n", ev(" {} ")},
		{"end-unterminated", "{}\n{\"x\":1}", ev("{}", `{"x":1}`)},
		{"end-cr", "{}\r", ev("{}")},
		{"end-blank", "{}\n  ", ev("{}")},
		{"empty", "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := outcome{events: tc.want}
			if ref := (outcome{events: refNDJSON(tc.in)}); !ref.equal(want) {
				t.Fatalf("reference parser disagrees with the table: %v", ref)
			}
			checkEveryCut(t, func() Splitter { return NewNDJSON(0) }, []byte(tc.in), want)
		})
	}
}

// checkEveryCut checks that the stream yields want when fed whole, cut at
// every byte boundary, and one byte at a time, reusing one splitter (which
// End resets) throughout.
func checkEveryCut(t *testing.T, newSp func() Splitter, in []byte, want outcome) {
	t.Helper()
	sp := newSp()
	if got := feedAll(sp, [][]byte{in}); !got.equal(want) {
		t.Fatalf("whole: got %v, want %v", got, want)
	}
	for i := 0; i <= len(in); i++ {
		if got := feedAll(sp, cut(in, i)); !got.equal(want) {
			t.Fatalf("cut at %d (%q | %q): got %v, want %v", i, in[:i], in[i:], got, want)
		}
	}
	bytewise := make([][]byte, 0, 2*len(in)+1)
	for i := range in {
		bytewise = append(bytewise, in[i:i+1], nil) // empty pieces too
	}
	if got := feedAll(sp, bytewise); !got.equal(want) {
		t.Fatalf("byte at a time: got %v, want %v", got, want)
	}
}

// checkRandomCuts checks that random multi-cuts of in yield want.
func checkRandomCuts(t *testing.T, newSp func() Splitter, in []byte, want outcome, seed uint64) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	sp := newSp()
	for range 300 {
		at := make([]int, 1+r.IntN(12))
		for i := range at {
			at[i] = r.IntN(len(in) + 1)
		}
		if got := feedAll(sp, cut(in, at...)); !got.equal(want) {
			t.Fatalf("cuts %v: got %v, want %v", at, got, want)
		}
	}
}

func TestSSESplitInvariance(t *testing.T) {
	for i, tr := range sseTranscripts {
		t.Run(tr.name, func(t *testing.T) {
			in := []byte(tr.in)
			want := feedAll(NewSSE(0), [][]byte{in})
			if want.err != nil || len(want.events) == 0 {
				t.Fatalf("whole: %v", want)
			}
			if ref := (outcome{events: refSSE(tr.in)}); !ref.equal(want) {
				t.Fatalf("whole: got %v, reference %v", want, ref)
			}
			checkEveryCut(t, func() Splitter { return NewSSE(0) }, in, want)
			checkRandomCuts(t, func() Splitter { return NewSSE(0) }, in, want, uint64(i))
			// With limits that some lines or events exceed, the error and
			// what precedes it do not depend on the cuts either.
			for _, lim := range []int{1, 7, 64, 200, 230} {
				want := feedAll(NewSSE(lim), [][]byte{in})
				checkEveryCut(t, func() Splitter { return NewSSE(lim) }, in, want)
				checkRandomCuts(t, func() Splitter { return NewSSE(lim) }, in, want, uint64(i*1000+lim))
			}
		})
	}
}

func TestSSETranscriptEvents(t *testing.T) {
	got := feedAll(NewSSE(0), [][]byte{[]byte(vllmStream("\r\n"))})
	if n := len(got.events); n != 10 || got.events[9].data != "[DONE]" ||
		!strings.Contains(got.events[3].data, `"content":" how"`) {
		t.Fatalf("vllm: %v", got)
	}
	for _, tr := range sseTranscripts {
		if tr.name != "anthropic" {
			continue
		}
		got := feedAll(NewSSE(0), [][]byte{[]byte(tr.in)})
		var names []string
		for _, e := range got.events {
			names = append(names, e.name)
		}
		want := []string{"message_start", "content_block_start", "ping", "content_block_delta", "content_block_stop", "message_stop"}
		if !slices.Equal(names, want) {
			t.Fatalf("anthropic names %q, want %q", names, want)
		}
	}
}

func TestNDJSONSplitInvariance(t *testing.T) {
	for i, tr := range ndjsonTranscripts {
		t.Run(tr.name, func(t *testing.T) {
			in := []byte(tr.in)
			want := feedAll(NewNDJSON(0), [][]byte{in})
			if want.err != nil || len(want.events) == 0 {
				t.Fatalf("whole: %v", want)
			}
			if ref := (outcome{events: refNDJSON(tr.in)}); !ref.equal(want) {
				t.Fatalf("whole: got %v, reference %v", want, ref)
			}
			checkEveryCut(t, func() Splitter { return NewNDJSON(0) }, in, want)
			checkRandomCuts(t, func() Splitter { return NewNDJSON(0) }, in, want, uint64(i))
			for _, lim := range []int{1, 7, 80, 90, 150} {
				want := feedAll(NewNDJSON(lim), [][]byte{in})
				checkEveryCut(t, func() Splitter { return NewNDJSON(lim) }, in, want)
				checkRandomCuts(t, func() Splitter { return NewNDJSON(lim) }, in, want, uint64(i*1000+lim))
			}
		})
	}
}

func TestSSELimits(t *testing.T) {
	for _, tc := range []struct {
		name   string
		max    int
		in     string
		events []string
		fail   bool
	}{
		{"line-at-limit", 16, "data: 0123456789\n\n", []string{"0123456789"}, false},
		{"line-over-limit", 15, "data: 0123456789\n\n", nil, true},
		{"comment-over-limit", 15, "data: a\n\n: 0123456789012345\n\n", []string{"a"}, true},
		{"join-at-limit", 11, "data:12345\ndata:12345\n\n", []string{"12345\n12345"}, false},
		{"join-over-limit", 10, "data:12345\ndata:12345\n\n", nil, true},
		{"join-over-limit-3", 11, "data:12\ndata:1234\ndata:1234\n\n", nil, true},
		{"partial-over-limit", 10, "data: x\n\ndata: 0123456789", []string{"x"}, true},
		{"end-join-over-limit", 5, "data:12\ndata:12", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var want outcome
			for _, e := range tc.events {
				want.events = append(want.events, event{data: e})
			}
			if tc.fail {
				want.err = ErrTooLarge
			}
			checkEveryCut(t, func() Splitter { return NewSSE(tc.max) }, []byte(tc.in), want)
		})
	}
}

func TestNDJSONLimits(t *testing.T) {
	for _, tc := range []struct {
		name   string
		max    int
		in     string
		events []string
		fail   bool
	}{
		{"at-limit", 3, "abc\n", []string{"abc"}, false},
		{"at-limit-crlf", 3, "abc\r\n", []string{"abc"}, false},
		{"at-limit-end-cr", 3, "abc\r", []string{"abc"}, false},
		{"over-limit", 3, "ab\nabcd\nx\n", []string{"ab"}, true},
		{"over-limit-cr", 3, "abc\rd\n", nil, true},
		{"over-limit-blank", 3, "    \n", nil, true},
		{"partial-over-limit", 3, "a\nabcd", []string{"a"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var want outcome
			for _, e := range tc.events {
				want.events = append(want.events, event{data: e})
			}
			if tc.fail {
				want.err = ErrTooLarge
			}
			checkEveryCut(t, func() Splitter { return NewNDJSON(tc.max) }, []byte(tc.in), want)
		})
	}
}

func TestErrorSticky(t *testing.T) {
	for _, sp := range []Splitter{NewSSE(8), NewNDJSON(8)} {
		var n int
		emit := func([]byte) { n++ }
		err := sp.Feed([]byte("0123456789"), emit)
		if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "10 bytes, limit 8") {
			t.Fatalf("%T: got %v", sp, err)
		}
		if err := sp.Feed([]byte("\n\ndata:x\n\n"), emit); !errors.Is(err, ErrTooLarge) {
			t.Fatalf("%T: error not sticky: %v", sp, err)
		}
		if err := sp.End(emit); !errors.Is(err, ErrTooLarge) {
			t.Fatalf("%T: End: %v", sp, err)
		}
		// End reset the splitter.
		if err := sp.Feed([]byte("data:x\n\n"), emit); err != nil || n != 1 {
			t.Fatalf("%T: after End: %v, %d events", sp, err, n)
		}
		sp.Feed([]byte("0123456789"), emit)
		sp.Reset()
		if err := sp.Feed([]byte("data:y\n\n"), emit); err != nil || n != 2 {
			t.Fatalf("%T: after Reset: %v, %d events", sp, err, n)
		}
	}
}

func TestDefaultMax(t *testing.T) {
	for _, sp := range []Splitter{NewSSE(0), NewNDJSON(-1)} {
		big := bytes.Repeat([]byte("x"), DefaultMax)
		if err := sp.Feed(big, func([]byte) {}); err != nil {
			t.Fatalf("%T: %v", sp, err)
		}
		if err := sp.Feed([]byte("y"), func([]byte) {}); !errors.Is(err, ErrTooLarge) {
			t.Fatalf("%T: %v", sp, err)
		}
	}
}

func TestReset(t *testing.T) {
	s := NewSSE(0)
	var got []string
	emit := func(ev []byte) { got = append(got, string(ev)) }
	// A partial line, a pending event and a pending event type are dropped.
	s.Feed([]byte("event: e\ndata: a\n"), emit)
	s.Feed([]byte("data: partial"), emit)
	s.Reset()
	s.Feed([]byte("data: b\n\n"), emit)
	if !slices.Equal(got, []string{"b"}) {
		t.Fatalf("got %q", got)
	}
	// A BOM is again recognised after Reset.
	got = nil
	s.Feed([]byte("data: a\r"), emit)
	s.Reset()
	s.Feed([]byte(bom+"data: b\n\n"), emit)
	if !slices.Equal(got, []string{"b"}) {
		t.Fatalf("got %q", got)
	}
	got = nil
	s.Reset()
	s.Feed([]byte("\xEF\xBB"), emit)
	s.Reset()
	s.Feed([]byte("\xBFdata: c\n\n"), emit)
	if !slices.Equal(got, nil) { // "\xBFdata" is not a data field
		t.Fatalf("got %q", got)
	}

	n := NewNDJSON(0)
	got = nil
	n.Feed([]byte("{\"partial\""), emit)
	n.Reset()
	n.Feed([]byte("{}\n"), emit)
	if !slices.Equal(got, []string{"{}"}) {
		t.Fatalf("got %q", got)
	}
	if err := n.End(emit); err != nil || len(got) != 1 {
		t.Fatalf("End after complete lines: %v, %q", err, got)
	}
}

// Reset drops a buffer grown by an unusually large event.
func TestResetDropsLargeBuffers(t *testing.T) {
	s := NewSSE(0)
	big := "data: " + strings.Repeat("x", 2*keepCap)
	s.Feed([]byte(big), func([]byte) {})
	if cap(s.line) < 2*keepCap {
		t.Fatalf("line cap %d", cap(s.line))
	}
	s.End(func([]byte) {})
	if cap(s.line) > keepCap || cap(s.data) > keepCap {
		t.Fatalf("caps %d, %d after End", cap(s.line), cap(s.data))
	}
}

func within(ev, p []byte) bool {
	e, b := uintptr(unsafe.Pointer(unsafe.SliceData(ev))), uintptr(unsafe.Pointer(unsafe.SliceData(p)))
	return e >= b && e+uintptr(len(ev)) <= b+uintptr(len(p))
}

// Events wholly within a piece, with one data line, are not copied; others
// are, and nothing emitted can be appended to in place.
func TestZeroCopy(t *testing.T) {
	s := NewSSE(0)
	p := []byte("data: partial\n\ndata: one\n\ndata: a\ndata: b\n\nevent: e\r\ndata: two\r\n\r\ndata: cro")
	var aliased []bool
	emit := func(ev []byte) {
		if cap(ev) != len(ev) {
			t.Errorf("event %q has spare capacity %d", ev, cap(ev)-len(ev))
		}
		aliased = append(aliased, within(ev, p))
	}
	s.Feed([]byte("data: x\n\ndata: "), emit) // "data: partial" crosses the boundary
	s.Feed(p, emit)
	s.Feed([]byte("ss\n\n"), emit)
	if want := []bool{false, false, true, false, true, false}; !slices.Equal(aliased, want) {
		t.Fatalf("aliased %v, want %v", aliased, want)
	}

	n := NewNDJSON(0)
	p = []byte("{\"a\":1}\r\n{\"b\":2}\n{\"c\"")
	aliased = nil
	n.Feed([]byte("{\"z\":"), emit)
	n.Feed(p, emit)
	n.Feed([]byte(":3}\n"), emit)
	if want := []bool{false, true, false}; !slices.Equal(aliased, want) {
		t.Fatalf("aliased %v, want %v", aliased, want)
	}
}

// An emit that appends to its argument cannot corrupt what follows.
func TestEmitAppend(t *testing.T) {
	for _, sp := range []Splitter{NewSSE(0), NewNDJSON(0)} {
		var got []string
		emit := func(ev []byte) {
			got = append(got, string(ev))
			_ = append(ev, "data: injected\n\n"...)
		}
		in := "data: a\n\ndata: b\n\n"
		if _, ok := sp.(*NDJSON); ok {
			in = "a\nb\n"
		}
		sp.Feed([]byte(in), emit)
		sp.End(emit)
		if len(got) != 2 || !strings.HasSuffix(got[0], "a") || !strings.HasSuffix(got[1], "b") {
			t.Fatalf("%T: got %q", sp, got)
		}
	}
}

// EventName is that of the event being emitted, across Feed boundaries.
func TestEventNameAcrossPieces(t *testing.T) {
	s := NewSSE(0)
	var names []string
	emit := func([]byte) { names = append(names, string(s.EventName())) }
	s.Feed([]byte("event: content_block_delta\n"), emit)
	s.Feed([]byte("data: {}\n"), emit)
	s.Feed([]byte("\nevent: ping\ndata: {}\n\ndata: {}\n\n"), emit)
	if !slices.Equal(names, []string{"content_block_delta", "ping", ""}) {
		t.Fatalf("names %q", names)
	}
	if len(s.EventName()) != 0 {
		t.Fatalf("name after dispatch: %q", s.EventName())
	}
}
