// Package jsonscan is the gateway's native pre-check of a client's JSON
// request body, run before the body reaches a WebAssembly plugin. One pass
// over the body, allocating nothing:
//
//   - validates it strictly (RFC 8259): Scan accepts exactly what
//     encoding/json.Valid accepts, except that the top-level value must be
//     an object (ErrNotObject otherwise) and the Limits apply;
//   - enforces Limits: a maximum nesting depth (the top-level object is
//     depth 1) and a maximum number of values (every scalar, array and
//     object counts, object keys do not), so that a small but deeply nested
//     or very wide body is refused before a plugin runs out of memory on it;
//   - extracts the fields named by a Spec (dotted paths of object keys
//     from the top-level object, such as "model" or
//     "stream_options.include_usage"), as byte ranges of the body, so the
//     host never parses the body twice;
//   - reports markers (NewSpecMarkers): conditions such as "some member
//     "type" at any depth is the string "image_url"" or "the top-level
//     "tools" is a non-empty array", as bits of Result.Marks, so the host
//     knows what a request needs from its model without decoding it. An
//     any-depth marker costs a length test on every key, like a path.
//
// Policies:
//
//   - Duplicate keys: the last occurrence wins, at every level, as in
//     encoding/json (decoding into map[string]any), in canon.DecodeJSON and
//     in the plugins' request decoders (which visit every member and keep
//     the last). A repeated key replaces the whole earlier value: with
//     {"stream_options":{"include_usage":true},"stream_options":{}} the path
//     "stream_options.include_usage" is not found.
//   - Keys are compared after unescaping, so "mo\u0064el" is "model".
//   - JSON null is reported as found, with Kind Null; callers that treat
//     null like an absent field (as the plugins do) check the Kind.
//   - Paths only go through objects: "a.b" never looks inside arrays.
//   - UTF-8: as encoding/json.Valid, Scan does not check that strings are
//     valid UTF-8 (invalid bytes are accepted), which keeps the string scan
//     at full speed on non-ASCII text. AppendString replaces each invalid
//     byte, and each invalid surrogate escape, with U+FFFD, as encoding/json
//     does when decoding, so its output is always valid UTF-8.
//   - Raw control characters (bytes below 0x20) in strings are syntax
//     errors; escaped ones (\u0000, \n) are valid JSON, and HasControl finds
//     them after AppendString.
//
// Scan is iterative: nesting costs one bit per level in a bitset held in
// the Result (a fixed array covers 1024 levels; deeper documents, allowed
// only when MaxDepth is 0 or above 1024, grow a slice the Result keeps for
// its next use), never goroutine stack. Strings, the bulk of a chat body,
// are scanned 8 bytes at a time (16 in long ones) with word operations.
//
// Typical use, with a Spec compiled once and a Result reused (or on the
// stack):
//
//	var spec = jsonscan.MustSpec("model", "stream", "stream_options.include_usage")
//
//	var res jsonscan.Result
//	if err := jsonscan.Scan(body, spec, jsonscan.Limits{MaxDepth: 128, MaxValues: 1 << 20}, &res); err != nil {
//		// 400 with err.Error(): short and safe to show the client.
//	}
//	if v, ok := res.Get(0); ok && v.Kind == jsonscan.String {
//		model, _ = jsonscan.AppendString(model[:0], body, v)
//	}
package jsonscan

import (
	"errors"
	"strconv"
	"unicode/utf8"
)

// Limits bound a document. Zero (or negative) means no limit.
type Limits struct {
	// MaxDepth bounds nesting: the top-level object is depth 1, so
	// {"a":[1]} has depth 2.
	MaxDepth int
	// MaxValues bounds the number of values: scalars, arrays and objects,
	// the top-level object included (object keys are not values).
	MaxValues int
}

// MaxPaths is the most paths a Spec holds, and MaxLevels the most keys in
// one path. MaxKeyLen bounds the length of each key in a path, in bytes.
const (
	MaxPaths  = 16
	MaxLevels = 4
	MaxKeyLen = 64
	// MaxMarkers is the most markers a Spec holds (NewSpecMarkers).
	MaxMarkers = 16
)

// Kind is the type of a JSON value.
type Kind uint8

// Kinds of values. The zero Kind is no value.
const (
	Invalid Kind = iota
	String
	Number
	True
	False
	Null
	Object
	Array
)

var kindNames = [...]string{"invalid", "string", "number", "true", "false", "null", "object", "array"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Value locates a value found in a body: body[Start:End] is its raw JSON
// text (for strings, quotes included; for arrays and objects, brackets
// included).
type Value struct {
	Start, End int
	Kind       Kind
	// Escaped reports a string holding escape sequences. Without any,
	// body[Start+1:End-1] is the string's bytes (maybe invalid UTF-8).
	Escaped bool
}

// Raw returns v's JSON text in body, the body v was found in.
func (v Value) Raw(body []byte) []byte { return body[v.Start:v.End:v.End] }

// Bool returns the value of a JSON true or false; ok is false for any
// other kind.
func (v Value) Bool() (val, ok bool) {
	switch v.Kind {
	case True:
		return true, true
	case False:
		return false, true
	}
	return false, false
}

// Int returns the value of a number that is an integer in the range of an
// int64. As in the plugins' request decoders, integral numbers written with
// a fraction or an exponent are accepted (2.0, 1e3), and 1.5 or 1e19 are
// not; ok is false for those and for other kinds. body is the body v was
// found in.
func (v Value) Int(body []byte) (n int64, ok bool) {
	if v.Kind != Number {
		return 0, false
	}
	b := body[v.Start:v.End]
	neg := b[0] == '-'
	i := 0
	if neg {
		i = 1
	}
	var u uint64
	for ; i < len(b) && isDigit(b[i]); i++ {
		if u > (1<<63)/10 {
			break // overflow: the float path rejects it
		}
		u = u*10 + uint64(b[i]-'0')
		if u > 1<<63 {
			break
		}
	}
	if i == len(b) {
		switch {
		case neg:
			return -int64(u), true // u == 1<<63 wraps to MinInt64
		case u < 1<<63:
			return int64(u), true
		}
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil || f != f || f < -(1<<63) || f >= 1<<63 || f != float64(int64(f)) {
		return 0, false
	}
	return int64(f), true
}

// AppendString appends to dst the decoded contents of the JSON string v
// found in body by Scan, and returns the extended buffer. Escapes are
// decoded, surrogate pairs combined, and invalid UTF-8 bytes and invalid
// surrogate escapes replaced with U+FFFD, as encoding/json does, so the
// result is valid UTF-8. It may hold control characters written as escapes
// (\u0000, \n): see HasControl. The error reports a v that is not a string.
func AppendString(dst, body []byte, v Value) ([]byte, error) {
	if v.Kind != String {
		return dst, errNotString
	}
	return appendUnescaped(dst, body[v.Start+1:v.End-1]), nil
}

var errNotString = errors.New("jsonscan: value is not a string")

// HasControl reports whether s holds a Unicode control character (category
// Cc: U+0000 to U+001F, U+007F and U+0080 to U+009F, the last encoded as
// 0xC2 0x80 to 0xC2 0x9F), such as a model name decoded by AppendString
// from "qwen\u0000stream".
func HasControl(s []byte) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c == 0x7f:
			return true
		case c == 0xc2 && i+1 < len(s) && s[i+1] >= 0x80 && s[i+1] <= 0x9f:
			return true
		}
	}
	return false
}

// Result is filled by Scan. It is small enough for the stack; a reused
// Result keeps the stack it grew for documents nested deeper than 1024
// levels (when Limits allow those).
type Result struct {
	// Values[i] is the value at the Spec's path i, when Found has bit i.
	Values [MaxPaths]Value
	// Found has bit i set when path i was found.
	Found uint16
	// Marks has bit i set when the Spec's marker i held (NewSpecMarkers).
	Marks uint16
	// Depth is the deepest nesting reached (1 for {}), and Count the number
	// of values, the top-level object included.
	Depth, Count int

	small [16]uint64 // container kinds, one bit a level: 1 for objects
	deep  []uint64   // the same, for deeper documents
}

// Get returns the value at the Spec's path i and whether it was found.
func (r *Result) Get(i int) (Value, bool) {
	if uint(i) >= MaxPaths || r.Found&(1<<i) == 0 {
		return Value{}, false
	}
	return r.Values[i], true
}

// grow doubles the kind stack stk, moving it to r.deep.
func (r *Result) grow(stk []uint64) []uint64 {
	n := 2 * len(stk)
	if cap(r.deep) < n {
		r.deep = make([]uint64, n)
	}
	d := r.deep[:n]
	copy(d, stk)
	return d
}

// ErrorKind classifies Scan's errors.
type ErrorKind uint8

// Kinds of errors.
const (
	ErrSyntax    ErrorKind = iota + 1 // not valid JSON
	ErrTooDeep                        // nested deeper than Limits.MaxDepth
	ErrTooMany                        // more values than Limits.MaxValues
	ErrNotObject                      // the top-level value is not an object
)

// Error is the error Scan returns. Its message is short and safe to send
// to the client: it quotes at most one byte of the body.
type Error struct {
	Kind ErrorKind
	// Offset is where in the body the problem was found.
	Offset int
	// Msg details a syntax error.
	Msg string
	// Limit is the limit exceeded (ErrTooDeep, ErrTooMany).
	Limit int
}

func (e *Error) Error() string {
	switch e.Kind {
	case ErrTooDeep:
		return "request body nests deeper than " + strconv.Itoa(e.Limit) + " levels"
	case ErrTooMany:
		return "request body has more than " + strconv.Itoa(e.Limit) + " JSON values"
	case ErrNotObject:
		return "request body must be a JSON object"
	}
	return "request body is not valid JSON at offset " + strconv.Itoa(e.Offset) + ": " + e.Msg
}

// unexpected reports what was found at s[i] where want was expected.
func unexpected(s []byte, i int, want string) *Error {
	if i >= len(s) {
		return &Error{Kind: ErrSyntax, Offset: i, Msg: "unexpected end of input, expected " + want}
	}
	return &Error{Kind: ErrSyntax, Offset: i, Msg: "unexpected " + quoteByte(s[i]) + ", expected " + want}
}

func quoteByte(c byte) string {
	if ' ' <= c && c < 0x7f {
		return strconv.QuoteRune(rune(c))
	}
	return "byte 0x" + strconv.FormatUint(uint64(c), 16)
}

// appendUnescaped appends the decoded contents of a string checked by
// Scan, following encoding/json's unquote.
func appendUnescaped(dst, s []byte) []byte {
	for len(s) > 0 {
		// Copy the run up to the next backslash.
		j := 0
		for j < len(s) && s[j] != '\\' {
			j++
		}
		dst = appendUTF8(dst, s[:j])
		if s = s[j:]; len(s) == 0 {
			break
		}
		switch c := s[1]; c {
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r := hex4(s[2:])
			s = s[6:]
			if 0xd800 <= r && r < 0xe000 {
				r1 := rune(-1)
				if len(s) >= 6 && s[0] == '\\' && s[1] == 'u' {
					r1 = hex4(s[2:])
				}
				if r < 0xdc00 && 0xdc00 <= r1 && r1 < 0xe000 {
					r = 0x10000 + (r-0xd800)<<10 + (r1 - 0xdc00)
					s = s[6:]
				} else {
					r = utf8.RuneError
				}
			}
			dst = utf8.AppendRune(dst, r)
			continue
		default: // '"', '\\', '/'
			dst = append(dst, c)
		}
		s = s[2:]
	}
	return dst
}

// appendUTF8 appends s, each byte of it that is not part of valid UTF-8
// replaced with U+FFFD.
func appendUTF8(dst, s []byte) []byte {
	if utf8.Valid(s) {
		return append(dst, s...)
	}
	for len(s) > 0 {
		r, n := utf8.DecodeRune(s)
		if r == utf8.RuneError && n == 1 {
			dst = utf8.AppendRune(dst, utf8.RuneError)
		} else {
			dst = append(dst, s[:n]...)
		}
		s = s[n:]
	}
	return dst
}

// hex4 decodes 4 hex digits; -1 if they are not.
func hex4(s []byte) rune {
	if len(s) < 4 {
		return -1
	}
	var r rune
	for _, c := range s[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return -1
		}
		r = r<<4 | rune(c)
	}
	return r
}

func isDigit(c byte) bool { return c-'0' < 10 }
