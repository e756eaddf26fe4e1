// Package f32json writes and reads float32 vectors as JSON arrays of
// numbers. It is the one codec behind the SDK's float helpers
// (sdk.AppendFloat32s, sdk.ParseFloat32s): natively they call it, and
// inside WebAssembly they call the host functions mr_v2.f32_format and
// mr_v2.f32_parse (ABI 2.6), which the host implements with this same
// package, so a plugin writes the same bytes on either side. It imports
// only the standard library.
//
// Text of floats is the slow part of embeddings inside WebAssembly (Go's
// strconv runs about ten times slower there than natively), which is why
// the host does it.
package f32json

import (
	"errors"
	"math"
	"strconv"
	"unsafe"
)

// Style is how a number is written. Both write the shortest decimal that
// reads back as the same float32.
type Style uint32

const (
	// StyleG is strconv.AppendFloat(b, x, 'g', -1, 32): 0.1, 1e-07, 1e+21.
	StyleG Style = 0
	// StyleJS is encoding/json's float32 form: plain decimals in
	// [1e-6, 1e21), exponent form with at least one exponent digit
	// (1e-7, 1e+21) outside.
	StyleJS Style = 1
)

// MaxNumberLen bounds the bytes AppendNumber writes for one number in
// either style (StyleJS's longest is a sign and 21 digits).
const MaxNumberLen = 24

// AppendNumber writes f in style s. A non-finite f, which JSON cannot
// carry, is written as 0, as the translators always did: a backend's NaN
// must not turn a whole answer into invalid JSON. An unknown style is
// written as StyleG.
func AppendNumber(b []byte, f float32, s Style) []byte {
	x := float64(f)
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return append(b, '0')
	}
	if s != StyleJS {
		return strconv.AppendFloat(b, x, 'g', -1, 32)
	}
	// encoding/json compares in float32 for a float32, so float32(1e-6),
	// a little under 1e-6, is still written 0.000001.
	fm := byte('f')
	if a := float32(math.Abs(x)); a != 0 && (a < 1e-6 || a >= 1e21) {
		fm = 'e'
	}
	b = strconv.AppendFloat(b, x, fm, -1, 32)
	if fm == 'e' { // e-07 to e-7, as encoding/json writes it
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// Append writes vec as a JSON array, [n1,n2,...], each number in style s.
func Append(b []byte, vec []float32, s Style) []byte {
	b = append(b, '[')
	for i, f := range vec {
		if i > 0 {
			b = append(b, ',')
		}
		b = AppendNumber(b, f, s)
	}
	return append(b, ']')
}

// Error codes of a parse.
const (
	CodeSyntax = 1 // src is not a JSON array of numbers
	CodeNumber = 2 // element Index is not a JSON number
	CodeRange  = 3 // element Index is beyond float32's range
	// CodeMemory: the host functions only, a pointer or length outside the
	// guest's memory, or overlapping source and destination.
	CodeMemory = 4
)

// Error is a parse failure. Index is the element at fault (for
// CodeSyntax, the number of elements read before it).
type Error struct {
	Code  int
	Index int
}

func (e *Error) Error() string {
	switch e.Code {
	case CodeNumber:
		return "element " + strconv.Itoa(e.Index) + " is not a number"
	case CodeRange:
		return "element " + strconv.Itoa(e.Index) + " is beyond the float32 range"
	case CodeMemory:
		return "buffers outside the guest's memory"
	}
	return "not a JSON array of numbers"
}

// ErrSyntax is the CodeSyntax error.
var ErrSyntax error = &Error{Code: CodeSyntax}

// Scan calls put for each number of the JSON array src (whitespace
// allowed around the brackets and elements, as JSON allows), in order,
// with its index; it stops at the first error. Numbers must match JSON's
// grammar (no NaN, Inf, hex, or leading +); each is rounded once to the
// nearest float32 (strconv.ParseFloat(s, 32)); one beyond float32's range
// is an error rather than an infinity. Scan does not allocate; it returns
// the number of elements.
func Scan(src []byte, put func(i int, f float32)) (int, error) {
	i := skipWS(src, 0)
	if i >= len(src) || src[i] != '[' {
		return 0, ErrSyntax
	}
	i = skipWS(src, i+1)
	if i < len(src) && src[i] == ']' {
		if skipWS(src, i+1) != len(src) {
			return 0, ErrSyntax
		}
		return 0, nil
	}
	n := 0
	for {
		j := i
		for j < len(src) && !isDelim(src[j]) {
			j++
		}
		tok := src[i:j]
		if !ValidNumber(tok) {
			return n, &Error{Code: CodeNumber, Index: n}
		}
		// ParseFloat keeps no reference to its argument (its errors copy
		// it), so the token is read in place, without a copy per number.
		f, err := strconv.ParseFloat(unsafe.String(unsafe.SliceData(tok), len(tok)), 32)
		if err != nil {
			if errors.Is(err, strconv.ErrRange) {
				return n, &Error{Code: CodeRange, Index: n}
			}
			return n, &Error{Code: CodeNumber, Index: n}
		}
		put(n, float32(f))
		n++
		i = skipWS(src, j)
		if i >= len(src) {
			return n, &Error{Code: CodeSyntax, Index: n}
		}
		switch src[i] {
		case ',':
			i = skipWS(src, i+1)
		case ']':
			if skipWS(src, i+1) != len(src) {
				return n, &Error{Code: CodeSyntax, Index: n}
			}
			return n, nil
		default:
			return n, &Error{Code: CodeSyntax, Index: n}
		}
	}
}

// Parse appends the numbers of the JSON array src to dst (see Scan).
func Parse(dst []float32, src []byte) ([]float32, error) {
	start := len(dst)
	_, err := Scan(src, func(_ int, f float32) { dst = append(dst, f) })
	if err != nil {
		return dst[:start], err
	}
	return dst, nil
}

func isDelim(c byte) bool {
	return c == ',' || c == ']' || c == ' ' || c == '\t' || c == '\n' || c == '\r'
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// ValidNumber reports whether s matches the JSON number grammar.
func ValidNumber(s []byte) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		d := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == d {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		d := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == d {
			return false
		}
	}
	return i == len(s)
}

// The host functions' results (mr_v2.f32_format, mr_v2.f32_parse): r >= 0
// is the count the call needed (bytes written, numbers read), complete
// only when it is within the capacity given (else the guest grows its
// buffer to r and calls again); r < 0 is an error, -(code | index<<8).

// ErrResult packs an error as a host function's result.
func ErrResult(code, index int) int64 { return -int64(uint64(code&0xff) | uint64(index)<<8) }

// ResultError unpacks a negative host function result.
func ResultError(r int64) *Error {
	e := uint64(-r)
	return &Error{Code: int(e & 0xff), Index: int(e >> 8)}
}
