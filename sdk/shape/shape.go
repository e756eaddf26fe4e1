// Package shape is the stream shape of ABI 2.10 (abi.MetaStreamShape): what
// a fused stream call may tell the host about the events that follow, so
// that the host translates them without calling the plugin.
//
// A streaming backend sends, once its answer is under way, event after
// event that differ only in a string or two: vLLM's content chunks repeat
// the id, model, created and choice shape around each token's text, and
// Ollama's lines the model and role around created_at and content. The
// plugin's translation of such an event is, byte for byte, a fixed text
// around the same strings. A call that has just translated one may leave
// the host that rule: the event's literal bytes with holes where the
// strings are, and the client's output as literals and holes. The host
// matches each next event against it and, when every hole holds a string
// in canonical form (below), writes the output itself: no plugin call,
// no copy into the guest. An event that does not match goes to the plugin
// as before, whose result replaces the shape or drops it.
//
// A plugin that leaves a shape promises that an event matching it, in a
// call that does not end the stream, translates to exactly the output
// with its holes filled, changes neither component's state, reports no
// usage, finish reason or end, and counts sdk.OutputTokens of the counted
// hole's decoded length as its output estimate. The plugin's conformance
// check (core/pluginhost/conformance) holds it to that promise on its
// stream goldens.
//
// A hole's bytes are a JSON string's body in canonical form: no byte
// below 0x20, valid UTF-8 without U+2028 or U+2029, and no escape but \",
// \\, \n, \r and \t, which is how sdk/jsonw writes such a string. So a hole
// copied as it is is what the plugin would have written after decoding
// and re-encoding it, and the literal after a hole (which starts with the
// string's closing quote) is found where the string ends: the shape cannot
// be fooled by an event that puts quotes or other fields in a string.
//
// Wire form (the meta value): version byte 1; a uvarint count of holes
// (1 to MaxHoles); the input's literals, holes+1 of them, each a uvarint length and its bytes; a byte of flags
// per hole (FlagNonEmpty, FlagCounted); then the output's parts, a uvarint
// count and, for each, a uvarint tag: 0 for a literal (a uvarint length and
// its bytes), k > 0 for hole k-1.
package shape

import (
	"encoding/binary"
	"errors"
	"unicode/utf8"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
)

// Hole flags.
const (
	// FlagNonEmpty: the event matches only when the hole holds at least
	// one byte (a content chunk with empty text translates to nothing).
	FlagNonEmpty byte = 1 << 0
	// FlagCounted: the hole's decoded length is the output the event
	// carries (sdk.OutputTokens of it). At most one hole is counted.
	FlagCounted byte = 1 << 1
)

// Limits a host enforces on a shape it is given.
const (
	MaxHoles = 8
	MaxBytes = 16 << 10 // the encoded shape
	version  = 1
)

// Part is one piece of a shape's output: a literal, or (Hole >= 0) the
// bytes of the input's hole of that index.
type Part struct {
	Hole int
	Lit  []byte
}

// Hole is an output part standing for the input's hole i.
func Hole(i int) Part { return Part{Hole: i} }

// Lit is a literal output part.
func Lit(b []byte) Part { return Part{Hole: -1, Lit: b} }

// Append encodes a shape: in is the input's literals (one more than the
// holes), flags one byte per hole, out the output's parts. It reports an
// error, and leaves dst as it was, for a shape Parse would refuse. It
// allocates nothing beyond growing dst.
func Append(dst []byte, in [][]byte, flags []byte, out []Part) ([]byte, error) {
	if !valid(in, flags, out) {
		return dst, errShape
	}
	n := len(dst)
	dst = append(dst, version)
	dst = binary.AppendUvarint(dst, uint64(len(in)-1))
	for _, l := range in {
		dst = binary.AppendUvarint(dst, uint64(len(l)))
		dst = append(dst, l...)
	}
	dst = append(dst, flags...)
	dst = binary.AppendUvarint(dst, uint64(len(out)))
	for _, p := range out {
		if p.Hole < 0 {
			dst = binary.AppendUvarint(dst, 0)
			dst = binary.AppendUvarint(dst, uint64(len(p.Lit)))
			dst = append(dst, p.Lit...)
		} else {
			dst = binary.AppendUvarint(dst, uint64(p.Hole)+1)
		}
	}
	if len(dst)-n > MaxBytes {
		return dst[:n], errShape
	}
	return dst, nil
}

// valid is Parse's rules for a shape's parts.
func valid(in [][]byte, flags []byte, out []Part) bool {
	holes := len(in) - 1
	if holes < 1 || holes > MaxHoles || len(flags) != holes {
		return false
	}
	for i := range holes {
		if a, z := in[i], in[i+1]; len(a) == 0 || a[len(a)-1] != '"' || len(z) == 0 || z[0] != '"' {
			return false
		}
	}
	counted := false
	for _, f := range flags {
		if f&^(FlagNonEmpty|FlagCounted) != 0 || f&FlagCounted != 0 && counted {
			return false
		}
		counted = counted || f&FlagCounted != 0
	}
	for _, p := range out {
		if p.Hole >= holes {
			return false
		}
	}
	return true
}

// Shape is a parsed shape. The zero Shape matches nothing. Its slices
// alias the bytes Parse was given unless the caller copies them first;
// Parse reuses the Shape's own slices.
type Shape struct {
	in      [][]byte
	flags   []byte
	out     []Part
	counted int // the counted hole, or -1
	ok      bool
}

var errShape = errors.New("shape: malformed stream shape")

// Parse reads an encoded shape into s, which it resets first; on an
// error s matches nothing. A valid shape has 1 to MaxHoles holes, each
// between a literal that ends with '"' and one that starts with it, at
// most one counted hole, and output parts that name existing holes.
func (s *Shape) Parse(b []byte) error {
	s.Reset()
	if err := s.parse(b); err != nil {
		s.Reset()
		return err
	}
	s.ok = true
	return nil
}

func (s *Shape) parse(b []byte) error {
	if len(b) == 0 || len(b) > MaxBytes || b[0] != version {
		return errShape
	}
	holes, k := binary.Uvarint(b[1:])
	if k <= 0 || holes < 1 || holes > MaxHoles {
		return errShape
	}
	b = b[1+k:]
	for range holes + 1 {
		l, rest, ok := cut(b)
		if !ok {
			return errShape
		}
		s.in, b = append(s.in, l), rest
	}
	for i := 0; i+1 < len(s.in); i++ {
		if a, z := s.in[i], s.in[i+1]; len(a) == 0 || a[len(a)-1] != '"' || len(z) == 0 || z[0] != '"' {
			return errShape
		}
	}
	if uint64(len(b)) < holes {
		return errShape
	}
	s.flags, b = b[:holes], b[holes:]
	for i, f := range s.flags {
		if f&^(FlagNonEmpty|FlagCounted) != 0 {
			return errShape
		}
		if f&FlagCounted != 0 {
			if s.counted >= 0 {
				return errShape
			}
			s.counted = i
		}
	}
	n, k := binary.Uvarint(b)
	if k <= 0 || n > MaxBytes {
		return errShape
	}
	b = b[k:]
	for range n {
		tag, k := binary.Uvarint(b)
		if k <= 0 {
			return errShape
		}
		b = b[k:]
		if tag == 0 {
			l, rest, ok := cut(b)
			if !ok {
				return errShape
			}
			s.out, b = append(s.out, Lit(l)), rest
			continue
		}
		if tag > holes {
			return errShape
		}
		s.out = append(s.out, Hole(int(tag-1)))
	}
	if len(b) != 0 {
		return errShape
	}
	return nil
}

func cut(b []byte) (l, rest []byte, ok bool) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) {
		return nil, nil, false
	}
	return b[k : k+int(n)], b[k+int(n):], true
}

// Reset makes s match nothing, keeping its slices for reuse.
func (s *Shape) Reset() {
	s.in, s.flags, s.out, s.counted, s.ok = s.in[:0], nil, s.out[:0], -1, false
}

// Valid reports whether s holds a parsed shape.
func (s *Shape) Valid() bool { return s.ok }

// Clone copies s so that it no longer aliases the bytes Parse read
// (which the host's call buffers reuse): buf is the copy's storage,
// returned for reuse.
func (s *Shape) Clone(buf []byte) []byte {
	if !s.ok {
		return buf[:0]
	}
	n := 0
	for _, l := range s.in {
		n += len(l)
	}
	for _, p := range s.out {
		n += len(p.Lit)
	}
	n += len(s.flags)
	buf = buf[:0]
	if cap(buf) < n {
		buf = make([]byte, 0, n)
	}
	keep := func(b []byte) []byte {
		i := len(buf)
		buf = append(buf, b...)
		return buf[i:len(buf):len(buf)]
	}
	for i, l := range s.in {
		s.in[i] = keep(l)
	}
	s.flags = keep(s.flags)
	for i := range s.out {
		if s.out[i].Hole < 0 {
			s.out[i].Lit = keep(s.out[i].Lit)
		}
	}
	return buf
}

// Apply matches one event (its surrounding whitespace trimmed, as a
// plugin reads it) and appends its output to dst. ok is false, and dst
// unchanged, when the event does not match; n is the counted hole's
// decoded length (0 when none is counted).
func (s *Shape) Apply(dst, ev []byte) (out []byte, n int, ok bool) {
	if !s.ok {
		return dst, 0, false
	}
	ev = trim(ev)
	var holes [MaxHoles][2]int
	first := s.in[0]
	if len(ev) < len(first) || string(ev[:len(first)]) != string(first) {
		return dst, 0, false
	}
	i := len(first)
	for h := 1; h < len(s.in); h++ {
		end, dec, ok := canonical(ev, i)
		if !ok || end == i && s.flags[h-1]&FlagNonEmpty != 0 {
			return dst, 0, false
		}
		holes[h-1] = [2]int{i, end}
		if h-1 == s.counted {
			n = dec
		}
		l := s.in[h]
		if h == len(s.in)-1 {
			if string(ev[end:]) != string(l) {
				return dst, 0, false
			}
		} else if len(ev)-end < len(l) || string(ev[end:end+len(l)]) != string(l) {
			return dst, 0, false
		}
		i = end + len(l)
	}
	for _, p := range s.out {
		if p.Hole < 0 {
			dst = append(dst, p.Lit...)
		} else {
			dst = append(dst, ev[holes[p.Hole][0]:holes[p.Hole][1]]...)
		}
	}
	return dst, n, true
}

// ApplyList translates the leading events of list (an abi item list, as
// the host hands a fused stream call its batch) that match s, as the
// host's relay does: their output appended to dst, the rest of the list
// (from the first event that does not match), how many events matched,
// and their output estimate (sdk.OutputTokens of each counted hole's
// decoded length, as the plugin would have reported it).
func (s *Shape) ApplyList(dst, list []byte) (out, rest []byte, events, tokens int) {
	out = dst
	for len(list) > 0 {
		ev, next, ok, _ := abi.NextItem(list)
		if !ok {
			break // malformed: the plugin's call says so
		}
		o, n, ok := s.Apply(out, ev)
		if !ok {
			break
		}
		out, list = o, next
		events, tokens = events+1, tokens+sdk.OutputTokens(n)
	}
	return out, list, events, tokens
}

// canonical scans the string body that starts at ev[i] to its closing
// quote (end: its index) and reports whether it is in canonical form;
// dec is its decoded length in bytes.
func canonical(ev []byte, i int) (end, dec int, ok bool) {
	for i < len(ev) {
		c := ev[i]
		switch {
		case c == '"':
			return i, dec, true
		case c == '\\':
			if i+1 >= len(ev) {
				return 0, 0, false
			}
			switch ev[i+1] {
			case '"', '\\', 'n', 'r', 't':
			default:
				return 0, 0, false
			}
			i += 2
			dec++
		case c < 0x20:
			return 0, 0, false
		case c < utf8.RuneSelf:
			i++
			dec++
		default:
			r, size := utf8.DecodeRune(ev[i:])
			if r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029' {
				return 0, 0, false
			}
			i += size
			dec += size
		}
	}
	return 0, 0, false
}

func trim(b []byte) []byte {
	for len(b) > 0 && isSpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

// isSpace is bytes.TrimSpace's ASCII set (a plugin's events are trimmed
// with it; a non-ASCII space cannot start or end a JSON event).
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}
