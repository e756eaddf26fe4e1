package jsonr

import (
	"math"
	"strconv"

	"github.com/valyala/fastjson"
)

// AsString returns the value as a string (a copy): "" when absent, an
// error when present and not a string.
func (v Value) AsString() string { return string(v.AsBytes()) }

// AsBytes is AsString without the copy: the bytes are the parser's and
// valid until it parses again.
func (v Value) AsBytes() []byte {
	if v.v == nil || v.r.err != nil {
		return nil
	}
	if v.v.Type() != fastjson.TypeString {
		v.typeError("string")
		return nil
	}
	b, _ := v.v.StringBytes()
	return b
}

// AsBool returns the value as a boolean.
func (v Value) AsBool() bool {
	if v.v == nil || v.r.err != nil {
		return false
	}
	switch v.v.Type() {
	case fastjson.TypeTrue:
		return true
	case fastjson.TypeFalse:
		return false
	}
	v.typeError("boolean")
	return false
}

// AsFloat returns the value as a finite number.
func (v Value) AsFloat() float64 {
	if v.v == nil || v.r.err != nil {
		return 0
	}
	if v.v.Type() != fastjson.TypeNumber {
		v.typeError("number")
		return 0
	}
	f, err := v.v.Float64()
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		v.fail("expected a finite number, got " + v.v.String())
		return 0
	}
	return f
}

// AsInt returns the value as an integer in [min, max]. Integral numbers
// written with a fraction or exponent (2.0, 1e3) are accepted; 1.5 is not.
func (v Value) AsInt(min, max int) int {
	if v.v == nil || v.r.err != nil {
		return 0
	}
	if v.v.Type() != fastjson.TypeNumber {
		v.typeError("integer")
		return 0
	}
	n, err := v.v.Int64()
	if err != nil {
		// Not plain digits: accept an integral float in int64's range.
		f, ferr := v.v.Float64()
		if ferr != nil || f != math.Trunc(f) || f < -(1<<63) || f >= 1<<63 {
			v.fail("expected an integer, got " + v.v.String())
			return 0
		}
		n = int64(f)
	}
	if n < int64(min) || n > int64(max) {
		v.fail("expected an integer from " + strconv.Itoa(min) + " to " + strconv.Itoa(max) + ", got " + v.v.String())
		return 0
	}
	return int(n)
}

// AsObject returns the value itself after checking it is an object: use
// it to check the type of a value found by Get, At or Visit.
func (v Value) AsObject() Value {
	if v.v == nil || v.r.err != nil {
		return Value{parent: v.parent, key: v.key, idx: v.idx, r: v.r}
	}
	if v.v.Type() != fastjson.TypeObject {
		v.typeError("object")
		return Value{parent: v.parent, key: v.key, idx: v.idx, r: v.r}
	}
	return v
}

// AsArray returns the value as an array (empty when absent).
func (v Value) AsArray() Array {
	if v.v == nil || v.r.err != nil {
		return Array{Value: Value{parent: v.parent, key: v.key, idx: v.idx, r: v.r}}
	}
	if v.v.Type() != fastjson.TypeArray {
		v.typeError("array")
		return Array{Value: Value{parent: v.parent, key: v.key, idx: v.idx, r: v.r}}
	}
	a, _ := v.v.Array()
	return Array{Value: v, items: a}
}

// AsRaw returns the value's JSON text, compact (appended to dst). An
// absent value appends nothing.
func (v Value) AsRaw(dst []byte) []byte {
	if v.v == nil || v.r.err != nil {
		return dst
	}
	return v.v.MarshalTo(dst)
}

// Required getters: an absent key is an error ("path.key: required").

// String returns the string under key.
func (v Value) String(key string) string { return string(v.Bytes(key)) }

// Bytes returns the string under key without copying it (see AsBytes).
func (v Value) Bytes(key string) []byte {
	if c := v.lookup(key); c != nil && c.Type() == fastjson.TypeString {
		b, _ := c.StringBytes()
		return b
	}
	return v.Get(key).AsBytes() // absent or mistyped: records the error
}

// Bool returns the boolean under key.
func (v Value) Bool(key string) bool {
	if c := v.lookup(key); c != nil {
		switch c.Type() {
		case fastjson.TypeTrue:
			return true
		case fastjson.TypeFalse:
			return false
		}
	}
	return v.Get(key).AsBool()
}

// Float returns the finite number under key.
func (v Value) Float(key string) float64 { return v.Get(key).AsFloat() }

// Int returns the integer under key, which must be in [min, max].
func (v Value) Int(key string, min, max int) int { return v.Get(key).AsInt(min, max) }

// Object returns the object under key.
func (v Value) Object(key string) Value {
	if c := v.lookup(key); c != nil && c.Type() == fastjson.TypeObject {
		return Value{v: c, parent: v.v, key: key, idx: -1, r: v.r}
	}
	return v.Get(key).AsObject()
}

// Array returns the array under key.
func (v Value) Array(key string) Array {
	if c := v.lookup(key); c != nil && c.Type() == fastjson.TypeArray {
		a, _ := c.Array()
		return Array{Value: Value{v: c, parent: v.v, key: key, idx: -1, r: v.r}, items: a}
	}
	return v.Get(key).AsArray()
}

// Raw appends the JSON text of the value under key to dst.
func (v Value) Raw(dst []byte, key string) []byte { return v.Get(key).AsRaw(dst) }

// Optional getters: an absent key or a null is not an error; ok reports
// whether a value of the right type was there.

// OptString returns the string under key, if any.
func (v Value) OptString(key string) (s string, ok bool) {
	if c := v.lookup(key); c != nil && c.Type() == fastjson.TypeString {
		b, _ := c.StringBytes()
		return string(b), true
	}
	c := v.Opt(key)
	s = c.AsString()
	return s, c.v != nil && v.r.err == nil
}

// OptBool returns the boolean under key, if any.
func (v Value) OptBool(key string) (b, ok bool) {
	c := v.Opt(key)
	b = c.AsBool()
	return b, c.v != nil && v.r.err == nil
}

// OptFloat returns the finite number under key, if any.
func (v Value) OptFloat(key string) (f float64, ok bool) {
	c := v.Opt(key)
	f = c.AsFloat()
	return f, c.v != nil && v.r.err == nil
}

// OptInt returns the integer under key, if any; present, it must be in
// [min, max].
func (v Value) OptInt(key string, min, max int) (n int, ok bool) {
	c := v.Opt(key)
	n = c.AsInt(min, max)
	return n, c.v != nil && v.r.err == nil
}

// OptObject returns the object under key; absent (Exists is false) when
// there is none.
func (v Value) OptObject(key string) Value {
	if c := v.lookup(key); c != nil && c.Type() == fastjson.TypeObject {
		return Value{v: c, parent: v.v, key: key, idx: -1, r: v.r}
	}
	return v.Opt(key).AsObject()
}

// OptArray returns the array under key; empty when there is none.
func (v Value) OptArray(key string) Array {
	if c := v.lookup(key); c != nil && c.Type() == fastjson.TypeArray {
		a, _ := c.Array()
		return Array{Value: Value{v: c, parent: v.v, key: key, idx: -1, r: v.r}, items: a}
	}
	return v.Opt(key).AsArray()
}

// OptRaw appends the JSON text of the value under key to dst, if any.
func (v Value) OptRaw(dst []byte, key string) []byte { return v.Opt(key).AsRaw(dst) }
