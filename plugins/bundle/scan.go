package bundle

import (
	"encoding/binary"
	"math/bits"
	"unicode/utf8"

	"github.com/mindrouter/mindrouter/sdk/jsonw"
)

// A strict, allocation-free JSON scanner for the same-dialect patch. It
// accepts RFC 8259 JSON only (what fastjson's validator accepts, or less:
// it also bounds nesting), so a body it accepts is one the full path
// parses. Everything here reports failure with ok=false; the patch then
// declines and the full path runs, with its own error messages.

// maxScanDepth bounds nesting below fastjson's limit (300).
const maxScanDepth = 128

// Value kinds.
const (
	kNone byte = iota
	kNull
	kFalse
	kTrue
	kNum
	kStr
	kArr
	kObj
)

// span is one scanned value: its kind and byte range in the input (a
// string without its quotes).
type span struct {
	kind byte
	// Strings: sfEsc (escapes), sfRaw (the bytes are what jsonw writes for
	// the string's value, so they can be copied). Numbers: nfInt (digits
	// and an optional minus only). Containers: cfSpace (whitespace between
	// tokens).
	flags byte
	a, b  int
}

const (
	sfEsc   byte = 1 << 0
	sfRaw   byte = 1 << 1
	nfInt   byte = 1 << 0
	cfSpace byte = 1 << 0
)

func (s span) null() bool { return s.kind == kNone || s.kind == kNull }

type scanner struct {
	b     []byte
	i     int
	depth int // containers open (interpreted ones)
}

func isSpace(c byte) bool { return c <= ' ' && (c == ' ' || c == '\n' || c == '\r' || c == '\t') }

func (s *scanner) ws() {
	if s.i < len(s.b) && s.b[s.i] <= ' ' {
		s.skipSpace()
	}
}

// skipSpace is ws's loop, out of line so that ws, peek and eat inline: a
// call costs more than a byte in Go's WebAssembly, and compact JSON (the
// common case) has no whitespace to skip.
//
//go:noinline
func (s *scanner) skipSpace() {
	i, b := s.i, s.b
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	s.i = i
}

// peek skips whitespace and returns the next byte (0 at the end).
func (s *scanner) peek() byte {
	if s.i < len(s.b) && s.b[s.i] > ' ' {
		return s.b[s.i]
	}
	return s.peekSpace()
}

//go:noinline
func (s *scanner) peekSpace() byte {
	s.skipSpace()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// eat consumes c after whitespace.
func (s *scanner) eat(c byte) bool {
	if s.peek() == c {
		s.i++
		return true
	}
	return false
}

// end reports whether only whitespace is left.
func (s *scanner) end() bool { s.ws(); return s.i == len(s.b) }

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// strClass[c]: 0 a byte copied as is in a canonical string, 1 the closing
// quote, 2 a backslash, 3 a control character (invalid), 4 a non-ASCII
// byte.
var strClass = func() (t [256]byte) {
	for c := 0; c < 0x20; c++ {
		t[c] = 3
	}
	t['"'], t['\\'] = 1, 2
	for c := 0x80; c < 0x100; c++ {
		t[c] = 4
	}
	return t
}()

func hexVal(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

func hex4(b []byte) int {
	if len(b) < 4 {
		return -1
	}
	v := 0
	for _, c := range b[:4] {
		h := hexVal(c)
		if h < 0 {
			return -1
		}
		v = v<<4 | h
	}
	return v
}

// str scans a string at s.i (the opening quote). It fails on what JSON
// forbids and on escapes the full path would read differently from
// strict JSON (a lone or misordered surrogate). sfRaw is set when the
// bytes between the quotes are exactly what jsonw writes for the value:
// valid UTF-8 without U+2028/U+2029, and only the escapes jsonw uses.
func (s *scanner) str() (span, bool) {
	b := s.b
	i := s.i + 1
	start := i
	flags := sfRaw
	for {
		// The common bytes, eight at a time (as canon's lexer): a byte is
		// special if it is '"', '\\', below 0x20 or above 0x7f; borrows
		// only run upwards, so the lowest flagged byte is the first
		// special one.
		for i+8 <= len(b) {
			x := binary.LittleEndian.Uint64(b[i:])
			if m := ((x - 0x20*lsb) | ((x ^ '"'*lsb) - lsb) | ((x ^ '\\'*lsb) - lsb) | x) & msb; m != 0 {
				i += bits.TrailingZeros64(m) >> 3
				break
			}
			i += 8
		}
		for i < len(b) && strClass[b[i]] == 0 {
			i++
		}
		if i >= len(b) {
			return span{}, false
		}
		switch strClass[b[i]] {
		case 1:
			s.i = i + 1
			return span{kind: kStr, flags: flags, a: start, b: i}, true
		case 3:
			return span{}, false
		case 4:
			r, n := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && n == 1 || r == '\u2028' || r == '\u2029' {
				flags &^= sfRaw
			}
			i += n
		case 2:
			flags |= sfEsc
			if i+1 >= len(b) {
				return span{}, false
			}
			switch c := b[i+1]; c {
			case '"', '\\', 'n', 'r', 't':
				i += 2
			case '/', 'b', 'f':
				flags &^= sfRaw
				i += 2
			case 'u':
				v := hex4(b[i+2:])
				if v < 0 {
					return span{}, false
				}
				switch {
				case v >= 0xD800 && v < 0xDC00:
					// A high surrogate must be followed by a low one.
					if i+11 >= len(b) || b[i+6] != '\\' || b[i+7] != 'u' {
						return span{}, false
					}
					if w := hex4(b[i+8:]); w < 0xDC00 || w >= 0xE000 {
						return span{}, false
					}
					flags &^= sfRaw
					i += 12
				case v >= 0xDC00 && v < 0xE000:
					return span{}, false
				default:
					// jsonw writes \u00XX (lowercase) for control
					// characters other than \n, \r, \t, and \u2028, \u2029.
					canon := v < 0x20 && v != '\n' && v != '\r' && v != '\t' || v == 0x2028 || v == 0x2029
					for _, h := range b[i+2 : i+6] {
						if 'A' <= h && h <= 'F' {
							canon = false
						}
					}
					if !canon {
						flags &^= sfRaw
					}
					i += 6
				}
			default:
				return span{}, false
			}
		}
	}
}

// num scans a number at s.i.
func (s *scanner) num() (span, bool) {
	b := s.b
	i := s.i
	start := i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
	default:
		return span{}, false
	}
	flags := nfInt
	if i < len(b) && b[i] == '.' {
		flags = 0
		i++
		d := i
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
		if i == d {
			return span{}, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		flags = 0
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		d := i
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
		if i == d {
			return span{}, false
		}
	}
	s.i = i
	return span{kind: kNum, flags: flags, a: start, b: i}, true
}

func (s *scanner) lit(word string, kind byte) (span, bool) {
	if len(s.b)-s.i < len(word) || string(s.b[s.i:s.i+len(word)]) != word {
		return span{}, false
	}
	a := s.i
	s.i += len(word)
	return span{kind: kind, a: a, b: s.i}, true
}

// value scans any value after whitespace, validating containers whole.
// Cases in order of frequency: vLLM's bodies hold a dozen nulls.
func (s *scanner) value() (span, bool) {
	switch c := s.peek(); {
	case c == '"':
		return s.str()
	case c == 'n':
		// One 4-byte load, not a string comparison.
		if i := s.i; len(s.b)-i >= 4 && binary.LittleEndian.Uint32(s.b[i:]) == 'n'|'u'<<8|'l'<<16|'l'<<24 {
			s.i = i + 4
			return span{kind: kNull, a: i, b: i + 4}, true
		}
		return span{}, false
	case c == '-' || '0' <= c && c <= '9':
		return s.num()
	case c == '{' || c == '[':
		return s.container()
	case c == 't':
		return s.lit("true", kTrue)
	case c == 'f':
		return s.lit("false", kFalse)
	}
	return span{}, false
}

// container scans an object or array generically, in one loop (calls
// cost more than bytes in WebAssembly); cfSpace says whether it holds
// whitespace between tokens.
func (s *scanner) container() (span, bool) {
	b := s.b
	a := s.i
	i := a
	var stack [maxScanDepth]byte // the closers of the open containers
	n := 0
	space := false
	fail := func() (span, bool) { s.i = i; return span{}, false }
	for {
		// At i: a value's first byte.
		switch c := b[i]; c {
		case '{', '[':
			if s.depth+n >= maxScanDepth {
				return fail()
			}
			closer := byte(']')
			if c == '{' {
				closer = '}'
			}
			stack[n] = closer
			n++
			i++
			for i < len(b) && isSpace(b[i]) {
				i, space = i+1, true
			}
			if i < len(b) && b[i] == closer {
				n--
				i++
				break // an empty container: after a value
			}
			if closer == '}' {
				if i >= len(b) || b[i] != '"' {
					return fail()
				}
				s.i = i
				if _, ok := s.str(); !ok {
					return span{}, false
				}
				i = s.i
				for i < len(b) && isSpace(b[i]) {
					i, space = i+1, true
				}
				if i >= len(b) || b[i] != ':' {
					return fail()
				}
				i++
				for i < len(b) && isSpace(b[i]) {
					i, space = i+1, true
				}
			}
			if i >= len(b) {
				return fail()
			}
			continue // a value
		case '"':
			s.i = i
			if _, ok := s.str(); !ok {
				return span{}, false
			}
			i = s.i
		case 't', 'f', 'n':
			w := "null"
			switch c {
			case 't':
				w = "true"
			case 'f':
				w = "false"
			}
			if len(b)-i < len(w) || string(b[i:i+len(w)]) != w {
				return fail()
			}
			i += len(w)
		default:
			s.i = i
			if _, ok := s.num(); !ok {
				return span{}, false
			}
			i = s.i
		}
		// After a value: a comma, a closer, or the end of the container.
		for {
			if n == 0 {
				s.i = i
				kind := kArr
				if b[a] == '{' {
					kind = kObj
				}
				sp := span{kind: kind, a: a, b: i}
				if space {
					sp.flags = cfSpace
				}
				return sp, true
			}
			for i < len(b) && isSpace(b[i]) {
				i, space = i+1, true
			}
			if i >= len(b) {
				return fail()
			}
			if b[i] == stack[n-1] {
				n--
				i++
				continue
			}
			if b[i] != ',' {
				return fail()
			}
			i++
			for i < len(b) && isSpace(b[i]) {
				i, space = i+1, true
			}
			if stack[n-1] == '}' {
				if i >= len(b) || b[i] != '"' {
					return fail()
				}
				s.i = i
				if _, ok := s.str(); !ok {
					return span{}, false
				}
				i = s.i
				for i < len(b) && isSpace(b[i]) {
					i, space = i+1, true
				}
				if i >= len(b) || b[i] != ':' {
					return fail()
				}
				i++
				for i < len(b) && isSpace(b[i]) {
					i, space = i+1, true
				}
			}
			if i >= len(b) {
				return fail()
			}
			break // a value
		}
	}
}

// Object and array iteration for the values the patch interprets:
//
//	if !s.open('{') { ... }
//	for more := s.first('}'); more; more = s.next('}') { k, ok := s.key() ... }
//
// with s.bad set by first, next or key on a syntax error.

// open consumes an opening bracket after whitespace.
func (s *scanner) open(c byte) bool {
	if s.peek() != c || s.depth >= maxScanDepth {
		return false
	}
	s.i++
	s.depth++
	return true
}

// first reports whether the container just opened has members, consuming
// closer when it is empty.
func (s *scanner) first(closer byte) bool {
	if s.eat(closer) {
		s.depth--
		return false
	}
	return true
}

// next consumes the comma before another member and reports true, or the
// closer and reports false; ok is false on anything else.
func (s *scanner) next(closer byte) (more, ok bool) {
	switch s.peek() {
	case ',':
		s.i++
		return true, true
	case closer:
		s.i++
		s.depth--
		return false, true
	}
	return false, false
}

// key scans an object key and its colon. Keys with escapes fail: the full
// path unescapes them, so one could spell a known key.
func (s *scanner) key() ([]byte, bool) {
	if s.peek() != '"' {
		return nil, false
	}
	k, ok := s.str()
	if !ok || k.flags&sfEsc != 0 || !s.eat(':') {
		return nil, false
	}
	return s.b[k.a:k.b], true
}

// bytes returns a span's bytes.
func (s *scanner) bytes(v span) []byte { return s.b[v.a:v.b] }

// appendStr appends string span v quoted as jsonw writes its value.
func appendStr(dst, src []byte, v span, tmp *[]byte) []byte {
	dst = append(dst, '"')
	dst = appendStrInner(dst, src, v, tmp)
	return append(dst, '"')
}

// appendStrInner appends the escaped form of string span v without
// quotes; tmp is scratch for the rare string that must be re-escaped.
func appendStrInner(dst, src []byte, v span, tmp *[]byte) []byte {
	if v.flags&sfRaw != 0 {
		return append(dst, src[v.a:v.b]...)
	}
	*tmp = unescape((*tmp)[:0], src[v.a:v.b])
	return escapeInner(dst, *tmp)
}

// escapeInner appends jsonw's escaping of b without quotes.
func escapeInner(dst, b []byte) []byte {
	n := len(dst)
	dst = jsonw.Bytes(dst, b)
	copy(dst[n:], dst[n+1:len(dst)-1])
	return dst[:len(dst)-2]
}

// unescape appends the value of a valid JSON string body (as str accepted
// it) to dst.
func unescape(dst, b []byte) []byte {
	for i := 0; i < len(b); {
		c := b[i]
		if c != '\\' {
			dst = append(dst, c)
			i++
			continue
		}
		switch b[i+1] {
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'u':
			r := rune(hex4(b[i+2:]))
			if r >= 0xD800 && r < 0xDC00 {
				lo := rune(hex4(b[i+8:]))
				r = (r-0xD800)<<10 | (lo - 0xDC00) + 0x10000
				i += 6
			}
			dst = utf8.AppendRune(dst, r)
			i += 6
			continue
		default: // '"', '\\', '/'
			dst = append(dst, b[i+1])
		}
		i += 2
	}
	return dst
}

// strLen is the length of string span v's value, as unescape writes it
// (for sdk.OutputTokens, which the components count on decoded text).
func strLen(src []byte, v span) int {
	if v.kind != kStr {
		return 0
	}
	b := src[v.a:v.b]
	if v.flags&sfEsc == 0 {
		return len(b)
	}
	n := 0
	for i := 0; i < len(b); {
		if b[i] != '\\' {
			n++
			i++
			continue
		}
		if b[i+1] != 'u' {
			n++
			i += 2
			continue
		}
		r := rune(hex4(b[i+2:]))
		if r >= 0xD800 && r < 0xDC00 {
			lo := rune(hex4(b[i+8:]))
			r = (r-0xD800)<<10 | (lo - 0xDC00) + 0x10000
			i += 6
		}
		if l := utf8.RuneLen(r); l > 0 {
			n += l
		} else {
			n += 3 // utf8.AppendRune writes U+FFFD
		}
		i += 6
	}
	return n
}

// appendCompact appends the raw JSON of span v without the whitespace
// between its tokens (strings, numbers and keys as written): what
// fastjson's MarshalTo gives for a value nobody read into.
func appendCompact(dst, src []byte, v span) []byte {
	raw := src[v.a:v.b]
	if v.kind == kStr {
		return append(append(append(dst, '"'), raw...), '"')
	}
	if v.flags&cfSpace == 0 {
		return append(dst, raw...)
	}
	for i := 0; i < len(raw); {
		c := raw[i]
		switch {
		case isSpace(c):
			i++
		case c == '"':
			j := i + 1
			for raw[j] != '"' {
				if raw[j] == '\\' {
					j++
				}
				j++
			}
			dst = append(dst, raw[i:j+1]...)
			i = j + 1
		default:
			dst = append(dst, c)
			i++
		}
	}
	return dst
}
