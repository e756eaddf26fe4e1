package shape

import (
	"encoding/json"
	"testing"

	"github.com/mindrouter/mindrouter/sdk/jsonw"
)

// vllmShape is a vLLM content chunk's shape and the OpenAI chunk it
// becomes (as the bundle's patch leaves it).
func vllmShape(t testing.TB) []byte {
	t.Helper()
	b, err := Append(nil,
		[][]byte{[]byte(`{"id":"c1","object":"chat.completion.chunk","created":5,"model":"m","choices":[{"index":0,"delta":{"content":"`), []byte(`"},"logprobs":null,"finish_reason":null}]}`)},
		[]byte{FlagNonEmpty | FlagCounted},
		[]Part{Lit([]byte(`data: {"id":"g","choices":[{"delta":{"content":"`)), Hole(0), Lit([]byte("\"}}]}\n\n"))})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestApply(t *testing.T) {
	var s Shape
	if err := s.Parse(vllmShape(t)); err != nil {
		t.Fatal(err)
	}
	pre := `{"id":"c1","object":"chat.completion.chunk","created":5,"model":"m","choices":[{"index":0,"delta":{"content":"`
	post := `"},"logprobs":null,"finish_reason":null}]}`
	for _, c := range []struct {
		body string // the content string's body
		ok   bool
		n    int
	}{
		{"Hello", true, 5},
		{` wörld`, true, 7},
		{`a\nb\"c\\d\te\r`, true, 10},
		{"", false, 0},                          // empty: nothing to write, the plugin's call
		{`\u003c`, false, 0},                    // not how jsonw writes '<'
		{`\/`, false, 0},                        // nor '/'
		{"a\x01", false, 0},                     // a raw control byte: not JSON
		{"\xff", false, 0},                      // invalid UTF-8
		{"\u2028", false, 0},                    // jsonw escapes it
		{`x"},"finish_reason":"stop`, false, 0}, // a quote: another shape, whatever follows
	} {
		ev := "  " + pre + c.body + post + "\n"
		out, n, ok := s.Apply([]byte("X"), []byte(ev))
		if ok != c.ok || n != c.n {
			t.Errorf("%q: ok %v n %d, want %v %d", c.body, ok, n, c.ok, c.n)
			continue
		}
		want := "X"
		if ok {
			want += `data: {"id":"g","choices":[{"delta":{"content":"` + c.body + "\"}}]}\n\n"
		}
		if string(out) != want {
			t.Errorf("%q: out %q, want %q", c.body, out, want)
		}
	}
	for _, ev := range []string{
		pre + "x" + post + ",",         // more after the suffix
		pre[1:] + "x" + post,           // another prefix
		pre + "x" + post[:len(post)-1], // a short suffix
		pre + "x",                      // unterminated
		`{"id":"c2"` + pre[len(`{"id":"c1"`):] + "x" + post, // another stream's id
	} {
		if _, _, ok := s.Apply(nil, []byte(ev)); ok {
			t.Errorf("%q matched", ev)
		}
	}
	var zero Shape
	if _, _, ok := zero.Apply(nil, []byte(pre+"x"+post)); ok {
		t.Error("the zero shape matched")
	}
}

// Two holes, the first neither counted nor copied (Ollama's created_at).
func TestApplyTwoHoles(t *testing.T) {
	b, err := Append(nil,
		[][]byte{[]byte(`{"model":"m","created_at":"`), []byte(`","message":{"role":"assistant","content":"`), []byte(`"},"done":false}`)},
		[]byte{0, FlagNonEmpty | FlagCounted},
		[]Part{Lit([]byte(`<`)), Hole(1), Lit([]byte(`>`))})
	if err != nil {
		t.Fatal(err)
	}
	var s Shape
	if err := s.Parse(b); err != nil {
		t.Fatal(err)
	}
	out, n, ok := s.Apply(nil, []byte(`{"model":"m","created_at":"2026-12-03T12:00:00.1Z","message":{"role":"assistant","content":"hi\n"},"done":false}`))
	if !ok || n != 3 || string(out) != `<hi\n>` {
		t.Fatalf("%q %d %v", out, n, ok)
	}
	if _, _, ok := s.Apply(nil, []byte(`{"model":"m","created_at":"","message":{"role":"assistant","content":"hi"},"done":false}`)); !ok {
		t.Fatal("an empty hole without FlagNonEmpty did not match")
	}
	// A created_at that closes early and goes on with other fields.
	if _, _, ok := s.Apply(nil, []byte(`{"model":"m","created_at":"x","done":true,"y":"","message":{"role":"assistant","content":"hi"},"done":false}`)); ok {
		t.Fatal("matched another shape")
	}
}

// Clone makes a shape independent of the bytes it was parsed from.
func TestClone(t *testing.T) {
	b := vllmShape(t)
	var s Shape
	if err := s.Parse(b); err != nil {
		t.Fatal(err)
	}
	buf := s.Clone(nil)
	clear(b)
	out, _, ok := s.Apply(nil, []byte(`{"id":"c1","object":"chat.completion.chunk","created":5,"model":"m","choices":[{"index":0,"delta":{"content":"a"},"logprobs":null,"finish_reason":null}]}`))
	if !ok || string(out) != "data: {\"id\":\"g\",\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n" {
		t.Fatalf("after clone: %q %v", out, ok)
	}
	if s.Clone(buf); !s.Valid() {
		t.Fatal("clone of a clone")
	}
}

func TestParseRefuses(t *testing.T) {
	good := vllmShape(t)
	q := []byte(`"`)
	bad := map[string][]byte{
		"empty":           nil,
		"version":         append([]byte{2}, good[1:]...),
		"truncated":       good[:len(good)-1],
		"trailing":        append(append([]byte{}, good...), 0),
		"no holes":        {1, 0, 1, '"'},
		"hole count":      {1, MaxHoles + 1},
		"unknown flag":    mustAppendRaw([][]byte{q, q}, []byte{4}, []Part{Hole(0)}),
		"two counted":     mustAppendRaw([][]byte{q, q, q}, []byte{FlagCounted, FlagCounted}, []Part{Hole(0)}),
		"no quote before": mustAppendRaw([][]byte{[]byte("a"), q}, []byte{0}, []Part{Hole(0)}),
		"no quote after":  mustAppendRaw([][]byte{q, []byte("a")}, []byte{0}, []Part{Hole(0)}),
		"hole index":      mustAppendRaw([][]byte{q, q}, []byte{0}, []Part{Hole(1)}),
	}
	for name, b := range bad {
		var s Shape
		if err := s.Parse(b); err == nil || s.Valid() {
			t.Errorf("%s: parsed", name)
		}
		if _, _, ok := s.Apply(nil, []byte(`""`)); ok {
			t.Errorf("%s: a refused shape matched", name)
		}
	}
	if _, err := Append(nil, [][]byte{q, q, q}, []byte{FlagCounted, FlagCounted}, []Part{Hole(0)}); err == nil {
		t.Error("Append wrote a shape Parse refuses")
	}
}

// mustAppendRaw encodes a shape without Append's check.
func mustAppendRaw(in [][]byte, flags []byte, out []Part) []byte {
	b, err := Append(nil, in, flags, out)
	if err == nil {
		return b
	}
	// Append refused it (as it should); write it by hand.
	b = []byte{version, byte(len(in) - 1)}
	for _, l := range in {
		b = append(append(b, byte(len(l))), l...)
	}
	b = append(b, flags...)
	b = append(b, byte(len(out)))
	for _, p := range out {
		if p.Hole < 0 {
			b = append(append(append(b, 0), byte(len(p.Lit))), p.Lit...)
		} else {
			b = append(b, byte(p.Hole+1))
		}
	}
	return b
}

// A hole the shape accepts is what jsonw writes for its decoded value,
// and dec is that value's length: copying the hole is what the plugin's
// decode and re-encode would write.
func FuzzCanonical(f *testing.F) {
	for _, s := range []string{"hello", `a\nb`, `\"`, `\\`, "\xe2\x80\xa8", `\u0041`, "\x00", "é", `\t\r`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		ev := append(append([]byte{}, body...), '"')
		end, dec, ok := canonical(ev, 0)
		if !ok || end != len(body) {
			return
		}
		var v string
		if err := json.Unmarshal(append(append([]byte{'"'}, body...), '"'), &v); err != nil {
			t.Fatalf("%q accepted, not JSON: %v", body, err)
		}
		if dec != len(v) {
			t.Fatalf("%q: dec %d, decoded length %d", body, dec, len(v))
		}
		if w := jsonw.String(nil, v); string(w[1:len(w)-1]) != string(body) {
			t.Fatalf("%q accepted, jsonw writes %q", body, w)
		}
	})
}

// Parse refuses or accepts anything without panicking, and an accepted
// shape applies to anything without panicking.
func FuzzParseApply(f *testing.F) {
	f.Add(vllmShape(f), []byte(`{"id":"c1","object":"chat.completion.chunk","created":5,"model":"m","choices":[{"index":0,"delta":{"content":"a"},"logprobs":null,"finish_reason":null}]}`))
	f.Add([]byte{1, 1, 1, '"', 1, '"', 1, 1, 1}, []byte(`"x"`))
	f.Fuzz(func(t *testing.T, b, ev []byte) {
		var s Shape
		if s.Parse(b) != nil {
			return
		}
		s.Apply(nil, ev)
	})
}

func BenchmarkApply(b *testing.B) {
	var s Shape
	if err := s.Parse(vllmShape(b)); err != nil {
		b.Fatal(err)
	}
	ev := []byte(`{"id":"c1","object":"chat.completion.chunk","created":5,"model":"m","choices":[{"index":0,"delta":{"content":" gateway"},"logprobs":null,"finish_reason":null}]}`)
	dst := make([]byte, 0, 512)
	b.ReportAllocs()
	for b.Loop() {
		dst, _, _ = s.Apply(dst[:0], ev)
	}
}
