package canon

import (
	"encoding/binary"
	"math/bits"
	"unicode/utf8"
	"unsafe"
)

// A chunk is decoded once per streamed token, so it has a one-pass decoder
// for the shape that AppendJSON writes: compact JSON, known keys, no nulls,
// integers written as such, valid UTF-8. At anything else it gives up and
// the general decoder runs instead, so it never decides an outcome: what it
// accepts, the general decoder decodes to the same value (FuzzChunkFast
// checks that), and errors all come from the general decoder.

// scanner reads a private copy of a document, in one pass.
type scanner struct {
	s   []byte
	i   int
	bad bool // a bracket or separator was missing
}

// lit consumes c if it is next.
func (p *scanner) lit(c byte) bool {
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

// text consumes a string and returns its bytes, unescaped in place, and
// whether they are plain ASCII; ok is false for anything but a string
// without raw control characters.
func (p *scanner) text() (b []byte, plain, ok bool) {
	s, i := p.s, p.i
	if i >= len(s) || s[i] != '"' {
		return nil, false, false
	}
	i++
	start := i
	var fl uint8
	for {
		for i+8 <= len(s) {
			x := binary.LittleEndian.Uint64(s[i:])
			if m := ((x - 0x20*lsb) | ((x ^ '"'*lsb) - lsb) | ((x ^ '\\'*lsb) - lsb) | x) & msb; m != 0 {
				i += bits.TrailingZeros64(m) >> 3
				break
			}
			i += 8
		}
		if i >= len(s) {
			return nil, false, false
		}
		c := s[i]
		if c == '"' {
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
				return nil, false, false
			}
			i += n
		case c >= 0x80:
			fl |= fHigh
			i++
		case c < 0x20:
			return nil, false, false
		default: // plain, near the end of the input
			i++
		}
	}
	p.i = i + 1
	b = s[start:i]
	if fl&fEsc != 0 {
		b = b[:unescape(b)]
	}
	return b, fl == 0, fl&fHigh == 0 || utf8.Valid(b)
}

// key consumes an object key, plain ASCII, and the colon after it.
func (p *scanner) key() (string, bool) {
	b, plain, ok := p.text()
	if !ok || !plain || !p.lit(':') {
		return "", false
	}
	return unsafe.String(unsafe.SliceData(b), len(b)), true
}

func (p *scanner) str() (string, bool) {
	b, _, ok := p.text()
	return unsafe.String(unsafe.SliceData(b), len(b)), ok
}

// int64 consumes an integer of at most 18 digits, written as such.
func (p *scanner) int64() (int64, bool) {
	s, i := p.s, p.i
	neg := i < len(s) && s[i] == '-'
	if neg {
		i++
	}
	j := i
	var n int64
	for i < len(s) && isDigit(s[i]) {
		n = n*10 + int64(s[i]-'0')
		i++
	}
	if i == j || i-j > 18 || s[j] == '0' && i-j > 1 || i < len(s) && (s[i] == '.' || s[i]|0x20 == 'e') {
		return 0, false
	}
	p.i = i
	if neg {
		n = -n
	}
	return n, true
}

func (p *scanner) int() (int, bool) {
	n, ok := p.int64()
	return int(n), ok && int64(int(n)) == n
}

// first consumes the opening bracket of an object or array and reports
// whether a member or element follows (else the closing one is consumed).
// next consumes the separator after one and reports whether another
// follows. Anything else marks p bad.
func (p *scanner) first(open byte) bool {
	if !p.lit(open) {
		p.bad = true
		return false
	}
	return !p.lit(open + 2) // '}' or ']'
}

func (p *scanner) next(close byte) bool {
	if p.lit(',') {
		return true
	}
	if !p.lit(close) {
		p.bad = true
	}
	return false
}

// decodeFast decodes data into x, which must be zero, if data has the
// common shape; otherwise it returns false and x is to be reset.
func (x *ChatChunk) decodeFast(data []byte) bool {
	p := scanner{s: make([]byte, len(data))}
	copy(p.s, data)
	return x.fast(&p) && p.i == len(p.s)
}

func (x *ChatChunk) fast(p *scanner) bool {
	for more := p.first('{'); more; more = p.next('}') {
		k, ok := p.key()
		switch k {
		case "id":
			x.ID, ok = p.str()
		case "model":
			x.Model, ok = p.str()
		case "created":
			x.Created, ok = p.int64()
		case "choices":
			x.Choices = nil
			for more := p.first('['); more; more = p.next(']') {
				x.Choices = append(x.Choices, ChunkChoice{})
				if !x.Choices[len(x.Choices)-1].fast(p) {
					return false
				}
			}
		case "usage":
			x.Usage = new(Usage)
			ok = x.Usage.fast(p)
		default:
			return false
		}
		if !ok || p.bad {
			return false
		}
	}
	return !p.bad
}

func (c *ChunkChoice) fast(p *scanner) bool {
	for more := p.first('{'); more; more = p.next('}') {
		k, ok := p.key()
		switch k {
		case "index":
			c.Index, ok = p.int()
		case "delta":
			c.Delta = Delta{}
			ok = c.Delta.fast(p)
		case "finish_reason":
			var s string
			s, ok = p.str()
			c.FinishReason = FinishReason(s)
		default:
			return false
		}
		if !ok {
			return false
		}
	}
	return !p.bad
}

func (dl *Delta) fast(p *scanner) bool {
	for more := p.first('{'); more; more = p.next('}') {
		k, ok := p.key()
		switch k {
		case "role":
			var s string
			s, ok = p.str()
			dl.Role = Role(s)
		case "content":
			dl.Content, ok = p.str()
		case "reasoning":
			dl.Reasoning, ok = p.str()
		case "tool_calls":
			dl.ToolCalls = nil
			for more := p.first('['); more; more = p.next(']') {
				dl.ToolCalls = append(dl.ToolCalls, ToolCallDelta{})
				if !dl.ToolCalls[len(dl.ToolCalls)-1].fast(p) {
					return false
				}
			}
		default:
			return false
		}
		if !ok || p.bad {
			return false
		}
	}
	return !p.bad
}

func (tc *ToolCallDelta) fast(p *scanner) bool {
	for more := p.first('{'); more; more = p.next('}') {
		k, ok := p.key()
		switch k {
		case "index":
			tc.Index, ok = p.int()
		case "id":
			tc.ID, ok = p.str()
		case "name":
			tc.Name, ok = p.str()
		case "arguments":
			tc.Arguments, ok = p.str()
		default:
			return false
		}
		if !ok {
			return false
		}
	}
	return !p.bad
}

func (u *Usage) fast(p *scanner) bool {
	for more := p.first('{'); more; more = p.next('}') {
		k, ok := p.key()
		switch k {
		case "prompt_tokens":
			u.PromptTokens, ok = p.int()
		case "completion_tokens":
			u.CompletionTokens, ok = p.int()
		case "total_tokens":
			u.TotalTokens, ok = p.int()
		case "reasoning_tokens":
			u.ReasoningTokens, ok = p.int()
		case "cached_tokens":
			u.CachedTokens, ok = p.int()
		default:
			return false
		}
		if !ok {
			return false
		}
	}
	return !p.bad
}
