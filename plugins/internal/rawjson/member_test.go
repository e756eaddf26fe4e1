package rawjson

import (
	"testing"

	"github.com/valyala/fastjson"
)

func TestFindMember(t *testing.T) {
	for _, tc := range []struct {
		body string
		off  int // -1: absent
		ok   bool
	}{
		{`{"embeddings":[[1]]}`, 14, true},
		{` { "a" : 1 , "embeddings" :  [1] }`, 29, true},
		{`{"model":"embeddings","embeddings":[]}`, 35, true},
		{`{"a":"x\"embeddings\":1","embeddings":2}`, 38, true},
		{`{"a":"\\","embeddings":2}`, 23, true},
		{`{"a":{"embeddings":[1]},"b":[{"c":"]"}],"embeddings":3}`, 53, true},
		{`{"a":true,"b":null,"c":-1.5e3,"embeddings":0}`, 43, true},
		{`{"a":1}`, -1, true},
		{`{}`, -1, true},
		{`[]`, -1, false},
		{``, -1, false},
		{`{"a"}`, -1, false},
		{`{"a":"x`, -1, false},
		{`{"a":[1,2`, -1, false},
		{`{"a":1 "embeddings":2}`, -1, false},
		{`{"a":,"embeddings":2}`, -1, false},
		{`{a:1}`, -1, false},
	} {
		off, ok := FindMember([]byte(tc.body), "embeddings")
		if off != tc.off || ok != tc.ok {
			t.Errorf("%s: %d %v, want %d %v", tc.body, off, ok, tc.off, tc.ok)
		}
	}
}

// FuzzFindMember: on any bytes FindMember does not panic, and on a valid
// object whose keys are unescaped it finds the member fastjson finds
// (fastjson's Get also takes the first of duplicate keys).
func FuzzFindMember(f *testing.F) {
	for _, s := range []string{`{"embeddings":[[1]]}`, `{"a":"\\\"","embeddings":1}`, `{"a":{"embeddings":2}}`, `{"embeddings":"x","embeddings":1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		off, ok := FindMember(b, "embeddings")
		var p fastjson.Parser
		v, err := p.ParseBytes(b)
		if err != nil || v.Type() != fastjson.TypeObject {
			return
		}
		if !ok {
			t.Fatalf("%q: valid object read as malformed", b)
		}
		want := v.Get("embeddings")
		escaped := false
		v.GetObject().Visit(func(k []byte, _ *fastjson.Value) {
			if string(k) != "embeddings" && len(k) == len("embeddings") {
				escaped = true // perhaps the key written with escapes: not compared
			}
		})
		if escaped {
			return
		}
		if (want == nil) != (off < 0) {
			t.Fatalf("%q: offset %d, fastjson value %v", b, off, want)
		}
		if want != nil {
			var p2 fastjson.Parser
			rest := b[off:]
			got, err := p2.ParseBytes(rest[:skipValue(rest, 0)])
			if err != nil || got.String() != want.String() {
				t.Fatalf("%q: value at %d is %q, fastjson's %s", b, off, rest, want)
			}
		}
	})
}
