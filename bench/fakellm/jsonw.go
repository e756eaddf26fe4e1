package fakellm

import (
	"math"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"
)

// Responses are written by appending JSON to byte slices by hand: it keeps the
// hot path free of reflection and allocations. Every string goes through
// appendJSONString, a real JSON escaper (strconv.Quote is not JSON).
//
// These helpers deliberately do not use sdk/jsonw, whose output is equivalent
// JSON but not the same bytes: the fake mimics its backends byte for byte.
// appendJSONString writes backspace and form feed as \b and \f, as Ollama
// (Go's encoding/json since Go 1.22) and vLLM (Python) do, where jsonw.String
// writes \u0008 and \u000c; the float helpers write NaN and infinities as 0
// and follow Python's repr or Go's float32 formatting, where jsonw.Float writes
// null and shortens a negative exponent (1e-7, not 1e-07). appendInt is
// jsonw.Int, kept for symmetry.

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a quoted JSON string. It escapes '"', '\\'
// and control characters, writes U+2028/U+2029 escaped (as encoding/json
// does) and replaces invalid UTF-8 with U+FFFD, so the output is always valid
// JSON and valid UTF-8.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	b = appendJSONStringBody(b, s)
	return append(b, '"')
}

// appendJSONStringBody appends the escaped characters of s without the
// surrounding quotes, so that several pieces can form one JSON string.
func appendJSONStringBody(b []byte, s string) []byte {
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"':
				b = append(b, '\\', '"')
			case '\\':
				b = append(b, '\\', '\\')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	return append(b, s[start:]...)
}

func appendInt(b []byte, n int64) []byte { return strconv.AppendInt(b, n, 10) }

// appendPyFloat appends f the way Python's json module writes a float
// (shortest repr, always with a '.' or an exponent), as vLLM does.
func appendPyFloat(b []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(b, '0')
	}
	start := len(b)
	b = strconv.AppendFloat(b, f, 'g', -1, 64)
	for _, c := range b[start:] {
		if c == '.' || c == 'e' || c == 'n' || c == 'I' {
			return b
		}
	}
	return append(b, '.', '0')
}

// appendGoFloat32 appends f the way Go's encoding/json writes a float32, as
// Ollama does.
func appendGoFloat32(b []byte, f float32) []byte {
	if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
		return append(b, '0')
	}
	abs := math.Abs(float64(f))
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	return strconv.AppendFloat(b, float64(f), format, -1, 32)
}

// appendGoFloat64 appends f the way Go's encoding/json writes a float64.
func appendGoFloat64(b []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(b, '0')
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	return strconv.AppendFloat(b, f, format, -1, 64)
}

// appendRFC3339Nano appends t as Go's encoding/json writes a time.Time.
func appendRFC3339Nano(b []byte, t time.Time) []byte {
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"')
}

// appendHex appends the 16 lowercase hex digits of v.
func appendHex(b []byte, v uint64) []byte {
	for shift := 60; shift >= 0; shift -= 4 {
		b = append(b, hexDigits[(v>>uint(shift))&0xf])
	}
	return b
}

// bufPool recycles response buffers.
var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

func getBuf() *[]byte { return bufPool.Get().(*[]byte) }

func putBuf(b *[]byte) {
	if cap(*b) > 1<<20 {
		return // do not keep huge buffers around
	}
	*b = (*b)[:0]
	bufPool.Put(b)
}
