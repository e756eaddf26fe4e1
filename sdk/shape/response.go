package shape

import (
	"bytes"
	"encoding/binary"
)

// Response shapes (ABI 2.11, abi.MetaResponseShape): what a fused
// response call may tell the host about the next answers of the same
// form, so that the host translates them without calling the plugin.
//
// A non-streamed answer of an engine is, from one request to the next, the
// same bytes around a few values: vLLM's chat.completion repeats every
// key and most values and differs in its id, created, content and token
// counts. The plugin's translation of such an answer is the same text
// around the same content and counts, and the gateway's own id and
// created. A call that has just translated one may leave the host that
// rule, as a stream call leaves a Shape, with three additions:
//
//   - integer holes (FlagInt): a JSON integer in canonical form, "0" or a
//     digit 1-9 and at most 17 more digits (8 for a usage hole, so below
//     2^31), which FlagNonEmpty makes non-zero. FlagPrompt and FlagCompletion name the
//     holes whose values are the answer's usage (prompt and completion
//     tokens; at most one of each);
//   - denied strings: byte strings no string hole may contain (vLLM's
//     think tags, which send the answer down another path);
//   - output parts that are the call's metadata (PartID, PartCreated):
//     the gateway's id and created, which change with every request, and
//     which the host writes only when they need no JSON escape.
//
// The host keeps a response shape for the metadata the call had but for
// id and created (route, kind, model, include_usage, echo) and applies it
// to the next answer under the same metadata. A plugin that leaves one
// promises that an answer matching it translates to exactly the output
// with its parts filled, and that the call's result metadata is the one
// of the call that left it but for the usage (the flagged holes, with no
// reasoning or cached tokens) and the output estimate (sdk.OutputTokens
// of the counted hole's decoded length, or none). The conformance check
// (core/pluginhost/conformance) holds it to that on its response goldens
// and on answers made from them with other hole values.
//
// Wire form (the meta value): version byte 2; a uvarint count of holes (1
// to MaxHoles); the input's literals, holes+1 of them, each a uvarint
// length and its bytes; a byte of flags per hole; a uvarint count of
// denied strings (at most MaxDeny), each a uvarint length (1 to 64) and
// its bytes; then the output's parts, a uvarint count and, for each, a
// uvarint tag: 0 for a literal (a uvarint length and its bytes), k in 1
// to holes for hole k-1, holes+1 for PartID, holes+2 for PartCreated.

// Response hole flags (besides FlagNonEmpty and FlagCounted).
const (
	// FlagInt: the hole holds a JSON integer in canonical form, not a
	// string; its literals are not quotes but any bytes other than
	// digits, a sign, a point or an exponent next to it.
	FlagInt byte = 1 << 2
	// FlagPrompt: the integer hole is the answer's prompt tokens.
	FlagPrompt byte = 1 << 3
	// FlagCompletion: the integer hole is its completion tokens.
	FlagCompletion byte = 1 << 4
)

// Output parts of a response shape that stand for the call's metadata.
const (
	PartID      = -2 // abi.MetaID, as a JSON string's body
	PartCreated = -3 // abi.MetaCreated, a decimal integer
)

// MaxDeny bounds a response shape's denied strings.
const (
	MaxDeny       = 4
	maxDenyLen    = 64
	versionAnswer = 2
	maxIntDigits  = 9  // a usage hole's: below 2^31, as plugins clamp counts
	maxLongDigits = 18 // any other integer hole's (a Unix time): below 2^63
)

// Meta is an output part standing for the call's metadata (PartID or
// PartCreated).
func Meta(which int) Part { return Part{Hole: which} }

// AppendResponse encodes a response shape: in is the input's literals
// (one more than the holes), flags one byte per hole, deny the strings no
// string hole may hold, out the output's parts. It reports an error, and
// leaves dst as it was, for a shape ParseResponse would refuse.
func AppendResponse(dst []byte, in [][]byte, flags []byte, deny [][]byte, out []Part) ([]byte, error) {
	if !validResponse(in, flags, deny, out) {
		return dst, errShape
	}
	n := len(dst)
	holes := len(in) - 1
	dst = append(dst, versionAnswer)
	dst = binary.AppendUvarint(dst, uint64(holes))
	for _, l := range in {
		dst = binary.AppendUvarint(dst, uint64(len(l)))
		dst = append(dst, l...)
	}
	dst = append(dst, flags...)
	dst = binary.AppendUvarint(dst, uint64(len(deny)))
	for _, d := range deny {
		dst = binary.AppendUvarint(dst, uint64(len(d)))
		dst = append(dst, d...)
	}
	dst = binary.AppendUvarint(dst, uint64(len(out)))
	for _, p := range out {
		switch {
		case p.Hole == -1:
			dst = binary.AppendUvarint(dst, 0)
			dst = binary.AppendUvarint(dst, uint64(len(p.Lit)))
			dst = append(dst, p.Lit...)
		case p.Hole == PartID:
			dst = binary.AppendUvarint(dst, uint64(holes)+1)
		case p.Hole == PartCreated:
			dst = binary.AppendUvarint(dst, uint64(holes)+2)
		default:
			dst = binary.AppendUvarint(dst, uint64(p.Hole)+1)
		}
	}
	if len(dst)-n > MaxBytes {
		return dst[:n], errShape
	}
	return dst, nil
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// numberByte reports whether c can continue a JSON number.
func numberByte(c byte) bool {
	return isDigit(c) || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'
}

// validResponse is ParseResponse's rules for a shape's parts.
func validResponse(in [][]byte, flags []byte, deny [][]byte, out []Part) bool {
	holes := len(in) - 1
	if holes < 1 || holes > MaxHoles || len(flags) != holes || len(deny) > MaxDeny {
		return false
	}
	var counted, prompt, completion bool
	for i, f := range flags {
		if f&^(FlagNonEmpty|FlagCounted|FlagInt|FlagPrompt|FlagCompletion) != 0 {
			return false
		}
		a, z := in[i], in[i+1]
		if len(a) == 0 || len(z) == 0 {
			return false
		}
		if f&FlagInt != 0 {
			if f&FlagCounted != 0 || numberByte(a[len(a)-1]) || numberByte(z[0]) || a[len(a)-1] == '"' || z[0] == '"' {
				return false
			}
		} else if f&(FlagPrompt|FlagCompletion) != 0 || a[len(a)-1] != '"' || z[0] != '"' {
			return false
		}
		for _, seen := range [...]struct {
			flag byte
			seen *bool
		}{{FlagCounted, &counted}, {FlagPrompt, &prompt}, {FlagCompletion, &completion}} {
			if f&seen.flag != 0 {
				if *seen.seen {
					return false
				}
				*seen.seen = true
			}
		}
		if f&FlagPrompt != 0 && f&FlagCompletion != 0 {
			return false
		}
	}
	for _, d := range deny {
		if len(d) == 0 || len(d) > maxDenyLen {
			return false
		}
	}
	for _, p := range out {
		if p.Hole >= holes || p.Hole < PartCreated {
			return false
		}
	}
	return true
}

// Response is a parsed response shape. The zero Response matches nothing.
// Unlike Shape it owns its bytes: ParseResponse copies them, so that the
// host can keep it across requests.
type Response struct {
	in    [][]byte
	flags []byte
	deny  [][]byte
	out   []Part
	ok    bool
}

// ParseResponse reads an encoded response shape into a new Response.
func ParseResponse(b []byte) (*Response, error) {
	if len(b) == 0 || len(b) > MaxBytes || b[0] != versionAnswer {
		return nil, errShape
	}
	b = bytes.Clone(b) // the parts alias this copy, not the call buffers
	r := &Response{}
	holes, k := binary.Uvarint(b[1:])
	if k <= 0 || holes < 1 || holes > MaxHoles {
		return nil, errShape
	}
	b = b[1+k:]
	for range holes + 1 {
		l, rest, ok := cut(b)
		if !ok {
			return nil, errShape
		}
		r.in, b = append(r.in, l), rest
	}
	if uint64(len(b)) < holes {
		return nil, errShape
	}
	r.flags, b = b[:holes], b[holes:]
	nd, k := binary.Uvarint(b)
	if k <= 0 || nd > MaxDeny {
		return nil, errShape
	}
	b = b[k:]
	for range nd {
		d, rest, ok := cut(b)
		if !ok {
			return nil, errShape
		}
		r.deny, b = append(r.deny, d), rest
	}
	n, k := binary.Uvarint(b)
	if k <= 0 || n > MaxBytes {
		return nil, errShape
	}
	b = b[k:]
	for range n {
		tag, k := binary.Uvarint(b)
		if k <= 0 {
			return nil, errShape
		}
		b = b[k:]
		switch {
		case tag == 0:
			l, rest, ok := cut(b)
			if !ok {
				return nil, errShape
			}
			r.out, b = append(r.out, Lit(l)), rest
		case tag <= holes:
			r.out = append(r.out, Hole(int(tag-1)))
		case tag == holes+1:
			r.out = append(r.out, Meta(PartID))
		case tag == holes+2:
			r.out = append(r.out, Meta(PartCreated))
		default:
			return nil, errShape
		}
	}
	if len(b) != 0 || !validResponse(r.in, r.flags, r.deny, r.out) {
		return nil, errShape
	}
	r.ok = true
	return r, nil
}

// Report is what a matched answer tells the host besides its output.
type Report struct {
	// Usage: whether the shape has a prompt or a completion hole, and
	// their values.
	HasUsage           bool
	Prompt, Completion int
	// Counted is the counted hole's decoded length (Counted < 0: the
	// shape has none).
	Counted int
}

// Apply matches one answer (all of its bytes, whitespace included) and
// appends its output to dst, with id and created (the call's metadata)
// for the PartID and PartCreated parts. ok is false, and dst unchanged,
// when the answer does not match or id or created would need an escape
// (id: printable ASCII but '"' and '\'; created: digits, an optional '-').
func (r *Response) Apply(dst, body, id, created []byte) (out []byte, rep Report, ok bool) {
	if r == nil || !r.ok || !plainID(id) || !plainInt(created) {
		return dst, rep, false
	}
	var holes [MaxHoles][2]int
	var vals [MaxHoles]int
	rep.Counted = -1
	first := r.in[0]
	if len(body) < len(first) || string(body[:len(first)]) != string(first) {
		return dst, rep, false
	}
	i := len(first)
	for h := 1; h < len(r.in); h++ {
		f := r.flags[h-1]
		var end int
		if f&FlagInt != 0 {
			max := maxIntDigits
			if f&(FlagPrompt|FlagCompletion) == 0 {
				max = maxLongDigits
			}
			v, e, ok := intAt(body, i, max)
			if !ok || v == 0 && f&FlagNonEmpty != 0 {
				return dst, rep, false
			}
			end, vals[h-1] = e, v
		} else {
			e, dec, ok := canonical(body, i)
			if !ok || e == i && f&FlagNonEmpty != 0 || r.denied(body[i:e]) {
				return dst, rep, false
			}
			end = e
			if f&FlagCounted != 0 {
				rep.Counted = dec
			}
		}
		holes[h-1] = [2]int{i, end}
		l := r.in[h]
		if h == len(r.in)-1 {
			if string(body[end:]) != string(l) {
				return dst, rep, false
			}
		} else if len(body)-end < len(l) || string(body[end:end+len(l)]) != string(l) {
			return dst, rep, false
		}
		i = end + len(l)
	}
	for h, f := range r.flags {
		switch {
		case f&FlagPrompt != 0:
			rep.HasUsage, rep.Prompt = true, vals[h]
		case f&FlagCompletion != 0:
			rep.HasUsage, rep.Completion = true, vals[h]
		}
	}
	for _, p := range r.out {
		switch {
		case p.Hole == -1:
			dst = append(dst, p.Lit...)
		case p.Hole == PartID:
			dst = append(dst, id...)
		case p.Hole == PartCreated:
			dst = append(dst, created...)
		default:
			dst = append(dst, body[holes[p.Hole][0]:holes[p.Hole][1]]...)
		}
	}
	return dst, rep, true
}

func (r *Response) denied(s []byte) bool {
	for _, d := range r.deny {
		if bytes.Contains(s, d) {
			return true
		}
	}
	return false
}

// intAt reads the canonical integer at b[i:]: its value and end.
func intAt(b []byte, i, max int) (v, end int, ok bool) {
	j := i
	for j < len(b) && isDigit(b[j]) {
		v = v*10 + int(b[j]-'0')
		j++
		if j-i > max {
			return 0, 0, false
		}
	}
	if j == i || b[i] == '0' && j-i > 1 {
		return 0, 0, false
	}
	return v, j, true
}

// plainID reports whether id is a JSON string's body as written, with
// nothing to escape.
func plainID(id []byte) bool {
	for _, c := range id {
		if c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// plainInt reports whether b is a decimal integer as strconv writes one.
func plainInt(b []byte) bool {
	if len(b) > 0 && b[0] == '-' {
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 1 && b[0] == '0' {
		return false
	}
	for _, c := range b {
		if !isDigit(c) {
			return false
		}
	}
	return true
}
