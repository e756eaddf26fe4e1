package jsonscan

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// fuzzSpec holds short paths, some of which random inputs hit.
var fuzzSpec = MustSpec("a", "b", "a.b", "a.b.c", "a.b.c.d", "b.a", "model", "stream_options.include_usage",
	"é", "\u00e9.x", "c.c.c", "max_tokens", "0", "a.a")

func FuzzScan(f *testing.F) {
	for _, bb := range benchBodies[:1] {
		f.Add(bb.body())
	}
	for _, s := range []string{
		`{}`, `[]`, `null`, ` {"a":1} `, `{"a":{"b":{"c":{"d":[1,{"e":2}]}}}}`, `{"a":{"b":1},"a":2}`,
		`{"a":{"b":1,"b":{"c":true}},"b":{"a":null}}`, `{"\u0061":{"\u0062":"\ud83d\ude00\ud800"}}`,
		`{"model":"qwen\u0000stream","max_tokens":1e3,"stream_options":{"include_usage":false}}`,
		`{"a":01}`, `{"a":1.}`, `{"a":-0,"b":1E+2}`, `{"a":"\x"}`, `{"é":[],"\u00e9":{"x":"y"}}`,
		"{\"a\":\"\xff\xfe\"}", "{\"\xff\":1}", `{"c":{"c":{"c":{}}}}`, `{"0":"\/\b\f\n\r\t\"\\"}`,
		`{"a":[[[[[[[[[[]]]]]]]]]]}`, `{"a":{"a":{"a":{"a":{}}}}}`, "{\"a\":\t\n\r 1 }",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var res Result
		err := Scan(data, fuzzSpec, Limits{}, &res)
		var e *Error
		if err != nil {
			if !errors.As(err, &e) || e.Offset < 0 || e.Offset > len(data) || len(err.Error()) > 150 || res.Found != 0 {
				t.Fatalf("%q: bad error %#v", data, err)
			}
		}
		valid := json.Valid(data)
		trimmed := bytes.TrimLeft(data, " \t\r\n")
		if len(trimmed) == 0 || trimmed[0] != '{' {
			switch {
			case err == nil:
				t.Fatalf("%q: accepted", data)
			case valid && e.Kind != ErrNotObject:
				t.Fatalf("%q: %v, want ErrNotObject", data, err)
			}
			return
		}
		if valid != (err == nil) {
			t.Fatalf("%q: Scan: %v; json.Valid: %v", data, err, valid)
		}
		if err != nil {
			if e.Kind != ErrSyntax {
				t.Fatalf("%q: %v, want a syntax error", data, err)
			}
			return
		}
		checkCounts(t, data, &res)
		checkLimits(t, data, &res)
		checkValues(t, data, &res)
	})
}

// checkCounts compares Depth and Count with encoding/json's tokens.
func checkCounts(t *testing.T, data []byte, res *Result) {
	dec := json.NewDecoder(bytes.NewReader(data))
	type frame struct{ obj, wantKey bool }
	var st []frame
	depth, count := 0, 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return // encoding/json's own depth limit
		}
		top := len(st) - 1
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			st = st[:top]
			continue
		}
		if top >= 0 && st[top].obj {
			if st[top].wantKey {
				st[top].wantKey = false
				continue
			}
			st[top].wantKey = true
		}
		count++
		if d, ok := tok.(json.Delim); ok {
			st = append(st, frame{obj: d == '{', wantKey: true})
			depth = max(depth, len(st))
		}
	}
	if res.Depth != depth || res.Count != count {
		t.Fatalf("%q: depth %d count %d, want %d %d", data, res.Depth, res.Count, depth, count)
	}
}

// checkLimits checks that the limits are exact.
func checkLimits(t *testing.T, data []byte, res *Result) {
	var r Result
	if err := Scan(data, fuzzSpec, Limits{MaxDepth: res.Depth, MaxValues: res.Count}, &r); err != nil ||
		r.Found != res.Found || r.Values != res.Values {
		t.Fatalf("%q: at the limits: %v", data, err)
	}
	var e *Error
	if res.Depth > 1 {
		if err := Scan(data, fuzzSpec, Limits{MaxDepth: res.Depth - 1}, &r); !errors.As(err, &e) || e.Kind != ErrTooDeep {
			t.Fatalf("%q: depth limit %d: %v", data, res.Depth-1, err)
		}
	}
	if res.Count > 1 {
		if err := Scan(data, fuzzSpec, Limits{MaxValues: res.Count - 1}, &r); !errors.As(err, &e) || e.Kind != ErrTooMany {
			t.Fatalf("%q: value limit %d: %v", data, res.Count-1, err)
		}
	}
}

// checkValues compares the values found with those encoding/json decodes
// at the same paths.
func checkValues(t *testing.T, data []byte, res *Result) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return // encoding/json's own depth limit
	}
	for i := range fuzzSpec.Len() {
		path := fuzzSpec.Path(i)
		want, wok := doc, true
		for k := range strings.SplitSeq(path, ".") {
			m, ok := want.(map[string]any)
			if !ok {
				wok = false
				break
			}
			if want, ok = m[k]; !ok {
				wok = false
				break
			}
		}
		v, ok := res.Get(i)
		if ok != wok {
			t.Fatalf("%q: %s found %v, want %v", data, path, ok, wok)
		}
		if !ok {
			continue
		}
		raw := v.Raw(data)
		if v.Start < 0 || v.End > len(data) || !json.Valid(raw) {
			t.Fatalf("%q: %s: bad range %+v", data, path, v)
		}
		kindOK := false
		switch w := want.(type) {
		case nil:
			kindOK = v.Kind == Null
		case bool:
			b, bok := v.Bool()
			kindOK = bok && b == w && (v.Kind == True) == w
		case json.Number:
			kindOK = v.Kind == Number && string(raw) == string(w)
			n, nok := v.Int(data)
			wn, wnok := refInt(w)
			if n != wn || nok != wnok {
				t.Fatalf("%q: %s: Int = %d, %v; want %d, %v", data, path, n, nok, wn, wnok)
			}
		case string:
			s, err := AppendString(nil, data, v)
			kindOK = v.Kind == String && err == nil && string(s) == w && utf8.Valid(s) &&
				v.Escaped == (bytes.IndexByte(raw, '\\') >= 0)
		case map[string]any, []any:
			k := Object
			if _, isArr := w.([]any); isArr {
				k = Array
			}
			d := json.NewDecoder(bytes.NewReader(raw))
			d.UseNumber()
			var got any
			kindOK = v.Kind == k && d.Decode(&got) == nil && reflect.DeepEqual(got, w)
		}
		if !kindOK {
			t.Fatalf("%q: %s = %+v %q, want %#v", data, path, v, raw, want)
		}
	}
}

// refInt is the plugins' reading of an integer.
func refInt(n json.Number) (int64, bool) {
	if i, err := n.Int64(); err == nil {
		return i, true
	}
	f, err := n.Float64()
	if err != nil || f != math.Trunc(f) || f < -(1<<63) || f >= 1<<63 {
		return 0, false
	}
	return int64(f), true
}
