package jsonscan

import (
	"encoding/binary"
	"math"
	"math/bits"
)

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// levels is the number of depths for which Scan keeps the state of path
// matching: up to the value of a MaxLevels-key path (depth MaxLevels+1).
const levels = MaxLevels + 2

// Scan validates body, enforces lim and fills res with the values at
// spec's paths (spec may be nil: validation only). On error, res.Found is
// 0 and the rest of res is unspecified; the error is an *Error. Calls may
// run concurrently, sharing a Spec, each with its own Result.
func Scan(body []byte, spec *Spec, lim Limits, res *Result) error {
	if e := scan(body, spec, lim, res); e != nil {
		res.Found, res.Marks = 0, 0
		return e
	}
	if spec != nil {
		for i := range spec.pathMarks {
			if m := &spec.pathMarks[i]; res.Found&(1<<m.path) != 0 && m.holds(body, res.Values[m.path]) {
				res.Marks |= m.bit
			}
		}
	}
	return nil
}

// scan is Scan, leaving res.Found set on error.
//
// It is a state machine whose labels are states: value (a value starts at
// s[i]), member (an object key starts at s[i]), str (s[i] opens a string),
// open and close (s[i] opens or closes a container), after (a value ended
// at s[i]), with matched and dispatch on the way from value for a key
// matched by a path. Whitespace is looked for only where a byte is not
// what a compact document has there. Rarely changed state (Found, Depth)
// is kept in res rather than in variables, for fewer spilled registers.
func scan(s []byte, spec *Spec, lim Limits, res *Result) *Error {
	maxDepth, maxCount := lim.MaxDepth, lim.MaxValues
	if maxDepth <= 0 {
		maxDepth = math.MaxInt
	}
	if maxCount <= 0 {
		maxCount = math.MaxInt
	}
	res.Values = [MaxPaths]Value{}
	res.Found, res.Marks, res.Depth, res.Count = 0, 0, 0, 0

	var (
		nodes []node
		stk   = res.small[:] // container kinds by depth-1: 1 for objects
		// By depth, below levels: the trie node of the object (-1: none
		// or an array) and the path whose value the container is (-1).
		lvNode, lvTerm [levels]int8
		depth, count   int
		i, start       int
		inObj          bool // the innermost container is an object
		isKey          bool // the string being scanned is an object key
		esc            bool // the string being scanned has escapes
		c              byte
		k              Kind
		e              *Error
		// Path matching: cur is the trie node of the innermost object
		// (-1: no path goes through it); pend the node of the key just
		// read (-1: none); newCur and newTerm are for the container about
		// to open; rec is the path of the string being scanned (-1).
		cur, pend, newCur, newTerm, rec, p int8 = -1, -1, -1, -1, -1, -1
		// Any-depth markers: anyLens is the Spec's (0: none); apend is
		// the marker key just read and arec the one whose string value
		// is being scanned (indexes in spec.anyKeys; -1: none).
		anyLens     uint64
		apend, arec int8 = -1, -1
	)
	if spec != nil {
		nodes, anyLens = spec.nodes, spec.anyLens
	}
	if i = skipSpace(s, 0); i >= len(s) {
		return unexpected(s, i, "'{'")
	}
	if s[i] != '{' {
		return &Error{Kind: ErrNotObject, Offset: i}
	}
	if len(nodes) > 1 {
		newCur = 0
	}
	count, c = 1, '{'
	goto open

value: // A value starts at s[i], maybe after whitespace.
	if i >= len(s) || s[i] <= ' ' {
		if i = skipSpace(s, i); i >= len(s) {
			return unexpected(s, i, "value")
		}
	}
	if count++; count > maxCount {
		return &Error{Kind: ErrTooMany, Offset: i, Limit: lim.MaxValues}
	}
	c = s[i]
	if apend >= 0 {
		goto marked
	}
	if pend >= 0 {
		goto matched
	}
dispatch:
	if c == '"' {
		isKey = false
		goto str
	}
	if c == '{' || c == '[' {
		newCur, newTerm = -1, -1
		goto open
	}
	if i, k, e = scalar(s, i); e != nil {
		return e
	}
	goto after

marked: // The value at s[i] is that of the any-depth marker key apend.
	// A string is judged at its end; the others by their first bytes
	// (a bad value fails the scan, which clears Marks).
	switch {
	case c == '"':
		arec = apend
	case c == '{' || c == '[':
		if j := skipSpace(s, i+1); j < len(s) && s[j] != '}' && s[j] != ']' {
			res.Marks |= spec.anyKeys[apend].nonEmpty
		}
	case c == 't' || c == '-' || isDigit(c):
		res.Marks |= spec.anyKeys[apend].nonEmpty
	}
	apend = -1
	if pend >= 0 {
		goto matched
	}
	goto dispatch

matched: // The value at s[i] is that of the key matched by pend.
	p = nodes[pend].path
	if c == '{' || c == '[' {
		newCur, newTerm = -1, p
		if c == '{' && nodes[pend].child >= 0 {
			newCur = pend
		}
		pend = -1
		if p >= 0 {
			k = Array
			if c == '{' {
				k = Object
			}
			res.Values[p] = Value{Start: i, Kind: k}
			res.Found |= 1 << p
		}
		goto open
	}
	pend = -1
	if p < 0 {
		goto dispatch
	}
	if c == '"' {
		isKey, rec = false, p
		goto str
	}
	start = i
	if i, k, e = scalar(s, i); e != nil {
		return e
	}
	res.Values[p] = Value{Start: start, End: i, Kind: k}
	res.Found |= 1 << p
	goto after

open: // s[i] is c, '{' or '[', opening a container; newCur and newTerm are set.
	if depth++; depth > maxDepth {
		return &Error{Kind: ErrTooDeep, Offset: i, Limit: lim.MaxDepth}
	}
	if depth > res.Depth {
		res.Depth = depth
	}
	if (depth-1)>>6 >= len(stk) {
		stk = res.grow(stk)
	}
	if depth < levels {
		lvNode[depth], lvTerm[depth] = newCur, newTerm
	}
	cur = newCur
	if i++; i < len(s) && s[i] <= ' ' {
		i = skipSpace(s, i)
	}
	if c == '{' {
		stk[(depth-1)>>6] |= 1 << ((depth - 1) & 63)
		inObj = true
		if i < len(s) && s[i] == '}' {
			goto close
		}
		goto member
	}
	stk[(depth-1)>>6] &^= 1 << ((depth - 1) & 63)
	inObj = false
	if i < len(s) && s[i] == ']' {
		goto close
	}
	goto value

member: // An object member's key starts at s[i], maybe after whitespace.
	if i >= len(s) || s[i] != '"' {
		if i = skipSpace(s, i); i >= len(s) || s[i] != '"' {
			return unexpected(s, i, "string (object key)")
		}
	}
	isKey = true

str: // s[i] opens a string.
	start = i
	i++
	esc = false
	for {
		// Check 8 bytes here (most keys and short strings end in them),
		// and leave longer runs to skipPlain.
		if i+8 <= len(s) {
			if m := specialMask(binary.LittleEndian.Uint64(s[i:])); m != 0 {
				i += bits.TrailingZeros64(m) >> 3
			} else {
				i = skipPlain(s, i+8)
			}
		} else {
			for i < len(s) && !special[s[i]] {
				i++
			}
		}
		if i >= len(s) {
			return unexpected(s, i, `'"' to end string`)
		}
		if c = s[i]; c == '"' {
			break
		}
		if c != '\\' {
			return &Error{Kind: ErrSyntax, Offset: i, Msg: "control character " + quoteByte(c) + " in string"}
		}
		esc = true
		if i+1 < len(s) && simpleEscape[s[i+1]] {
			i += 2
			continue
		}
		if i+6 <= len(s) && s[i+1] == 'u' && hex4(s[i+2:]) >= 0 {
			i += 6
			continue
		}
		return badEscape(s, i)
	}
	if isKey {
		if cur >= 0 {
			if pend = spec.match(cur, s[start+1:i], esc); pend >= 0 {
				res.Found &^= nodes[pend].mask
			}
		}
		if anyLens != 0 {
			// Most keys fail on their length or first byte.
			if l, b := uint(i-start-2), s[start+1]; esc || l < MaxKeyLen && anyLens>>l&1 != 0 && spec.anyFirst[b>>6]>>(b&63)&1 != 0 {
				apend = spec.matchAny(s[start+1:i], esc)
			}
		}
		if i++; i >= len(s) || s[i] != ':' {
			if i = skipSpace(s, i); i >= len(s) || s[i] != ':' {
				return unexpected(s, i, "':' after object key")
			}
		}
		i++
		goto value
	}
	i++
	if rec >= 0 {
		res.Values[rec] = Value{Start: start, End: i, Kind: String, Escaped: esc}
		res.Found |= 1 << rec
		rec = -1
	}
	if arec >= 0 {
		res.Marks |= spec.anyKeys[arec].strMarks(s[start+1:i-1], esc)
		arec = -1
	}
	goto after

close: // s[i] closes the container at depth.
	if depth < levels && lvTerm[depth] >= 0 {
		res.Values[lvTerm[depth]].End = i + 1
	}
	i++
	if depth--; depth == 0 {
		goto done
	}
	inObj = stk[(depth-1)>>6]&(1<<((depth-1)&63)) != 0
	cur = -1
	if depth < levels {
		cur = lvNode[depth]
	}

after: // A value ended at s[i]: a separator, or the end of containers.
	if i >= len(s) || s[i] <= ' ' {
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
			goto close
		}
	}
	if inObj {
		return unexpected(s, i, "',' or '}'")
	}
	return unexpected(s, i, "',' or ']'")

done:
	if i < len(s) {
		if i = skipSpace(s, i); i < len(s) {
			return unexpected(s, i, "end of input after the top-level object")
		}
	}
	res.Count = count
	return nil
}

// specialMask flags the bytes of x (8 bytes of a string, little-endian)
// that end a run of plain string bytes: '"', '\\' and those below 0x20.
// Each term flags bytes at or above the first such byte it finds (borrows
// run upwards) and bytes >= 0x80 are masked out, so the lowest flag marks
// the first special byte; others may be false.
func specialMask(x uint64) uint64 {
	return ((x - 0x20*lsb) | ((x ^ '"'*lsb) - lsb) | ((x ^ '\\'*lsb) - lsb)) &^ x & msb
}

// skipPlain returns the offset of the first special byte (see
// specialMask) at or after s[i], or len(s). It checks 16 bytes a step.
func skipPlain(s []byte, i int) int {
	for i+16 <= len(s) {
		x := specialMask(binary.LittleEndian.Uint64(s[i:]))
		y := specialMask(binary.LittleEndian.Uint64(s[i+8:]))
		if x|y != 0 {
			if x != 0 {
				return i + bits.TrailingZeros64(x)>>3
			}
			return i + 8 + bits.TrailingZeros64(y)>>3
		}
		i += 16
	}
	if i+8 <= len(s) {
		if x := specialMask(binary.LittleEndian.Uint64(s[i:])); x != 0 {
			return i + bits.TrailingZeros64(x)>>3
		}
		i += 8
	}
	for i < len(s) && !special[s[i]] {
		i++
	}
	return i
}

func isSpace(c byte) bool { return c == ' ' || c == '\n' || c == '\r' || c == '\t' }

func skipSpace(s []byte, i int) int {
	for i < len(s) && s[i] <= ' ' && isSpace(s[i]) {
		i++
	}
	return i
}

// special flags the bytes that stop the scan of a string.
var special = [256]bool{'"': true, '\\': true,
	0: true, 1: true, 2: true, 3: true, 4: true, 5: true, 6: true, 7: true,
	8: true, 9: true, 10: true, 11: true, 12: true, 13: true, 14: true, 15: true,
	16: true, 17: true, 18: true, 19: true, 20: true, 21: true, 22: true, 23: true,
	24: true, 25: true, 26: true, 27: true, 28: true, 29: true, 30: true, 31: true}

// simpleEscape holds the characters that follow a backslash in a two-byte
// escape.
var simpleEscape = [256]bool{'"': true, '\\': true, '/': true, 'b': true, 'f': true, 'n': true, 'r': true, 't': true}

func badEscape(s []byte, i int) *Error {
	if i+1 >= len(s) {
		return unexpected(s, i+1, "escape sequence")
	}
	if s[i+1] == 'u' {
		return &Error{Kind: ErrSyntax, Offset: i, Msg: `invalid \u escape`}
	}
	return &Error{Kind: ErrSyntax, Offset: i, Msg: "invalid escape \\" + quoteByte(s[i+1])}
}

// scalar checks the number, true, false or null at s[i] and returns its
// end and kind.
func scalar(s []byte, i int) (int, Kind, *Error) {
	switch s[i] {
	case 't':
		if len(s)-i >= 4 && string(s[i:i+4]) == "true" {
			return i + 4, True, nil
		}
	case 'f':
		if len(s)-i >= 5 && string(s[i:i+5]) == "false" {
			return i + 5, False, nil
		}
	case 'n':
		if len(s)-i >= 4 && string(s[i:i+4]) == "null" {
			return i + 4, Null, nil
		}
	default:
		return number(s, i)
	}
	return 0, 0, unexpected(s, i, "value")
}

// number checks the number at s[i] and returns its end.
func number(s []byte, i int) (int, Kind, *Error) {
	if s[i] == '-' {
		if i++; i >= len(s) || !isDigit(s[i]) {
			return 0, 0, unexpected(s, i, "digit")
		}
	} else if !isDigit(s[i]) {
		return 0, 0, unexpected(s, i, "value")
	}
	if s[i] == '0' {
		if i++; i < len(s) && isDigit(s[i]) {
			return 0, 0, &Error{Kind: ErrSyntax, Offset: i - 1, Msg: "number with a leading zero"}
		}
	} else {
		for i++; i < len(s) && isDigit(s[i]); i++ {
		}
	}
	if i < len(s) && s[i] == '.' {
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
	return i, Number, nil
}
