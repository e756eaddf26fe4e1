package fakellm

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/valyala/fastjson"
)

func TestAppendJSONString(t *testing.T) {
	cases := []string{
		"", "plain", `quote " backslash \ slash /`, "nl\n cr\r tab\t bs\b ff\f nul\x00 esc\x1b del\x7f",
		"ünïcødé 日本語 🎉", "line\u2028sep\u2029", "bad utf8 \xff\xfe end", "\xc3", "<script>&amp;</script>",
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 500 {
		b := make([]byte, rng.IntN(40))
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		cases = append(cases, string(b))
	}
	for _, s := range cases {
		out := appendJSONString(nil, s)
		if !utf8.Valid(out) {
			t.Fatalf("%q: output is not UTF-8: %q", s, out)
		}
		var got string
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("%q: invalid JSON %q: %v", s, out, err)
		}
		// valid UTF-8 round-trips exactly; each invalid byte becomes U+FFFD
		var want strings.Builder
		for i := 0; i < len(s); {
			r, size := utf8.DecodeRuneInString(s[i:])
			want.WriteRune(r)
			i += size
		}
		if got != want.String() {
			t.Fatalf("%q: round trip gave %q", s, got)
		}
		if err := fastjson.ValidateBytes(out); err != nil {
			t.Fatalf("%q: fastjson rejects %q: %v", s, out, err)
		}
	}
}

func TestFloats(t *testing.T) {
	for _, f := range []float64{0, 1, -2, 0.5, 1e-7, 123456789, 3.14} {
		b := appendPyFloat(nil, f)
		var back float64
		if err := json.Unmarshal(b, &back); err != nil || back != f {
			t.Errorf("appendPyFloat(%v) = %s", f, b)
		}
		if !strings.ContainsAny(string(b), ".e") {
			t.Errorf("appendPyFloat(%v) = %s lacks a '.'", f, b)
		}
	}
	if got := string(appendGoFloat32(nil, 0.1)); got != "0.1" {
		t.Errorf("appendGoFloat32(0.1) = %s", got)
	}
}

func TestChopPieces(t *testing.T) {
	for _, s := range []string{`{}`, `{"a":1}`, `{"city":"Zürich","n":[1,2,3]}`, strings.Repeat("é", 10), "x"} {
		for _, atLeast := range []int{1, 3} {
			pieces := chopPieces(s, 4, atLeast)
			if strings.Join(pieces, "") != s {
				t.Errorf("chop(%q) = %q does not rebuild", s, pieces)
			}
			for _, p := range pieces {
				if p == "" || !utf8.ValidString(p) {
					t.Errorf("chop(%q): bad piece %q", s, p)
				}
			}
			if want := min(atLeast, utf8.RuneCountInString(s)); len(pieces) < want {
				t.Errorf("chop(%q, min %d) = %d pieces", s, atLeast, len(pieces))
			}
		}
	}
}

func TestCountWords(t *testing.T) {
	for s, n := range map[string]int{"": 0, "  ": 0, "a": 1, " a  b\tc\nd ": 4, "héllo wörld": 2} {
		if got := countWords(s); got != n {
			t.Errorf("countWords(%q) = %d, want %d", s, got, n)
		}
	}
}

func TestTextDeterministic(t *testing.T) {
	a := textOf(textSeed("m", "hello"), 10)
	if a != textOf(textSeed("m", "hello"), 10) {
		t.Fatal("not deterministic")
	}
	if a == textOf(textSeed("m", "hello!"), 10) || a == textOf(textSeed("m2", "hello"), 10) {
		t.Error("different prompts or models give the same text")
	}
	toks := appendTextTokens(nil, textSeed("m", "hello"), 10)
	if strings.Join(toks, "") != a || countWords(a) != 10 || !strings.HasSuffix(a, ".") {
		t.Errorf("tokens %q vs text %q", toks, a)
	}
}

func TestJSONFromSchema(t *testing.T) {
	schemas := []string{
		`{}`,
		`{"type":"object"}`,
		`{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer"}}}`,
		`{"type":"object","required":["x"]}`,
		`{"type":"object","properties":{"e":{"enum":[3,"x"]},"c":{"const":{"k":[1]}},"o":{"oneOf":[{"type":"null"},{"type":"number","minimum":5,"maximum":6}]}},"required":["e","c","o"]}`,
		`{"type":"object","properties":{"list":{"type":"array","minItems":2,"items":{"type":"object","properties":{"id":{"type":"string","format":"uuid"}},"required":["id"]}}},"required":["list"]}`,
		`{"type":"object","properties":{"self":{"$ref":"#"}},"required":["self"]}`,
		`{"type":"object","properties":{"a":{"$ref":"#"},"b":{"$ref":"#"},"c":{"$ref":"#"},"d":{"$ref":"#"},"e":{"$ref":"#"}},"required":["a","b","c","d","e"]}`,
		`{"type":"object","properties":{"weird \"key\"\n":{"type":"boolean"}},"required":["weird \"key\"\n"]}`,
	}
	for _, src := range schemas {
		schema := fastjson.MustParse(src)
		out := jsonFromSchema(schema, 7)
		if len(out) > 2*maxSchemaOutput {
			t.Errorf("schema %s: %d bytes of output", src, len(out))
		}
		var v map[string]any
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Errorf("schema %s: invalid JSON %q: %v", src, out, err)
			continue
		}
		if out != jsonFromSchema(schema, 7) {
			t.Errorf("schema %s: not deterministic", src)
		}
	}
	v := map[string]any{}
	_ = json.Unmarshal([]byte(jsonFromSchema(fastjson.MustParse(schemas[4]), 1)), &v)
	if v["e"] != 3.0 || v["o"].(float64) < 5 || v["o"].(float64) > 6 {
		t.Errorf("enum/oneOf = %v", v)
	}
}
