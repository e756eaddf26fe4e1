package pathtmpl

import (
	"errors"
	"testing"
)

func TestTemplate_Match(t *testing.T) {
	for _, tc := range []struct {
		tmpl, path string
		want       []string // captures; nil: no match
	}{
		{"/v1beta/models/{model}:generateContent", "/v1beta/models/gemini-2.0-flash:generateContent", []string{"gemini-2.0-flash"}},
		{"/v1/models/{model}:generateContent", "/v1/models/openai/gpt-oss-120b:generateContent", []string{"openai/gpt-oss-120b"}},
		{"/v1/models/{model}:generateContent", "/v1/models/llama3.2:3b:generateContent", []string{"llama3.2:3b"}},
		{"/v1/models/{model}:generateContent", "/v1/models/:generateContent", nil},
		{"/v1/models/{model}:generateContent", "/v1/models/x:streamGenerateContent", nil},
		{"/v1beta/models/{model}", "/v1beta/models/llama3.2:3b", []string{"llama3.2:3b"}},
		{"/v1beta/models/{model}", "/v1beta/models/", nil},
		{"/v1beta/models/{model}", "/v1beta/model/x", nil},
		{"/openai/deployments/{deployment}/chat/completions", "/openai/deployments/gpt4/chat/completions", []string{"gpt4"}},
		{"/a/{x}/b/{y}/c", "/a/1/b/2/3/c", []string{"1", "2/3"}},
		{"/a/{x}/b/{y}/c", "/a//b/2/c", nil},
		{"/a/{x}/b/{y}/c", "/a/1/b//c", nil},
		{"/v1/models", "/v1/models", []string{}},
		{"/v1/models", "/v1/models/", nil},
	} {
		tp, err := Parse(tc.tmpl)
		if err != nil {
			t.Fatalf("%s: %v", tc.tmpl, err)
		}
		var c Captures
		ok := tp.Match([]byte(tc.path), &c)
		if ok != (tc.want != nil) {
			t.Fatalf("%s ~ %s: match %v, want %v", tc.tmpl, tc.path, ok, tc.want != nil)
		}
		for i, w := range tc.want {
			if got := tc.path[c[i].Start:c[i].End]; got != w {
				t.Fatalf("%s ~ %s: capture %d %q, want %q", tc.tmpl, tc.path, i, got, w)
			}
		}
	}
}

func TestParse_Errors(t *testing.T) {
	for _, s := range []string{"v1/x", "/a/{", "/a/}", "/a/{}", "/a/{x}{y}", "/a/{x}/{x}", "/a/{x-y}", "/{a}/{b}/{c}/{d}/{e}"} {
		if _, err := Parse(s); !errors.Is(err, ErrSyntax) {
			t.Fatalf("%q: %v", s, err)
		}
	}
}

func TestOverlap(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"/v1/models", "/v1/models", true},
		{"/v1/models", "/v1/chat", false},
		{"/v1/models/{m}", "/v1/models", false},
		{"/v1/models/{m}", "/v1/models/x", true},
		{"/v1/models/{m}:generateContent", "/v1/models/{n}", true},
		{"/v1/models/{m}:generateContent", "/v1/models/{n}:countTokens", false},
		{"/v1beta/models/{m}:generateContent", "/v1/models/{n}:generateContent", false},
		{"/openai/deployments/{d}/chat/completions", "/openai/deployments/{d}/embeddings", false},
	} {
		a, _ := Parse(tc.a)
		b, _ := Parse(tc.b)
		if got := Overlap(a, b); got != tc.want || Overlap(b, a) != tc.want {
			t.Fatalf("Overlap(%s, %s) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

// Match runs on every request routed by a template: no allocation.
func TestTemplate_MatchNoAllocs(t *testing.T) {
	tp, _ := Parse("/v1/models/{model}:generateContent")
	p := []byte("/v1/models/openai/gpt-oss-120b:generateContent")
	var c Captures
	if n := testing.AllocsPerRun(100, func() { tp.Match(p, &c) }); n != 0 {
		t.Fatalf("Match allocates %v times", n)
	}
}
