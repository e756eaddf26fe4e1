package shape

import (
	"strings"
	"testing"
)

// vllmAnswer is a vLLM chat.completion's response shape around its id,
// created, content and usage, and the OpenAI answer it becomes.
func vllmAnswer(t testing.TB) *Response {
	t.Helper()
	in := [][]byte{
		[]byte(`{"id":"`), []byte(`","object":"chat.completion","created":`),
		[]byte(`,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"`),
		[]byte(`"},"finish_reason":"stop"}],"usage":{"prompt_tokens":`),
		[]byte(`,"total_tokens":`), []byte(`,"completion_tokens":`), []byte("}}\n"),
	}
	flags := []byte{0, FlagInt, FlagCounted, FlagInt | FlagPrompt, FlagInt | FlagNonEmpty, FlagInt | FlagCompletion}
	out := []Part{Lit([]byte(`{"id":"`)), Meta(PartID), Lit([]byte(`","created":`)), Meta(PartCreated),
		Lit([]byte(`,"content":"`)), Hole(2), Lit([]byte(`","usage":[`)), Hole(3), Lit([]byte(",")), Hole(5), Lit([]byte(",")), Hole(4), Lit([]byte("]}"))}
	b, err := AppendResponse(nil, in, flags, [][]byte{[]byte("think>")}, out)
	if err != nil {
		t.Fatal(err)
	}
	r, err := ParseResponse(b)
	if err != nil {
		t.Fatal(err)
	}
	clear(b) // the Response owns its bytes
	return r
}

func answer(id, created, content, pt, tt, ct string) string {
	return `{"id":"` + id + `","object":"chat.completion","created":` + created +
		`,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"` + content +
		`"},"finish_reason":"stop"}],"usage":{"prompt_tokens":` + pt + `,"total_tokens":` + tt + `,"completion_tokens":` + ct + "}}\n"
}

func TestResponseApply(t *testing.T) {
	r := vllmAnswer(t)
	out, rep, ok := r.Apply([]byte("X"), []byte(answer("cmpl-1", "1700000000", `Hi\n\"there\"`, "12", "15", "3")), []byte("chatcmpl-9"), []byte("42"))
	want := `X{"id":"chatcmpl-9","created":42,"content":"Hi\n\"there\"","usage":[12,3,15]}`
	if !ok || string(out) != want {
		t.Fatalf("got %q %v, want %q", out, ok, want)
	}
	if !rep.HasUsage || rep.Prompt != 12 || rep.Completion != 3 || rep.Counted != 10 {
		t.Fatalf("report %+v", rep)
	}
	for name, body := range map[string]string{
		"leading zero":        answer("a", "1", "x", "012", "15", "3"),
		"zero total":          answer("a", "1", "x", "0", "0", "0"),
		"negative":            answer("a", "1", "x", "-1", "15", "3"),
		"fraction":            answer("a", "1", "x", "1.5", "15", "3"),
		"exponent":            answer("a", "1", "x", "1e3", "15", "3"),
		"ten-digit count":     answer("a", "1", "x", "1234567890", "15", "3"),
		"19-digit created":    answer("a", "1234567890123456789", "x", "1", "15", "3"),
		"string count":        answer("a", "1", "x", `"1"`, "15", "3"),
		"think tag":           answer("a", "1", "a <think> b", "1", "15", "3"),
		"closing think tag":   answer("a", "1", "a </think> b", "1", "15", "3"),
		"unicode escape":      answer("a", "1", `\u003c`, "1", "15", "3"),
		"quote in content":    answer("a", "1", `x","role":"user`, "1", "15", "3"),
		"trailing bytes":      answer("a", "1", "x", "1", "15", "3") + " ",
		"other model":         strings.Replace(answer("a", "1", "x", "1", "15", "3"), `"model":"m"`, `"model":"n"`, 1),
		"empty":               "",
		"truncated":           answer("a", "1", "x", "1", "15", "3")[:60],
		"raw control in id":   answer("a\x01", "1", "x", "1", "15", "3"),
		"created as a string": answer("a", `"1"`, "x", "1", "15", "3"),
	} {
		if out, _, ok := r.Apply([]byte("X"), []byte(body), []byte("id"), []byte("1")); ok || string(out) != "X" {
			t.Errorf("%s: matched (%q)", name, out)
		}
	}
	good := []byte(answer("a", "0", "", "0", "1", "0"))
	if _, rep, ok := r.Apply(nil, good, []byte("id"), []byte("1")); !ok || rep.Counted != 0 || rep.Prompt != 0 {
		t.Errorf("zeros and empty content: %v %+v", ok, rep)
	}
	// Metadata the host would have to escape: the plugin's call does it.
	for _, m := range [][2]string{{`a"b`, "1"}, {`a\b`, "1"}, {"é", "1"}, {"id", "01"}, {"id", "1.5"}, {"id", ""}} {
		if _, _, ok := r.Apply(nil, good, []byte(m[0]), []byte(m[1])); ok {
			t.Errorf("meta %q matched", m)
		}
	}
	var zero *Response
	if _, _, ok := zero.Apply(nil, good, []byte("id"), []byte("1")); ok {
		t.Error("a nil Response matched")
	}
}

func TestResponseRefused(t *testing.T) {
	q := []byte(`"`)
	for name, c := range map[string]struct {
		in    [][]byte
		flags []byte
		deny  [][]byte
		out   []Part
	}{
		"no hole":               {[][]byte{[]byte("x")}, nil, nil, nil},
		"int after a quote":     {[][]byte{[]byte(`{"a":"`), []byte(`}`)}, []byte{FlagInt}, nil, nil},
		"int next to a digit":   {[][]byte{[]byte(`{"a":1`), []byte(`}`)}, []byte{FlagInt}, nil, nil},
		"string without quote":  {[][]byte{[]byte(`{"a":`), q}, []byte{0}, nil, nil},
		"counted int":           {[][]byte{[]byte(`:`), []byte(`}`)}, []byte{FlagInt | FlagCounted}, nil, nil},
		"prompt string":         {[][]byte{q, q}, []byte{FlagPrompt}, nil, nil},
		"two prompts":           {[][]byte{[]byte(`:`), []byte(`,`), []byte(`}`)}, []byte{FlagInt | FlagPrompt, FlagInt | FlagPrompt}, nil, nil},
		"prompt and completion": {[][]byte{[]byte(`:`), []byte(`}`)}, []byte{FlagInt | FlagPrompt | FlagCompletion}, nil, nil},
		"unknown flag":          {[][]byte{q, q}, []byte{1 << 7}, nil, nil},
		"empty deny":            {[][]byte{q, q}, []byte{0}, [][]byte{{}}, nil},
		"too many denied":       {[][]byte{q, q}, []byte{0}, [][]byte{q, q, q, q, q}, nil},
		"hole out of range":     {[][]byte{q, q}, []byte{0}, nil, []Part{Hole(1)}},
		"unknown meta part":     {[][]byte{q, q}, []byte{0}, nil, []Part{{Hole: -4}}},
	} {
		if b, err := AppendResponse([]byte("k"), c.in, c.flags, c.deny, c.out); err == nil || string(b) != "k" {
			t.Errorf("%s: encoded", name)
		}
	}
	// Damaged encodings of a valid shape are refused, never a panic.
	b, err := AppendResponse(nil, [][]byte{[]byte(`{"a":`), []byte(`,"b":"`), []byte(`"}`)}, []byte{FlagInt | FlagPrompt, FlagCounted}, [][]byte{[]byte("x")},
		[]Part{Lit([]byte("<")), Hole(1), Meta(PartID), Meta(PartCreated), Hole(0)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParseResponse(b); err != nil {
		t.Fatal(err)
	}
	for i := range b {
		if _, err := ParseResponse(b[:i]); err == nil {
			t.Errorf("a %d-byte prefix parsed", i)
		}
	}
	if _, err := ParseResponse(append(b, 0)); err == nil {
		t.Error("a trailing byte parsed")
	}
	if _, err := ParseResponse(append([]byte{version}, b[1:]...)); err == nil {
		t.Error("a stream shape's version parsed")
	}
}

func FuzzParseResponse(f *testing.F) {
	b, _ := AppendResponse(nil, [][]byte{[]byte(`{"a":`), []byte(`,"b":"`), []byte(`"}`)}, []byte{FlagInt | FlagPrompt, FlagCounted}, nil,
		[]Part{Lit([]byte("<")), Hole(1), Meta(PartID), Hole(0)})
	f.Add(b, []byte(`{"a":5,"b":"x"}`))
	f.Fuzz(func(t *testing.T, enc, body []byte) {
		r, err := ParseResponse(enc)
		if err != nil {
			return
		}
		r.Apply(nil, body, []byte("id"), []byte("7"))
	})
}
