// Package jsonw appends JSON to byte slices without reflection.
//
// Go compiled to WebAssembly runs reflection-heavy encoding/json about ten
// times slower than native code, so plugins build their output with these
// append helpers. Strings are escaped exactly as RFC 8259 requires (control
// characters, quote and backslash), invalid UTF-8 becomes U+FFFD, and U+2028
// and U+2029 are escaped so the output is also safe inside JavaScript.
//
// The helpers do not track commas; W does.
package jsonw

import (
	"encoding/binary"
	"math"
	"strconv"
	"unicode/utf8"
	"unsafe"
)

const hex = "0123456789abcdef"

// safe[c] is true for ASCII bytes that need no escaping inside a string.
var safe = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// String appends s as a quoted JSON string.
func String(dst []byte, s string) []byte {
	dst = append(dst, '"')
	dst = appendEscaped(dst, s)
	return append(dst, '"')
}

// Bytes appends b as a quoted JSON string (not base64).
func Bytes(dst, b []byte) []byte {
	dst = append(dst, '"')
	dst = appendEscaped(dst, unsafe.String(unsafe.SliceData(b), len(b)))
	return append(dst, '"')
}

// Escaped appends s escaped, without quotes: for building one string from parts.
func Escaped(dst []byte, s string) []byte { return appendEscaped(dst, s) }

// SWAR constants: a byte of each.
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
	quote = '"' * ones
	bslsh = '\\' * ones
	space = ' ' * ones
)

// plain8 reports whether the 8 bytes of x need no escaping: none is a
// control character, a quote, a backslash or non-ASCII.
func plain8(x uint64) bool {
	if x&highs != 0 {
		return false
	}
	// With every byte ASCII these are exact: a byte below 0x20, a byte
	// equal to '"', a byte equal to '\\'.
	q, k := x^quote, x^bslsh
	return ((x-space)&^x|(q-ones)&^q|(k-ones)&^k)&highs == 0
}

// load8 reads s[i:i+8] as a little-endian word (i+8 <= len(s)).
func load8(s string, i int) uint64 {
	return binary.LittleEndian.Uint64(unsafe.Slice(unsafe.StringData(s[i:]), 8))
}

func appendEscaped(dst []byte, s string) []byte {
	start := 0
	for i := 0; i < len(s); {
		// Runs of bytes that need nothing, eight at a time: the common case.
		for i+8 <= len(s) && plain8(load8(s, i)) {
			i += 8
		}
		if i >= len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if safe[c] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	return append(dst, s[start:]...)
}

// Int appends an integer.
func Int(dst []byte, v int64) []byte { return strconv.AppendInt(dst, v, 10) }

// Uint appends an unsigned integer.
func Uint(dst []byte, v uint64) []byte { return strconv.AppendUint(dst, v, 10) }

// Float appends a float the way encoding/json does; NaN and infinities,
// which JSON cannot express, become null.
func Float(dst []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(dst, "null"...)
	}
	abs := math.Abs(f)
	// Whole numbers below 2^53 are exact: their shortest form is their
	// integer digits, which AppendInt writes in a fraction of the time
	// (scores, weights and token counts mostly are whole). -0 keeps its sign.
	if abs < 1e15 && f == math.Trunc(f) && (f != 0 || !math.Signbit(f)) {
		return strconv.AppendInt(dst, int64(f), 10)
	}
	fmt := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		fmt = 'e'
	}
	dst = strconv.AppendFloat(dst, f, fmt, -1, 64)
	if fmt == 'e' {
		// clean up e-09 to e-9
		n := len(dst)
		if n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst
}

// Bool appends true or false.
func Bool(dst []byte, b bool) []byte {
	if b {
		return append(dst, "true"...)
	}
	return append(dst, "false"...)
}

// W builds one JSON value with automatic commas. The zero value is ready;
// reuse it with Reset. Not safe for concurrent use.
//
//	var w jsonw.W
//	w.Obj()
//	w.Key("id"); w.Str("x")
//	w.Key("n"); w.Int(3)
//	w.End()
type W struct {
	B []byte
	// comma[depth] says whether the next element at that depth needs a comma.
	comma []bool
}

// Reset empties w, keeping its buffers.
func (w *W) Reset() { w.B, w.comma = w.B[:0], w.comma[:0] }

func (w *W) sep() {
	if n := len(w.comma); n > 0 {
		if w.comma[n-1] {
			w.B = append(w.B, ',')
		}
		w.comma[n-1] = true
	}
}

// Obj opens an object.
func (w *W) Obj() { w.sep(); w.B = append(w.B, '{'); w.comma = append(w.comma, false) }

// Arr opens an array.
func (w *W) Arr() { w.sep(); w.B = append(w.B, '['); w.comma = append(w.comma, false) }

// EndObj closes an object.
func (w *W) EndObj() { w.comma = w.comma[:len(w.comma)-1]; w.B = append(w.B, '}') }

// EndArr closes an array.
func (w *W) EndArr() { w.comma = w.comma[:len(w.comma)-1]; w.B = append(w.B, ']') }

// Key writes an object key; the next call writes its value.
func (w *W) Key(k string) {
	w.sep()
	w.B = String(w.B, k)
	w.B = append(w.B, ':')
	// the value that follows must not get a comma; its sep sets it again
	w.comma[len(w.comma)-1] = false
}

// Str writes a string value.
func (w *W) Str(s string) { w.sep(); w.B = String(w.B, s) }

// StrBytes writes a string value from bytes.
func (w *W) StrBytes(b []byte) { w.sep(); w.B = Bytes(w.B, b) }

// Int writes an integer value.
func (w *W) Int(v int64) { w.sep(); w.B = Int(w.B, v) }

// Float writes a number value.
func (w *W) Float(f float64) { w.sep(); w.B = Float(w.B, f) }

// Bool writes a boolean value.
func (w *W) Bool(b bool) { w.sep(); w.B = Bool(w.B, b) }

// Null writes null.
func (w *W) Null() { w.sep(); w.B = append(w.B, "null"...) }

// Raw writes pre-encoded JSON (the caller guarantees it is valid).
func (w *W) Raw(v []byte) { w.sep(); w.B = append(w.B, v...) }
