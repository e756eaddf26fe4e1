package canon

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// The decoder works in two passes. tokenize checks the whole document
// (strict JSON, RFC 8259) and records each value as one tok on a flat tape,
// in document order, with array lengths and the extent of every container.
// The typed decoders then walk the tape: they know each array's length
// before allocating it, skip unknown fields in O(1), and only unescape the
// strings they keep. Keeping the syntax check in the first pass means a
// malformed document is reported as such rather than by a type error found
// on the way; only raw control characters in strings wait for the walk,
// which reports them with the field's path.

// Token kinds; kindNames gives their names in errors.
const (
	kNull uint8 = iota
	kFalse
	kTrue
	kNum
	kStr
	kArr
	kObj
)

var kindNames = [...]string{"null", "false", "true", "number", "string", "array", "object"}

// Token flags.
const (
	fEsc  uint8 = 1 << iota // string: holds escape sequences
	fHigh                   // string: holds bytes >= 0x80 (maybe invalid UTF-8)
	fCtl                    // string: holds raw control characters (invalid)
	fInt                    // number: digits and an optional minus only
	fKey                    // string: an object key with escape sequences
)

// tok is one value on the tape. An object's members are each its key (a
// kStr token) followed by the value's tokens.
type tok struct {
	kind, flags uint8
	// Arrays: number of elements. Objects: offset of the closing brace.
	n uint32
	// Scalars: the value's byte range, strings without their quotes.
	// Arrays and objects: a is the offset of the opening bracket and b the
	// index of the first token after the container.
	a, b uint32
}

// maxDepth bounds nesting, as fastjson did.
const maxDepth = 300

const noParent = ^uint32(0)

// syntaxError reports malformed JSON.
type syntaxError struct {
	off int
	msg string
}

func (e *syntaxError) Error() string {
	return "invalid JSON at offset " + strconv.Itoa(e.off) + ": " + e.msg
}

// unexpected reports what was found at s[i] where want was expected.
func unexpected(s []byte, i int, want string) error {
	if i >= len(s) {
		return &syntaxError{i, "unexpected end of input, expected " + want}
	}
	found := "byte 0x" + strconv.FormatUint(uint64(s[i]), 16)
	if ' ' <= s[i] && s[i] < 0x7f {
		found = strconv.QuoteRune(rune(s[i]))
	}
	return &syntaxError{i, "unexpected " + found + ", expected " + want}
}

func isSpace(c byte) bool { return c == ' ' || c == '\n' || c == '\r' || c == '\t' }

func skipSpace(s []byte, i int) int {
	for i < len(s) && s[i] <= ' ' && isSpace(s[i]) {
		i++
	}
	return i
}

// tokenize checks s and fills d.t and d.spaced. It records the offset of
// the first string holding a raw control character in d.ctl (-1: none):
// the typed decoders reject such strings with their field path, and finish
// rejects any left in skipped values. Escaped keys are flagged fKey, and
// their length summed in d.keyBytes.
//
// Inside WebAssembly every taken branch and call costs several nanoseconds
// (Go compiles jumps there to a dispatch loop), so the tokenizer is a state
// machine written for few of them on the path of a compact document:
// strings (keys and values alike) are scanned inline, 8 bytes a step, and
// whitespace is looked for only where a byte is not what a compact document
// has there.
func (d *decoder) tokenize(s []byte) error {
	if uint64(len(s)) >= uint64(noParent) {
		return &syntaxError{0, "document too large"}
	}
	t := d.t[:0]
	d.ctl, d.keyBytes = -1, 0
	var (
		cur   = noParent // innermost open container
		inObj bool       // cur is an object
		isKey bool       // the string being scanned is an object key
		// spaced: whitespace was skipped (outside strings); a compact
		// document's raw values need no compacting.
		spaced bool
		depth  int
		i      int
		start  int
		fl     uint8
		c      byte
		k      uint8
	)

value: // A value starts at s[i], maybe after whitespace.
	if i >= len(s) || s[i] <= ' ' {
		spaced = true // or an error
		if i = skipSpace(s, i); i >= len(s) {
			return unexpected(s, i, "value")
		}
	}
	c = s[i]
	if c == '"' {
		isKey = false
		goto str
	}
	switch c {
	case '{', '[':
		k = kArr
		if c == '{' {
			k = kObj
		}
		if depth++; depth > maxDepth {
			return &syntaxError{i, "nesting deeper than " + strconv.Itoa(maxDepth)}
		}
		start = i
		if i++; i < len(s) && s[i] <= ' ' {
			spaced = true
			i = skipSpace(s, i)
		}
		if i < len(s) && s[i] == c+2 { // '}' or ']': empty
			t = append(t, tok{kind: k, a: uint32(start), b: uint32(len(t) + 1)})
			if k == kObj {
				t[len(t)-1].n = uint32(i)
			}
			depth--
			i++
			goto after
		}
		// b links to the parent until the container is closed.
		t = append(t, tok{kind: k, a: uint32(start), b: cur})
		cur = uint32(len(t) - 1)
		if inObj = k == kObj; inObj {
			goto member
		}
		goto value
	case 't':
		if !bytes.HasPrefix(s[i:], []byte("true")) {
			return unexpected(s, i, "value")
		}
		t = append(t, tok{kind: kTrue, a: uint32(i), b: uint32(i + 4)})
		i += 4
	case 'f':
		if !bytes.HasPrefix(s[i:], []byte("false")) {
			return unexpected(s, i, "value")
		}
		t = append(t, tok{kind: kFalse, a: uint32(i), b: uint32(i + 5)})
		i += 5
	case 'n':
		if !bytes.HasPrefix(s[i:], []byte("null")) {
			return unexpected(s, i, "value")
		}
		t = append(t, tok{kind: kNull, a: uint32(i), b: uint32(i + 4)})
		i += 4
	default:
		end, fl, err := scanNumber(s, i)
		if err != nil {
			return err
		}
		t = append(t, tok{kind: kNum, flags: fl, a: uint32(i), b: uint32(end)})
		i = end
	}
	goto after

member: // An object member's key starts at s[i], maybe after whitespace.
	if i >= len(s) || s[i] != '"' {
		spaced = true // or an error
		if i = skipSpace(s, i); i >= len(s) || s[i] != '"' {
			return unexpected(s, i, "string (object key)")
		}
	}
	isKey = true

str: // s[i] opens a string: find its end and note what it holds.
	start = i
	i++
	fl = 0
	for {
		// Skip 8 plain bytes at a time. A byte is special if it is '"',
		// '\\', below 0x20 or above 0x7f; borrows only run upwards, so the
		// lowest flagged byte is the first special one.
		for i+8 <= len(s) {
			x := binary.LittleEndian.Uint64(s[i:])
			if m := ((x - 0x20*lsb) | ((x ^ '"'*lsb) - lsb) | ((x ^ '\\'*lsb) - lsb) | x) & msb; m != 0 {
				i += bits.TrailingZeros64(m) >> 3
				break
			}
			i += 8
		}
		if i >= len(s) {
			return unexpected(s, i, "'\"' to end string")
		}
		if c = s[i]; c == '"' {
			break
		}
		switch {
		case c == '\\':
			fl |= fEsc
			if i+1 < len(s) && simpleEscape[s[i+1]] {
				i += 2
				break
			}
			n, err := checkEscape(s, i)
			if err != nil {
				return err
			}
			i += n
		case c >= 0x80:
			fl |= fHigh
			for i++; i < len(s) && s[i] >= 0x80; i++ {
			}
		case c < 0x20:
			fl |= fCtl
			if d.ctl < 0 {
				d.ctl = start
			}
			i++
		default: // plain, near the end of the input
			i++
		}
	}
	if isKey {
		if fl&fEsc != 0 {
			fl |= fKey
			d.keyBytes += i - start
		}
		t = append(t, tok{kind: kStr, flags: fl, a: uint32(start + 1), b: uint32(i)})
		if i++; i >= len(s) || s[i] != ':' {
			spaced = true // or an error
			if i = skipSpace(s, i); i >= len(s) || s[i] != ':' {
				return unexpected(s, i, "':' after object key")
			}
		}
		i++
		goto value
	}
	t = append(t, tok{kind: kStr, flags: fl, a: uint32(start + 1), b: uint32(i)})
	i++

after: // A value ended at s[i]: a separator, or the end of containers.
	if cur == noParent {
		if i = skipSpace(s, i); i != len(s) {
			return unexpected(s, i, "end of input after top-level value")
		}
		d.t, d.spaced = t, spaced
		return nil
	}
	t[cur].n++
	if i >= len(s) || s[i] <= ' ' {
		spaced = true // or an error
		i = skipSpace(s, i)
	}
	if i < len(s) {
		if c = s[i]; c == ',' {
			i++
			if inObj {
				goto member
			}
			goto value
		}
		if inObj && c == '}' || !inObj && c == ']' {
			p := &t[cur]
			if inObj {
				p.n = uint32(i) // rather than the count, unused
			}
			i++
			depth--
			cur, p.b = p.b, uint32(len(t))
			inObj = cur != noParent && t[cur].kind == kObj
			goto after
		}
	}
	if inObj {
		return unexpected(s, i, "',' or '}'")
	}
	return unexpected(s, i, "',' or ']'")
}

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// scanString checks the JSON string whose content starts at s[i] and
// returns the offset of its closing quote and its flags.
func scanString(s []byte, i int) (end int, fl uint8, err error) {
	for {
		// Skip 8 plain bytes at a time. A byte is special if it is '"',
		// '\\', below 0x20 or above 0x7f; borrows only run upwards, so the
		// lowest flagged byte is the first special one.
		for i+8 <= len(s) {
			x := binary.LittleEndian.Uint64(s[i:])
			m := ((x - 0x20*lsb) | ((x ^ '"'*lsb) - lsb) | ((x ^ '\\'*lsb) - lsb) | x) & msb
			if m != 0 {
				i += bits.TrailingZeros64(m) >> 3
				break
			}
			i += 8
		}
		if i >= len(s) {
			return 0, 0, unexpected(s, i, "'\"' to end string")
		}
		switch c := s[i]; {
		case c == '"':
			return i, fl, nil
		case c == '\\':
			fl |= fEsc
			n, err := checkEscape(s, i)
			if err != nil {
				return 0, 0, err
			}
			i += n
		case c < 0x20:
			fl |= fCtl
			i++
		case c >= 0x80:
			fl |= fHigh
			i++
		default:
			i++
		}
	}
}

// simpleEscape holds the characters that follow a backslash in a
// two-byte escape.
var simpleEscape = [256]bool{'"': true, '\\': true, '/': true, 'b': true, 'f': true, 'n': true, 'r': true, 't': true}

// checkEscape checks the escape sequence at s[i] and returns its length.
func checkEscape(s []byte, i int) (int, error) {
	if i+1 >= len(s) {
		return 0, unexpected(s, i+1, "escape sequence")
	}
	switch s[i+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return 2, nil
	case 'u':
		if i+6 > len(s) || hex4(s[i+2:i+6]) < 0 {
			return 0, &syntaxError{i, `invalid \u escape`}
		}
		return 6, nil
	}
	return 0, &syntaxError{i, "invalid escape " + strconv.Quote(string(s[i:i+2]))}
}

// hex4 decodes 4 hex digits; -1 if they are not.
func hex4(s []byte) rune {
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

// scanNumber checks the JSON number at s[i] and returns its end.
func scanNumber(s []byte, i int) (end int, fl uint8, err error) {
	if s[i] == '-' {
		i++
	}
	j := i
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	if i == j || s[j] == '0' && i > j+1 {
		if i == j {
			return 0, 0, unexpected(s, i, "value")
		}
		return 0, 0, &syntaxError{j, "number with a leading zero"}
	}
	if i < len(s) && (s[i] == '.' || s[i]|0x20 == 'e') {
		return scanFraction(s, i)
	}
	return i, fInt, nil
}

// scanFraction checks the fraction and exponent of a number at s[i].
func scanFraction(s []byte, i int) (end int, fl uint8, err error) {
	if s[i] == '.' {
		if i++; i >= len(s) || !isDigit(s[i]) {
			return 0, 0, unexpected(s, i, "digit after decimal point")
		}
		for i++; i < len(s) && isDigit(s[i]); i++ {
		}
	}
	if i < len(s) && s[i]|0x20 == 'e' {
		if i++; i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if i >= len(s) || !isDigit(s[i]) {
			return 0, 0, unexpected(s, i, "digit in exponent")
		}
		for i++; i < len(s) && isDigit(s[i]); i++ {
		}
	}
	return i, 0, nil
}

// unescape decodes in place the content of a JSON string checked by
// tokenize and returns its new length (the result is never longer).
// Invalid surrogate escapes become U+FFFD, as in encoding/json.
func unescape(b []byte) int {
	dst, src := b, b
	w, i := 0, 0
	for {
		// Find the next backslash, 8 bytes at a time, and move the bytes
		// before it unless they are where they belong already.
		j := i
		for j+8 <= len(src) {
			y := binary.LittleEndian.Uint64(src[j:]) ^ '\\'*lsb
			if m := (y - lsb) &^ y & msb; m != 0 {
				j += bits.TrailingZeros64(m) >> 3
				goto found
			}
			j += 8
		}
		for j < len(src) && src[j] != '\\' {
			j++
		}
	found:
		if w != i {
			copy(dst[w:], src[i:j])
		}
		w += j - i
		if i = j; i >= len(src) {
			return w
		}
		switch c := src[i+1]; c {
		case 'b':
			dst[w] = '\b'
		case 'f':
			dst[w] = '\f'
		case 'n':
			dst[w] = '\n'
		case 'r':
			dst[w] = '\r'
		case 't':
			dst[w] = '\t'
		case 'u':
			r := hex4(src[i+2:])
			i += 6
			if utf16.IsSurrogate(r) {
				r2 := rune(-1)
				if r < 0xdc00 && i+6 <= len(src) && src[i] == '\\' && src[i+1] == 'u' {
					r2 = hex4(src[i+2:])
				}
				if r = utf16.DecodeRune(r, r2); r != utf8.RuneError {
					i += 6
				}
			}
			w += utf8.EncodeRune(dst[w:], r)
			continue
		default: // '"', '\\', '/'
			dst[w] = c
		}
		w++
		i += 2
	}
}

// fixUTF8 replaces each byte of b that is not part of valid UTF-8 with
// U+FFFD, as jsonw does on writing.
func fixUTF8(b []byte) string {
	out := make([]byte, 0, len(b)+8)
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError && n == 1 {
			out = utf8.AppendRune(out, utf8.RuneError)
		} else {
			out = append(out, b[:n]...)
		}
		b = b[n:]
	}
	return string(out)
}

// compact appends the array or object starting at s[i] to dst without
// insignificant whitespace. dst may be s[i:i]: the copy is never longer. The
// value was checked by tokenize; a raw control character in one of its
// strings is an error.
func compact(dst, s []byte, i int) ([]byte, error) {
	depth := 0
	for {
		switch c := s[i]; {
		case c == '"':
			end, fl, _ := scanString(s, i+1)
			if fl&fCtl != 0 {
				return nil, errControl
			}
			dst = append(dst, s[i:end+1]...)
			i = end + 1
		case isSpace(c):
			i++
		case c == '}' || c == ']':
			if depth--; depth == 0 {
				return append(dst, c), nil
			}
			dst = append(dst, c)
			i++
		default:
			if c == '{' || c == '[' {
				depth++
			}
			dst = append(dst, c)
			i++
		}
	}
}
