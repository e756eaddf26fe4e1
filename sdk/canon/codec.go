package canon

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"
)

// Codec conventions (see AppendJSON and DecodeJSON on each type):
//
//   - Writing omits zero, empty and nil optional fields, except that pointer
//     fields are written whenever non-nil, array indexes always, a chunk's
//     choices always (possibly []), a model list's models always and a
//     usage's prompt, completion and total counts always.
//   - Reading accepts strict JSON only (RFC 8259; raw control characters in
//     strings are rejected, with the field's path where there is one),
//     resets the value first, ignores unknown fields and treats a JSON null
//     like an absent field; of repeated fields the last wins. Invalid UTF-8
//     bytes become U+FFFD (as on writing), and so do invalid surrogate
//     escapes. Integers must be integral numbers in range (1e3 is accepted,
//     1.5 is not); floats must be finite. Raw JSON fields (schemas) keep a
//     compact copy of the value, strings and numbers as written.
//   - Reading never aliases the input. It copies the input once, and the
//     decoded strings and raw JSON fields point into that copy (escaped
//     strings are unescaped in place), so that a decode costs a handful of
//     allocations whatever the number of strings. Strings are immutable, so
//     sharing is invisible, except that keeping any one of them keeps the
//     whole copy alive: clone (strings.Clone) a small string that must
//     outlive a large document. Raw JSON fields may be modified in place
//     (their capacity ends with them; appending reallocates). The optional
//     numbers of a ChatRequest likewise share one small allocation.

// decoder is the state of one DecodeJSON call.
type decoder struct {
	t   []tok  // the tape
	buf []byte // the private copy of the document, then unescaped keys
	ctl int    // offset of the first string with a raw control character; -1: none
	// spaced says the document has whitespace between tokens.
	spaced bool
	// keyBytes is the length of the escaped object keys, 0 if there are none.
	keyBytes int
	// Slabs from which a request's messages take their content and tool
	// calls: one allocation each rather than one a message.
	parts []Part
	calls []ToolCall
}

// newDecoder makes a decoder for getDecoder, which recycles them with their
// tapes (pool_*.go).
func newDecoder() *decoder { return &decoder{t: make([]tok, 0, 64)} }

// maxPooledTape bounds the tapes kept for reuse (16 bytes a token).
const maxPooledTape = 1 << 14

// start checks data, copies it and readies the decoder for the typed walk
// from the root (token 0), which must be an object.
func start(data []byte) (*decoder, error) {
	d := getDecoder()
	if err := d.tokenize(data); err != nil {
		return d, err
	}
	if k := d.t[0].kind; k != kObj {
		return d, typeError{"object", k}
	}
	d.buf = make([]byte, len(data), len(data)+d.keyBytes)
	copy(d.buf, data)
	if d.keyBytes > 0 {
		d.unescapeKeys()
	}
	return d, nil
}

// unescapeKeys appends the escaped object keys to d.buf unescaped and
// points their tokens there, leaving the document as written for raw values.
func (d *decoder) unescapeKeys() {
	for i := range d.t {
		t := &d.t[i]
		if t.flags&fKey == 0 {
			continue
		}
		n := len(d.buf)
		d.buf = append(d.buf, d.buf[t.a:t.b]...) // within capacity
		w := unescape(d.buf[n:])
		d.buf = d.buf[:n+w]
		t.a, t.b, t.flags = uint32(n), uint32(n+w), 0
	}
}

// finish releases d and returns the outcome of decoding a what.
func (d *decoder) finish(what string, err error) error {
	if err == nil && d.ctl >= 0 {
		// Left in a skipped value.
		err = &syntaxError{d.ctl, errControl.Error()}
	}
	d.buf, d.parts, d.calls = nil, nil, nil
	if cap(d.t) > maxPooledTape {
		d.t = nil
	}
	putDecoder(d)
	if err != nil {
		return wrap(what, err)
	}
	return nil
}

func wrap(what string, err error) error {
	var pe *pathError
	if errors.As(err, &pe) {
		return fmt.Errorf("canon: decode %s: field %q: %w", what, pe.path, pe.err)
	}
	return fmt.Errorf("canon: decode %s: %w", what, err)
}

// Add adds o's counts to u.
func (u *Usage) Add(o Usage) {
	u.PromptTokens += o.PromptTokens
	u.CompletionTokens += o.CompletionTokens
	u.TotalTokens += o.TotalTokens
	u.ReasoningTokens += o.ReasoningTokens
	u.CachedTokens += o.CachedTokens
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

func index(i int, err error) error { return prefix("["+strconv.Itoa(i)+"]", err) }

type typeError struct {
	want string
	got  uint8 // token kind
}

func (e typeError) Error() string { return "expected " + e.want + ", got " + kindNames[e.got] }

var (
	errNotIntegral = errors.New("number is not an integer")
	errRange       = errors.New("number out of range")
	errControl     = errors.New("unescaped control character in string")
)

// next returns the index of the token after the value at i.
func (d *decoder) next(i int) int {
	if t := &d.t[i]; t.kind >= kArr {
		return int(t.b)
	}
	return i + 1
}

// object returns the token range of the members of the object at i: keys
// at j, values at j+1, the next member at d.next(j+1). null has none.
func (d *decoder) object(i int) (j, end int, err error) {
	switch t := &d.t[i]; t.kind {
	case kObj:
		return i + 1, int(t.b), nil
	case kNull:
		return 0, 0, nil
	default:
		return 0, 0, typeError{"object", t.kind}
	}
}

// field locates err in the member whose key is at j.
func (d *decoder) field(j int, err error) error {
	return prefix(strings.Clone(d.key(j)), err)
}

// array returns the length of the array at i and the index of its first
// element; null is empty.
func (d *decoder) array(i int) (n, j int, err error) {
	switch t := &d.t[i]; t.kind {
	case kArr:
		return int(t.n), i + 1, nil
	case kNull:
		return 0, 0, nil
	default:
		return 0, 0, typeError{"array", t.kind}
	}
}

// slice decodes the array at i with dec; an empty array gives nil.
func slice[T any](d *decoder, i int, dec func(*T, *decoder, int) error) ([]T, error) {
	return sliceFrom(d, i, nil, dec)
}

// sliceFrom is slice taking the elements from *slab while it has room.
// The slice's capacity ends with it.
func sliceFrom[T any](d *decoder, i int, slab *[]T, dec func(*T, *decoder, int) error) ([]T, error) {
	n, j, err := d.array(i)
	if err != nil || n == 0 {
		return nil, err
	}
	var out []T
	if slab != nil && len(*slab) >= n {
		out, *slab = (*slab)[:n:n], (*slab)[n:]
	} else {
		out = make([]T, n)
	}
	for k := range out {
		if err := dec(&out[k], d, j); err != nil {
			return nil, index(k, err)
		}
		j = d.next(j)
	}
	return out, nil
}

// countMessages sums the lengths of the content and tool_calls arrays of
// the messages in the array at i, for the slabs.
func (d *decoder) countMessages(i int) (parts, calls int) {
	t := &d.t[i]
	if t.kind != kArr {
		return 0, 0
	}
	for e, end := i+1, int(t.b); e < end; e = d.next(e) {
		if d.t[e].kind != kObj {
			continue
		}
		for j, end := e+1, int(d.t[e].b); j < end; j = d.next(j + 1) {
			if v := &d.t[j+1]; v.kind == kArr {
				switch d.key(j) {
				case "content":
					parts += int(v.n)
				case "tool_calls":
					calls += int(v.n)
				}
			}
		}
	}
	return parts, calls
}

// at views the bytes of the string token t as a string. The offsets are
// within d.buf, even for an empty string.
func (d *decoder) at(t *tok) string {
	return unsafe.String((*byte)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(d.buf)), t.a)), t.b-t.a)
}

// key returns the object key at j, unescaped.
func (d *decoder) key(j int) string { return d.at(&d.t[j]) }

// str returns the string at i; null gives "". Escaped strings are unescaped
// in place, once.
func (d *decoder) str(i int) (string, error) {
	t := &d.t[i]
	if t.kind == kStr && t.flags == 0 {
		return d.at(t), nil // plain ASCII: the common case
	}
	switch {
	case t.kind == kNull:
		return "", nil
	case t.kind != kStr:
		return "", typeError{"string", t.kind}
	case t.flags&fCtl != 0:
		return "", errControl
	}
	if t.flags&fEsc != 0 {
		t.b = t.a + uint32(unescape(d.buf[t.a:t.b]))
		t.flags &^= fEsc
	}
	if b := d.buf[t.a:t.b]; t.flags&fHigh != 0 && !utf8.Valid(b) {
		return fixUTF8(b), nil
	}
	return d.at(t), nil
}

func (d *decoder) strings(i int) ([]string, error) {
	return slice(d, i, func(s *string, d *decoder, i int) (err error) {
		*s, err = d.str(i)
		return err
	})
}

// boolean reads a boolean; null is false.
func (d *decoder) boolean(i int) (bool, error) {
	switch k := d.t[i].kind; k {
	case kTrue:
		return true, nil
	case kFalse, kNull:
		return false, nil
	default:
		return false, typeError{"boolean", k}
	}
}

// num returns the text and flags of the number at i; ok is false for null.
func (d *decoder) num(i int) (s []byte, fl uint8, ok bool, err error) {
	t := &d.t[i]
	if t.kind != kNum {
		if t.kind == kNull {
			return nil, 0, false, nil
		}
		return nil, 0, false, typeError{"number", t.kind}
	}
	return d.buf[t.a:t.b], t.flags, true, nil
}

// smallInt parses a number made of at most 18 digits and a minus sign;
// ok is false for others.
func smallInt(s []byte, fl uint8) (n int64, neg, ok bool) {
	if fl&fInt == 0 || len(s) > 18 {
		return 0, false, false
	}
	if neg = s[0] == '-'; neg {
		s = s[1:]
	}
	for _, c := range s {
		n = n*10 + int64(c-'0')
	}
	return n, neg, true
}

// bstr views b as a string without copying, for strconv.
func bstr(b []byte) string { return unsafe.String(&b[0], len(b)) }

func (d *decoder) int64(i int) (int64, bool, error) {
	s, fl, ok, err := d.num(i)
	if !ok {
		return 0, false, err
	}
	if n, neg, ok := smallInt(s, fl); ok {
		if neg {
			n = -n
		}
		return n, true, nil
	}
	if n, err := strconv.ParseInt(bstr(s), 10, 64); err == nil {
		return n, true, nil
	}
	f, err := strconv.ParseFloat(bstr(s), 64)
	if err != nil || f < -(1<<63) || f >= 1<<63 {
		return 0, false, errRange
	}
	if f != math.Trunc(f) {
		return 0, false, errNotIntegral
	}
	return int64(f), true, nil
}

func (d *decoder) int(i int) (int, error) {
	n, _, err := d.int64(i)
	if err == nil && int64(int(n)) != n {
		return 0, errRange
	}
	return int(n), err
}

// float reads a finite number, correctly rounded to bits (32 or 64).
func (d *decoder) float(i int, bits int) (float64, bool, error) {
	s, fl, ok, err := d.num(i)
	if !ok {
		return 0, false, err
	}
	if n, neg, ok := smallInt(s, fl); ok && n < 1<<53 {
		f := float64(n) // exact
		if neg {
			f = -f // keeps -0
		}
		return f, true, nil
	}
	f, err := strconv.ParseFloat(bstr(s), bits)
	if err != nil {
		return 0, false, errRange
	}
	return f, true, nil
}

// raw returns a compact copy of any JSON value; null gives nil. Its
// capacity ends with it.
func (d *decoder) raw(i int) ([]byte, error) {
	t := &d.t[i]
	var a, b int
	switch t.kind {
	case kNull:
		return nil, nil
	case kStr:
		if t.flags&fCtl != 0 {
			return nil, errControl
		}
		a, b = int(t.a)-1, int(t.b)+1
	case kArr, kObj:
		a = int(t.a)
		if t.kind == kObj && !d.spaced && d.ctl < 0 {
			b = int(t.n) + 1 // already compact and clean
			return d.buf[a:b:b], nil
		}
		out, err := compact(d.buf[a:a], d.buf, a)
		if err != nil {
			return nil, err
		}
		return out[:len(out):len(out)], nil
	default:
		a, b = int(t.a), int(t.b)
	}
	return d.buf[a:b:b], nil
}
