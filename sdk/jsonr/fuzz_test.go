package jsonr

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/valyala/fastjson"
)

// FuzzRead reads a fixed schema from arbitrary JSON and checks the reader
// against encoding/json: no panic; without an error, the values read are
// the document's; with one, its path names a place in the document.
func FuzzRead(f *testing.F) {
	for _, s := range []string{
		chat,
		`{"model":"m","messages":[{"role":"user","content":"x"}]}`,
		`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":5}}]}]}`,
		`{"model":1}`, `[]`, `null`, `{"model":"m","messages":[],"n":1e3,"stop":[true,null]}`,
		`{"model":"m","messages":[{"role":null}],"temperature":1e999}`, `{"a b":{"c":"d"},"model":"\u00e9"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		var p fastjson.Parser
		v, err := p.ParseBytes(doc)
		if err != nil {
			return
		}
		var want any
		if json.Unmarshal(doc, &want) != nil || !comparable(doc, v) {
			return
		}
		r := New(v)
		got := readSchema(r)
		if err := r.Err(); err != nil {
			e := err.(*Error)
			if e.Msg == "" || strings.Contains(e.Path, "..") {
				t.Fatalf("malformed error %q", err)
			}
			return
		}
		if exp, ok := expectSchema(want); !ok || exp != got {
			t.Fatalf("read %+v without error, encoding/json gives %+v (ok %v)", got, exp, ok)
		}
	})
}

// comparable reports whether encoding/json and fastjson must agree on
// doc: they part on invalid UTF-8 and lone surrogates (replaced by one,
// kept by the other) and on duplicate keys (last wins, first wins).
func comparable(doc []byte, v *fastjson.Value) bool {
	if !utf8.Valid(doc) || strings.Contains(strings.ToLower(string(doc)), `\ud`) {
		return false
	}
	return !dupKeys(v)
}

func dupKeys(v *fastjson.Value) bool {
	switch v.Type() {
	case fastjson.TypeArray:
		a, _ := v.Array()
		for _, c := range a {
			if dupKeys(c) {
				return true
			}
		}
	case fastjson.TypeObject:
		o, _ := v.Object()
		seen := map[string]bool{}
		dup := false
		o.Visit(func(k []byte, c *fastjson.Value) {
			dup = dup || seen[string(k)] || dupKeys(c)
			seen[string(k)] = true
		})
		return dup
	}
	return false
}

type schema struct {
	Model string
	N     int
	Roles string // joined
	Texts string // joined
}

func readSchema(r Value) schema {
	var s schema
	s.Model = r.String("model")
	s.N, _ = r.OptInt("n", 1, 1000)
	for _, m := range r.Array("messages").All() {
		s.Roles += m.String("role") + ","
		c := m.Opt("content")
		if c.Type() == fastjson.TypeString {
			s.Texts += c.AsString() + ","
			continue
		}
		for _, part := range c.AsArray().All() {
			if t, _ := part.OptString("text"); t != "" {
				s.Texts += t + ","
			}
		}
	}
	return s
}

// expectSchema is readSchema over encoding/json's value; ok is false when
// the document breaks the schema.
func expectSchema(doc any) (s schema, ok bool) {
	root, ok := doc.(map[string]any)
	if !ok {
		return s, false
	}
	if s.Model, ok = root["model"].(string); !ok {
		return s, false
	}
	if n, present := root["n"]; present && n != nil {
		f, isNum := n.(float64)
		if !isNum || f != math.Trunc(f) || f < 1 || f > 1000 {
			return s, false
		}
		s.N = int(f)
	}
	msgs, ok := root["messages"].([]any)
	if !ok {
		return s, false
	}
	for _, m := range msgs {
		mo, ok := m.(map[string]any)
		if !ok {
			return s, false
		}
		role, ok := mo["role"].(string)
		if !ok {
			return s, false
		}
		s.Roles += role + ","
		switch c := mo["content"].(type) {
		case string:
			s.Texts += c + ","
		case []any:
			for _, part := range c {
				po, ok := part.(map[string]any)
				if !ok {
					return s, false
				}
				if t, present := po["text"]; present && t != nil {
					ts, ok := t.(string)
					if !ok {
						return s, false
					}
					if ts != "" {
						s.Texts += ts + ","
					}
				}
			}
		case nil:
		default:
			return s, false
		}
	}
	return s, true
}
