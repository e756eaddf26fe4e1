// Package jsonr reads JSON documents parsed by github.com/valyala/fastjson
// with typed getters that collect the first error together with the path
// of the field that caused it:
//
//	var p fastjson.Parser
//	v, err := p.ParseBytes(body)
//	if err != nil {
//		return sdk.BadInput("invalid JSON: " + err.Error())
//	}
//	r := jsonr.New(v)
//	req.Model = r.String("model")                  // required
//	if n, ok := r.OptInt("max_tokens", 1, 1<<20); ok {
//		req.MaxTokens = n                           // optional, in range
//	}
//	msgs := r.Array("messages")
//	for i, m := range msgs.All() {
//		role := m.String("role")
//		url := m.Array("content").At(1).Object("image_url").String("url")
//		_, _, _ = i, role, url
//	}
//	if err := r.Err(); err != nil {
//		return sdk.BadInput(err.Error()) // "messages[3].content[1].image_url: expected object, got number"
//	}
//
// Plugin code reads on without checking each step: after an error, or
// under an absent optional field, getters return zero values. Err reports
// the first error only, which is what a client needs to fix its request.
//
// Required getters (String, Int, Object, ...) record "path: required" when
// the key is absent; optional ones (OptString, OptInt, OptObject, ...)
// treat an absent key and a JSON null alike as not given. A present value
// of the wrong type is an error either way ("expected string, got
// number").
//
// Nothing on the happy path allocates except New's Reader (declare a
// Reader and Reset it per document to avoid even that) and the strings
// String copies out of the parser's memory (Bytes and AsBytes do not
// copy). A Value carries its
// container and its key or index, never a path string: the path is built
// only when an error is recorded, by finding the container under the root
// (fastjson shares one node for every true, false and null, so the key or
// index of the value itself must travel with it).
package jsonr

import (
	"unsafe"

	"github.com/valyala/fastjson"
)

// Reader holds the root of a document and the first error found reading
// it. A Reader may be reused for another document with Reset; it is not
// safe for concurrent use (neither is the fastjson.Value it reads).
type Reader struct {
	root *fastjson.Value
	err  *Error
}

// New returns the root of v, read through a new Reader. Every Value
// derived from it records its errors there; Err on any of them reports
// the first one.
func New(v *fastjson.Value) Value {
	r := &Reader{root: v}
	return r.Root()
}

// Reset starts reading v with no error recorded, and returns its root.
// A Reader declared as a variable and Reset for each document never
// allocates.
func (r *Reader) Reset(v *fastjson.Value) Value {
	r.root, r.err = v, nil
	return r.Root()
}

// Root returns the root value.
func (r *Reader) Root() Value { return Value{v: r.root, idx: -1, r: r} }

// Err returns the first error recorded (an *Error), or nil.
func (r *Reader) Err() error {
	if r.err == nil {
		return nil
	}
	return r.err
}

// Value is one JSON value in a document, or an absent one (a missing key,
// an index out of range, anything under an absent value). It is small and
// meant to be passed by value.
type Value struct {
	v      *fastjson.Value
	parent *fastjson.Value // the container v was read from; nil at the root
	key    string          // v's key in parent, when idx < 0
	idx    int             // v's index in parent, or -1
	r      *Reader
}

// Err returns the first error recorded by any value of the document.
func (v Value) Err() error {
	if v.r == nil {
		return nil
	}
	return v.r.Err()
}

// Exists reports whether the value is present (null is present).
func (v Value) Exists() bool { return v.v != nil }

// IsNull reports whether the value is a JSON null.
func (v Value) IsNull() bool { return v.v != nil && v.v.Type() == fastjson.TypeNull }

// Type returns the value's JSON type; an absent value reports TypeNull.
func (v Value) Type() fastjson.Type {
	if v.v == nil {
		return fastjson.TypeNull
	}
	return v.v.Type()
}

// JSON returns the underlying fastjson value (nil when absent), for what
// this package does not cover.
func (v Value) JSON() *fastjson.Value { return v.v }

// child returns the value under key in v, or an absent value that still
// knows its key (so Fail can name it).
func (v Value) child(key string, c *fastjson.Value) Value {
	return Value{v: c, parent: v.v, key: key, idx: -1, r: v.r}
}

// lookup is the fast path of the getters: the value under key when v is
// an object and no error is recorded, else nil (the caller then takes the
// slow path, which records errors).
func (v Value) lookup(key string) *fastjson.Value {
	if v.v == nil || v.r.err != nil || v.v.Type() != fastjson.TypeObject {
		return nil
	}
	o, _ := v.v.Object()
	return o.Get(key)
}

// field looks key up in v, which must be an object when present.
func (v Value) field(key string) (Value, bool) {
	if v.v == nil || v.r.err != nil {
		return Value{parent: v.v, key: key, idx: -1, r: v.r}, false
	}
	if v.v.Type() != fastjson.TypeObject {
		v.typeError("object")
		return Value{parent: v.v, key: key, idx: -1, r: v.r}, false
	}
	o, _ := v.v.Object()
	return v.child(key, o.Get(key)), true
}

// Get returns the value of a required key: when v is an object without
// key, it records "path.key: required". A null value is returned as is
// (its typed getters then report "expected ..., got null").
func (v Value) Get(key string) Value {
	c, ok := v.field(key)
	if ok && c.v == nil {
		c.fail("required")
	}
	return c
}

// Opt returns the value of an optional key: absent when v has no such key
// or its value is null.
func (v Value) Opt(key string) Value {
	c, _ := v.field(key)
	if c.v != nil && c.v.Type() == fastjson.TypeNull {
		c.v = nil
	}
	return c
}

// Fail records msg as an error at v's path (when no error is recorded
// yet), for checks this package does not make: an unknown enum value, a
// mutually exclusive field. It works on an absent value too, naming the
// key that was looked up.
func (v Value) Fail(msg string) { v.fail(msg) }

// Visit calls f for each member of an object, in document order; a
// present non-object records an error. f must not keep key.
func (v Value) Visit(f func(key []byte, v Value)) {
	if v.v == nil || v.r.err != nil {
		return
	}
	if v.v.Type() != fastjson.TypeObject {
		v.typeError("object")
		return
	}
	o, _ := v.v.Object()
	o.Visit(func(key []byte, c *fastjson.Value) {
		// fastjson keeps keys as strings and hands out their bytes: the
		// string is the parser's, alive as long as the value.
		f(key, Value{v: c, parent: v.v, idx: -1, key: unsafe.String(unsafe.SliceData(key), len(key)), r: v.r})
	})
}
