package canon

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/valyala/fastjson"
)

// Codec conventions (see AppendJSON and DecodeJSON on each type):
//
//   - Writing omits zero, empty and nil optional fields, except that pointer
//     fields are written whenever non-nil, array indexes always, a chunk's
//     choices always (possibly []), a model list's models always and a
//     usage's prompt, completion and total counts always.
//   - Reading resets the value first, ignores unknown fields and treats a
//     JSON null like an absent field. Strings are copied out of the input,
//     invalid UTF-8 bytes become U+FFFD (as on writing). Integers must be
//     integral numbers in range (1e3 is accepted, 1.5 is not); floats must be
//     finite. Raw JSON fields (schemas) keep a compact copy of the value.

// decoder is the reusable state of one DecodeJSON call.
type decoder struct {
	p   fastjson.Parser
	num []byte // scratch for the text of a number
}

// decoders is shared by all goroutines of a native host; a plugin instance
// is single-threaded and simply reuses one.
var decoders = sync.Pool{New: func() any { return new(decoder) }}

// Add adds o's counts to u.
func (u *Usage) Add(o Usage) {
	u.PromptTokens += o.PromptTokens
	u.CompletionTokens += o.CompletionTokens
	u.TotalTokens += o.TotalTokens
	u.ReasoningTokens += o.ReasoningTokens
	u.CachedTokens += o.CachedTokens
}

// decode validates and parses data, then hands its root object to f. what
// names the type in errors.
func decode(what string, data []byte, f func(d *decoder, v *fastjson.Value) error) error {
	// fastjson's parser is lenient (bad escapes, odd numbers); the validator
	// is strict and cheap.
	if err := fastjson.ValidateBytes(data); err != nil {
		return fmt.Errorf("canon: decode %s: %w", what, err)
	}
	d := decoders.Get().(*decoder)
	defer decoders.Put(d)
	v, err := d.p.ParseBytes(data)
	if err != nil {
		return fmt.Errorf("canon: decode %s: %w", what, err)
	}
	if v.Type() != fastjson.TypeObject {
		return fmt.Errorf("canon: decode %s: %w", what, typeError{"object", v.Type()})
	}
	if err = f(d, v); err != nil {
		var pe *pathError
		if errors.As(err, &pe) {
			return fmt.Errorf("canon: decode %s: field %q: %w", what, pe.path, pe.err)
		}
		return fmt.Errorf("canon: decode %s: %w", what, err)
	}
	return nil
}

// pathError locates an error inside the document, e.g.
// "messages[1].content[0].text".
type pathError struct {
	path string
	err  error
}

func (e *pathError) Error() string { return e.path + ": " + e.err.Error() }
func (e *pathError) Unwrap() error { return e.err }

func prefix(p string, err error) error {
	if pe, ok := err.(*pathError); ok {
		if pe.path[0] == '[' {
			pe.path = p + pe.path
		} else {
			pe.path = p + "." + pe.path
		}
		return pe
	}
	return &pathError{p, err}
}

type typeError struct {
	want string
	got  fastjson.Type
}

func (e typeError) Error() string { return "expected " + e.want + ", got " + e.got.String() }

var (
	errNotIntegral = errors.New("number is not an integer")
	errRange       = errors.New("number out of range")
	errControl     = errors.New("unescaped control character in string")
)

// fields calls f for each member of the object v; null is an empty object.
func fields(v *fastjson.Value, f func(k []byte, v *fastjson.Value) error) error {
	t := v.Type()
	if t == fastjson.TypeNull {
		return nil
	}
	if t != fastjson.TypeObject {
		return typeError{"object", t}
	}
	o, _ := v.Object()
	var err error
	o.Visit(func(k []byte, fv *fastjson.Value) {
		if err != nil {
			return
		}
		if e := f(k, fv); e != nil {
			err = prefix(string(k), e)
		}
	})
	return err
}

// array returns the elements of the array v; null is an empty array.
func array(v *fastjson.Value) ([]*fastjson.Value, error) {
	t := v.Type()
	if t == fastjson.TypeNull {
		return nil, nil
	}
	if t != fastjson.TypeArray {
		return nil, typeError{"array", t}
	}
	return v.Array()
}

// slice decodes the array v with dec; an empty array gives nil.
func slice[T any](d *decoder, v *fastjson.Value, dec func(*T, *decoder, *fastjson.Value) error) ([]T, error) {
	a, err := array(v)
	if err != nil || len(a) == 0 {
		return nil, err
	}
	out := make([]T, len(a))
	for i, ev := range a {
		if err := dec(&out[i], d, ev); err != nil {
			return nil, prefix("["+strconv.Itoa(i)+"]", err)
		}
	}
	return out, nil
}

func getString(v *fastjson.Value) (string, error) {
	t := v.Type()
	if t == fastjson.TypeNull {
		return "", nil
	}
	if t != fastjson.TypeString {
		return "", typeError{"string", t}
	}
	b, _ := v.StringBytes()
	if utf8.Valid(b) {
		return string(b), nil
	}
	// Match jsonw, which writes each invalid byte as U+FFFD.
	var sb strings.Builder
	sb.Grow(len(b) + 8)
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError && n == 1 {
			sb.WriteRune(utf8.RuneError)
		} else {
			sb.Write(b[:n])
		}
		b = b[n:]
	}
	return sb.String(), nil
}

func getStrings(d *decoder, v *fastjson.Value) ([]string, error) {
	return slice(d, v, func(s *string, _ *decoder, ev *fastjson.Value) (err error) {
		*s, err = getString(ev)
		return err
	})
}

func getBool(v *fastjson.Value) (bool, error) {
	switch t := v.Type(); t {
	case fastjson.TypeTrue:
		return true, nil
	case fastjson.TypeFalse, fastjson.TypeNull:
		return false, nil
	default:
		return false, typeError{"boolean", t}
	}
}

func getBoolPtr(v *fastjson.Value) (*bool, error) {
	if v.Type() == fastjson.TypeNull {
		return nil, nil
	}
	b, err := getBool(v)
	if err != nil {
		return nil, err
	}
	return &b, nil
}

// number leaves the text of the number v in d.num; ok is false for null.
func (d *decoder) number(v *fastjson.Value) (ok bool, err error) {
	t := v.Type()
	if t == fastjson.TypeNull {
		return false, nil
	}
	if t != fastjson.TypeNumber {
		return false, typeError{"number", t}
	}
	// The validator has checked the syntax. d.num lives on the heap with d:
	// a stack buffer would escape through fastjson's recursive MarshalTo.
	d.num = v.MarshalTo(d.num[:0])
	return true, nil
}

func getInt64(d *decoder, v *fastjson.Value) (int64, bool, error) {
	if ok, err := d.number(v); !ok {
		return 0, false, err
	}
	if n, err := strconv.ParseInt(string(d.num), 10, 64); err == nil {
		return n, true, nil
	}
	f, err := strconv.ParseFloat(string(d.num), 64)
	if err != nil || f < -(1<<63) || f >= 1<<63 {
		return 0, false, errRange
	}
	if f != math.Trunc(f) {
		return 0, false, errNotIntegral
	}
	return int64(f), true, nil
}

func getInt(d *decoder, v *fastjson.Value) (int, error) {
	n, _, err := getInt64(d, v)
	if err == nil && int64(int(n)) != n {
		return 0, errRange
	}
	return int(n), err
}

func getIntPtr(d *decoder, v *fastjson.Value) (*int, error) {
	n, ok, err := getInt64(d, v)
	if !ok {
		return nil, err
	}
	if int64(int(n)) != n {
		return nil, errRange
	}
	i := int(n)
	return &i, nil
}

func getInt64Ptr(d *decoder, v *fastjson.Value) (*int64, error) {
	n, ok, err := getInt64(d, v)
	if !ok {
		return nil, err
	}
	return &n, nil
}

// getFloat reads a finite number, correctly rounded to bits (32 or 64).
func getFloat(d *decoder, v *fastjson.Value, bits int) (float64, bool, error) {
	if ok, err := d.number(v); !ok {
		return 0, false, err
	}
	f, err := strconv.ParseFloat(string(d.num), bits)
	if err != nil {
		return 0, false, errRange
	}
	return f, true, nil
}

func getFloatPtr(d *decoder, v *fastjson.Value) (*float64, error) {
	f, ok, err := getFloat(d, v, 64)
	if !ok {
		return nil, err
	}
	return &f, nil
}

func getFloat32s(d *decoder, v *fastjson.Value) ([]float32, error) {
	a, err := array(v)
	if err != nil {
		return nil, err
	}
	out := make([]float32, len(a))
	for i, ev := range a {
		f, _, err := getFloat(d, ev, 32)
		if err != nil {
			return nil, prefix("["+strconv.Itoa(i)+"]", err)
		}
		out[i] = float32(f)
	}
	return out, nil
}

// getRaw returns a compact copy of any JSON value; null gives nil.
//
// It must not call v.Type: that unescapes a string in place, after which
// fastjson re-quotes it with strconv.AppendQuote, which is not JSON. Left
// alone, strings are copied as written, and the input was validated, except
// that fastjson's validator lets raw control characters through in strings:
// the copy is compact, so any such byte is in a string and is rejected.
func getRaw(v *fastjson.Value) ([]byte, error) {
	b := v.MarshalTo(nil)
	if string(b) == "null" {
		return nil, nil
	}
	for _, c := range b {
		if c < 0x20 {
			return nil, errControl
		}
	}
	return b, nil
}
