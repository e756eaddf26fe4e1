// Package jsonread holds the typed fastjson readers the first-party
// translators share. Each reader returns ok=false when a value has the
// wrong type; the caller turns that into an error naming the field, so
// paths like "messages[2].content[0].text" are built only on the error
// path. (Third-party plugins have sdk/jsonr, which builds the paths
// itself.)
package jsonread

import (
	"math"
	"strconv"
	"strings"

	"github.com/valyala/fastjson"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// Str reads a string.
func Str(v *fastjson.Value) (string, bool) {
	if v.Type() != fastjson.TypeString {
		return "", false
	}
	b, _ := v.StringBytes()
	return string(b), true
}

// IsStr reports whether v is the string s, without allocating.
func IsStr(v *fastjson.Value, s string) bool {
	if v.Type() != fastjson.TypeString {
		return false
	}
	b, _ := v.StringBytes()
	return string(b) == s
}

// Bool reads a boolean.
func Bool(v *fastjson.Value) (bool, bool) {
	switch v.Type() {
	case fastjson.TypeTrue:
		return true, true
	case fastjson.TypeFalse:
		return false, true
	}
	return false, false
}

// Float reads a finite number.
func Float(v *fastjson.Value) (float64, bool) {
	if v.Type() != fastjson.TypeNumber {
		return 0, false
	}
	f, err := v.Float64()
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

// Int reads an integral number; 1e3 and 2.0 are accepted, 1.5 is not.
func Int(v *fastjson.Value) (int64, bool) {
	if v.Type() != fastjson.TypeNumber {
		return 0, false
	}
	if n, err := v.Int64(); err == nil {
		return n, true
	}
	f, ok := Float(v)
	if !ok || f != math.Trunc(f) || f < -(1<<63) || f >= 1<<63 {
		return 0, false
	}
	return int64(f), true
}

// MaxInt32 bounds token counts and indexes so they fit an int on every
// platform (wasm included) with room to spare.
const MaxInt32 = 1<<31 - 1

// ErrType is the client's error for a field of the wrong type.
func ErrType(field, what string) error { return sdk.BadInput(field + " must be " + what) }

// ErrRequired is the client's error for a missing field.
func ErrRequired(field string) error { return sdk.BadInput(field + " is required") }

// At builds "base[i]" for error messages.
func At(base string, i int) string { return base + "[" + strconv.Itoa(i) + "]" }

// MsgField builds "messages[i].field".
func MsgField(i int, field string) string { return At("messages", i) + "." + field }

// Visit calls f for each field of an object, passing nil for JSON null so
// a null reads like an absent field (the official clients send nulls for
// unset options). When a key repeats, the last one wins, as in Python's
// and Go's JSON decoders.
func Visit(o *fastjson.Object, f func(k []byte, v *fastjson.Value)) {
	o.Visit(func(k []byte, v *fastjson.Value) {
		if v.Type() == fastjson.TypeNull {
			v = nil
		}
		f(k, v)
	})
}

// Object validates and parses a request body as one JSON object with p.
// fastjson's parser is lenient (bad escapes, odd numbers); its validator
// is strict and cheap, so it runs first.
func Object(p *fastjson.Parser, body []byte) (*fastjson.Object, error) {
	if err := fastjson.ValidateBytes(body); err != nil {
		return nil, sdk.BadInput("request body is not valid JSON: " + err.Error())
	}
	v, err := p.ParseBytes(body)
	if err != nil {
		return nil, sdk.BadInput("request body is not valid JSON: " + err.Error())
	}
	o, err := v.Object()
	if err != nil {
		return nil, sdk.BadInput("request body must be a JSON object")
	}
	return o, nil
}

// Model reads the required, non-empty model name.
func Model(v *fastjson.Value) (string, error) {
	if v == nil {
		return "", ErrRequired("model")
	}
	s, ok := Str(v)
	if !ok {
		return "", ErrType("model", "a string")
	}
	if s == "" {
		return "", ErrRequired("model")
	}
	return s, nil
}

// ToolFields reads a function tool's optional description, its parameters'
// JSON schema (under schemaKey: "parameters" for OpenAI's dialects,
// "input_schema" for Anthropic's) and strict into t; path names the tool
// in errors. Null is absent.
func ToolFields(o *fastjson.Object, path, schemaKey string, t *canon.Tool) error {
	var ok bool
	if d := o.Get("description"); d != nil && d.Type() != fastjson.TypeNull {
		if t.Description, ok = Str(d); !ok {
			return ErrType(path+".description", "a string")
		}
	}
	if p := o.Get(schemaKey); p != nil && p.Type() != fastjson.TypeNull {
		if p.Type() != fastjson.TypeObject {
			return ErrType(path+"."+schemaKey, "an object")
		}
		t.Parameters = p.MarshalTo(nil)
	}
	if st := o.Get("strict"); st != nil && st.Type() != fastjson.TypeNull {
		if t.Strict, ok = Bool(st); !ok {
			return ErrType(path+".strict", "a boolean")
		}
	}
	return nil
}

// User reads OpenAI's end-user id: "user", or its successor
// "safety_identifier" when user is absent or empty (either may be nil).
func User(user, safety *fastjson.Value) (string, error) {
	id := ""
	for _, u := range [...]struct {
		v    *fastjson.Value
		name string
	}{{safety, "safety_identifier"}, {user, "user"}} {
		if u.v == nil {
			continue
		}
		s, ok := Str(u.v)
		if !ok {
			return "", ErrType(u.name, "a string")
		}
		if s != "" {
			id = s // user wins over its successor safety_identifier
		}
	}
	return id, nil
}

// DataURI splits "data:<media type>[;params];base64,<data>" (s starts
// with "data:", in any case), lowering the media type.
func DataURI(s string) (mediaType, data string, ok bool) {
	head, data, found := strings.Cut(s[len("data:"):], ",")
	if !found || data == "" || len(head) < len(";base64") ||
		!strings.EqualFold(head[len(head)-len(";base64"):], ";base64") {
		return "", "", false
	}
	mediaType, _, _ = strings.Cut(head[:len(head)-len(";base64")], ";")
	mediaType = strings.TrimSpace(mediaType)
	if mediaType == "" || !strings.Contains(mediaType, "/") {
		return "", "", false
	}
	return strings.ToLower(mediaType), data, true
}

// HasPrefixFold reports whether s starts with prefix, ignoring case.
func HasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}
